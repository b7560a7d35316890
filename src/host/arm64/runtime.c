/* SPDX-License-Identifier: MIT */
/*
 * arm64 host runtime: the pieces of site blocks (host/pieces.h, which
 * src/host/tramp.c lays out) from the templates in tramp.S, ucontext
 * conversion, and the return address of a probed call in x30.
 *
 * A region is one word when the JUMP patch is a `b`, three (or more,
 * merged) when it is the long form, `adrp; add; br` through a free
 * register (np_region.jump_via). The jump back to the region's end is a
 * `b`, or `adrp; add; br` through a register free there
 * (np_region.scratch.resume, np_host_tramp_scratch).
 *
 * Its pieces: save (full, or the caller-saved registers only for
 * NP_PROBE_ARGS_ONLY at an entry), the FP/SIMD state, the inline hit path
 * (guard, version check, a counter bump and a direct call per probe,
 * return arming through np__shadow_arm), restore; no return path (the
 * shared return trampoline runs the return handlers). A block's tail is
 * a `b` over its literal pool: the 64-bit values its `ldr` literals load
 * (site, handlers, data, counter offsets), one entry per distinct value.
 */
#include "core/nolibc.h"
#include "host/host.h"
#include "host/layout.h"
#include "host/pieces.h"

#include <errno.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/ucontext.h>

#ifndef PROT_BTI
#define PROT_BTI 0x10
#endif

#define TPL(name) extern const uint8_t name##_begin[], name##_end[]

TPL(np_a64_save_full);
TPL(np_a64_save_args);
TPL(np_a64_fp_save);
TPL(np_a64_fp_restore);
TPL(np_a64_enter);
TPL(np_a64_handler);
TPL(np_a64_count);
TPL(np_a64_arm);
TPL(np_a64_leave);
TPL(np_a64_restore_full);
TPL(np_a64_restore_args);
extern const uint8_t np_a64_save_full_pc[], np_a64_save_full_site[], np_a64_save_full_kind[];
extern const uint8_t np_a64_save_args_pc[], np_a64_save_args_site[], np_a64_save_args_kind[];
extern const uint8_t np_a64_enter_tls[], np_a64_enter_site[], np_a64_enter_version[];
extern const uint8_t np_a64_enter_slow[], np_a64_enter_done[];
extern const uint8_t np_a64_handler_tls[], np_a64_handler_hits[], np_a64_handler_data[];
extern const uint8_t np_a64_handler_fn[], np_a64_count_tls[], np_a64_count_hits[];
extern const uint8_t np_a64_arm_fn[], np_a64_leave_tls[];
extern const uint8_t np_a64_restore_full_redirect[], np_a64_restore_args_redirect[];
extern const uint8_t np_a64_redirect_fp[], np_a64_redirect[], np_a64_redirect_args_fp[];
extern const uint8_t np_a64_redirect_args[], np_a64_redirect_brk[];
extern const uint8_t np_a64_ret_tramp[], np_a64_ret_tramp_fpu[];

#define SP 31
#define LR 30
#define NZCV_MASK 0xf0000000u

/* The initial-exec offset of the thread-block pointer from tpidr_el0, as
 * the TLS slots of tramp.S encode it: add #hi, lsl #12; ldr [#lo]. */
static uint64_t tls_off;

/* --- the pieces of a site block (host/pieces.h) ---------------------------- */

enum slot_kind {
	LIT,    /* ldr Xt, literal: value goes to the pool */
	TLS,    /* add + ldr: value is the TLS offset */
	BRANCH, /* b: value is the point of the block it goes to */
};

#define L(sym, v) {sym, LIT, (uint64_t)(v)}
#define T(sym) {sym, TLS, tls_off}

#define POOL_MAX (NP_BLOCK_PIECES * NP_PIECE_SLOTS)

/* The block's literals, one entry per distinct value, after its code. */
static struct pool {
	size_t start; /* offset of the pool in the block */
	unsigned n;
	uint64_t v[POOL_MAX];
} pool; /* engine lock held */

static unsigned pool_index(struct pool *p, uint64_t value)
{
	for (unsigned i = 0; i < p->n; i++)
		if (p->v[i] == value)
			return i;
	p->v[p->n] = value;
	return p->n++;
}

static uint32_t get32(const uint8_t *at)
{
	uint32_t w;
	memcpy(&w, at, 4);
	return w;
}

static void put32(uint8_t *at, uint32_t w)
{
	memcpy(at, &w, 4);
}

static void patch_slot(uint8_t *insn, const struct np_slot *s, size_t off, const struct np_emit *e)
{
	uint32_t w = get32(insn);
	if (s->kind == LIT) {
		size_t entry = pool.start + 8 * pool_index(&pool, s->value);
		put32(insn, (w & ~(0x7ffffu << 5)) | (uint32_t)((entry - off) / 4) << 5);
	} else if (s->kind == TLS) {
		put32(insn, (w & ~(0xfffu << 10)) | (uint32_t)(s->value >> 12) << 10);
		uint32_t ldr = get32(insn + 4);
		put32(insn + 4, (ldr & ~(0xfffu << 10)) | (uint32_t)((s->value & 0xfff) / 8) << 10);
	} else {
		size_t to = e->point[s->value];
		put32(insn, (w & ~0x3ffffffu) | (uint32_t)((to - off) / 4 & 0x3ffffff));
	}
}

#define B_OVER_POOL 0x14000000u /* b +0 */

/* After the code, a `b` over the pool, the pool 8-byte aligned. Measuring
 * (out == NULL), an upper bound: the pool counted without sharing. */
static size_t pool_tail(uint8_t *out, const struct np_block *b, const struct np_emit *e)
{
	size_t code = e->code;
	if (!out) {
		pool.n = 0;
		pool.start = code + 4;
		pool.start += (e->at + pool.start) & 7 ? 4 : 0; /* 8-byte aligned literals */
		unsigned lits = 0;
		for (int i = 0; i < b->n; i++)
			for (unsigned k = 0; k < NP_PIECE_SLOTS && b->v[i].slot[k].at; k++)
				lits += b->v[i].slot[k].kind == LIT;
		return 8 + 8 * lits;
	}
	size_t end = pool.start + 8 * pool.n;
	put32(out, B_OVER_POOL | (uint32_t)((end - code) / 4));
	memset(out + 4, 0, pool.start - code - 4);
	memcpy(out + pool.start - code, pool.v, 8 * pool.n);
	return end - code;
}

static uint64_t hits_off(uint32_t slot)
{
	return offsetof(struct np_thread, hits) + slot * sizeof(uint64_t);
}

/* The caller-saved registers only, asked for at an entry. */
static bool lean(const struct np_block_site *s)
{
	return s->entry && s->site->args_only;
}

static void add_save(struct np_block *b, const struct np_block_site *s)
{
	const struct np_site *site = s->site;
	bool args = lean(s);
	uint64_t kind = NP_CTX_ENTRY | (args ? NP_CTX_CAPTURE_ARGS : 0) | /* redirect: 0 */
			(s->fpu ? 0 : NP_CTX_NO_FPU);
	if (args)
		np_block_add(b, NP_PIECE(np_a64_save_args, L(np_a64_save_args_pc, site->addr),
					 L(np_a64_save_args_site, site),
					 L(np_a64_save_args_kind, kind)));
	else
		np_block_add(b, NP_PIECE(np_a64_save_full, L(np_a64_save_full_pc, site->addr),
					 L(np_a64_save_full_site, site),
					 L(np_a64_save_full_kind, kind)));
}

static void add_restore(struct np_block *b, const struct np_block_site *s)
{
	if (lean(s))
		np_block_add(b, NP_PIECE(np_a64_restore_args,
					 L(np_a64_restore_args_redirect,
					   s->fpu ? np_a64_redirect_args_fp : np_a64_redirect_args)));
	else
		np_block_add(b, NP_PIECE(np_a64_restore_full,
					 L(np_a64_restore_full_redirect,
					   s->fpu ? np_a64_redirect_fp : np_a64_redirect)));
}

/* No return path in the block: ARM calls np__shadow_arm, which points x30
 * at the shared return trampoline. */
static void add_piece(struct np_block *b, enum np_piece_kind k, const struct np_block_site *s)
{
	const struct np_site *site = s->site;
	const struct np_probe *p = s->probe;
	switch (k) {
	case NP_PIECE_SAVE:
		add_save(b, s);
		break;
	case NP_PIECE_VEC_SAVE:
		np_block_add(b, NP_PIECE(np_a64_fp_save));
		break;
	case NP_PIECE_ENTER:
		np_block_add(b, NP_PIECE(np_a64_enter, T(np_a64_enter_tls), L(np_a64_enter_site, site),
					 L(np_a64_enter_version, site->version),
					 L(np_a64_enter_slow, &np__dispatch),
					 {np_a64_enter_done, BRANCH, NP_AT_CALLS_END}));
		break;
	case NP_PIECE_HANDLER:
		np_block_add(b, NP_PIECE(np_a64_handler, T(np_a64_handler_tls),
					 L(np_a64_handler_hits, hits_off(p->slot)),
					 L(np_a64_handler_data, p->data),
					 L(np_a64_handler_fn, p->on_entry)));
		break;
	case NP_PIECE_COUNT:
		np_block_add(b, NP_PIECE(np_a64_count, T(np_a64_count_tls),
					 L(np_a64_count_hits, hits_off(p->slot))));
		break;
	case NP_PIECE_ARM:
		np_block_add(b, NP_PIECE(np_a64_arm, L(np_a64_arm_fn, &np__shadow_arm)));
		break;
	case NP_PIECE_LEAVE:
		np_block_add(b, NP_PIECE(np_a64_leave, T(np_a64_leave_tls)));
		break;
	case NP_PIECE_VEC_RESTORE:
		np_block_add(b, NP_PIECE(np_a64_fp_restore));
		break;
	case NP_PIECE_RESTORE:
		add_restore(b, s);
		break;
	default: /* the return path: the shared return trampoline */
		break;
	}
}

const struct np_host_pieces np_host_pieces = {
	.add = add_piece,
	.patch = patch_slot,
	.tail = pool_tail,
	.reloc_max = 32, /* the longest relocation: literal load through a veneer */
	.back_max = 16,  /* the branch back */
};

/* The registers the trampoline may jump back or far through. None into
 * code mapped with BTI guards: a br must land on a bti there, and the
 * words after a displaced one are not (the region's JUMP fails with
 * -ERANGE and the probe falls back to TRAP). */
struct np_reloc_scratch np_host_tramp_scratch(const struct np_region *r)
{
	if (np_host_code_prot(r->start) & PROT_BTI)
		return (struct np_reloc_scratch){0, 0};
	return r->scratch;
}

/* --- registers ------------------------------------------------------------ */

const struct np_uc_shape np_host_uc_shape = NP_UC_SHAPE(uc_mcontext.pc, uc_mcontext.sp);

void np_host_regs_from_uc(struct np_regs *regs, const void *ucv)
{
	const ucontext_t *uc = ucv;
	np_zero(regs, sizeof(*regs)); /* the hit path: no libc memset */
	for (int i = 0; i < 31; i++)
		regs->gpr[i] = uc->uc_mcontext.regs[i];
	regs->gpr[SP] = uc->uc_mcontext.sp;
	regs->pc = uc->uc_mcontext.pc;
	regs->flags = uc->uc_mcontext.pstate;
}

/* Only NZCV of PSTATE is the program's to change: the kernel refuses a
 * sigreturn whose other PSTATE bits (mode, masks) are not user ones. */
void np_host_regs_to_uc(const struct np_regs *regs, void *ucv)
{
	ucontext_t *uc = ucv;
	for (int i = 0; i < 31; i++)
		uc->uc_mcontext.regs[i] = regs->gpr[i];
	uc->uc_mcontext.sp = regs->gpr[SP];
	uc->uc_mcontext.pc = regs->pc;
	uc->uc_mcontext.pstate = (uc->uc_mcontext.pstate & ~(uint64_t)NZCV_MASK) |
				 (regs->flags & NZCV_MASK);
}

/* The redirect routine's breakpoint: sp points at the ctx the handlers
 * changed (tramp.S). Its FP state is already loaded. */
bool np_host_trap_own(void *ucv)
{
	ucontext_t *uc = ucv;
	if (uc->uc_mcontext.pc != (uint64_t)(uintptr_t)np_a64_redirect_brk)
		return false;
	const struct np_ctx *ctx = (const struct np_ctx *)(uintptr_t)uc->uc_mcontext.sp;
	np_host_regs_to_uc(&ctx->regs, uc);
	return true;
}

/* --- return probes: the return address is x30 ------------------------------ */

/*
 * Pointer authentication (pac-ret). After paciasp/pacibsp, x30 holds the
 * return address signed with key A/B and the entry sp as modifier, and the
 * function authenticates it before it returns (autiasp, retaa). An entry
 * probe there (moved past the pad, probe.c) reads x30 stripped, and puts
 * the return trampoline in x30 signed the same way, so that the function's
 * own authentication yields the trampoline. The instructions are in the
 * hint space: a CPU without pointer authentication runs them as nops, as
 * it does the program's.
 */
static uint64_t pac_strip(uint64_t v)
{
	uint64_t out;
	__asm__("mov x30, %1\n\thint #7\n\tmov %0, x30" /* xpaclri */
		: "=r"(out)
		: "r"(v)
		: "x30");
	return out;
}

static uint64_t pac_sign(uint64_t ptr, uint64_t modifier, unsigned pad)
{
	register uint64_t x17 __asm__("x17") = ptr;
	register uint64_t x16 __asm__("x16") = modifier;
	if (pad == NP_PAD_PAC_A)
		__asm__("hint #8" : "+r"(x17) : "r"(x16)); /* pacia1716 */
	else if (pad == NP_PAD_PAC_B)
		__asm__("hint #10" : "+r"(x17) : "r"(x16)); /* pacib1716 */
	return x17;
}

/* Unwinders authenticate (or strip) what a pac-ret frame spilled, with
 * the frame's entry sp: the real return address goes back signed. */
uint64_t np_host_ret_sign(uint64_t ret, uint64_t slot, unsigned pac)
{
	return pac_sign(ret, slot, pac);
}

/* The frame is known by its entry sp, which the return leaves unchanged. */
uint64_t np_host_ret_slot(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[SP];
}

uint64_t np_host_ret_get(const struct np_ctx *ctx)
{
	return pac_strip(ctx->regs.gpr[LR]);
}

void np_host_ret_set(struct np_ctx *ctx, uint64_t value)
{
	unsigned pad = ctx->site ? ctx->site->entry_pad : NP_PAD_NONE;
	ctx->regs.gpr[LR] = pac_sign(value, ctx->regs.gpr[SP], pad);
}

uint64_t np_host_ret_key(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[SP];
}

uint64_t np_host_ret_trampoline(bool fpu)
{
	return (uint64_t)(uintptr_t)(fpu ? np_a64_ret_tramp_fpu : np_a64_ret_tramp);
}

/* A word the unwinder found may be signed (a pac-ret function spilled x30). */
uint64_t np_host_ret_strip(uint64_t word)
{
	return pac_strip(word);
}

void np_host_return_now(struct np_ctx *ctx, uint64_t value)
{
	ctx->regs.gpr[0] = value;
	ctx->regs.pc = pac_strip(ctx->regs.gpr[LR]);
	ctx->redirect = 1;
}

bool np_host_ret_in_memory(void)
{
	return false;
}

/* Registers the args-only save leaves out (tramp.S): x19-x29. */
bool np_host_reg_captured(uint32_t kind, int reg)
{
	if (kind & NP_CTX_CAPTURE_ARGS)
		return reg <= 18 || reg == LR || reg == SP;
	return true;
}

/* --- code ----------------------------------------------------------------- */

/* The Arm ARM's promise about code modified while other threads run it
 * (B2.2.5) holds for one single-copy-atomic 32-bit store, which a write
 * through /proc/self/mem does not guarantee (and, under qemu-user, would
 * bypass qemu's invalidation of the code it translated). */
bool np_host_patch_in_place(void)
{
	return true;
}

/* Code of a module marked BTI is mapped guarded (PROT_BTI) when the CPU
 * has BTI: by the kernel for the program and its interpreter, by the
 * dynamic loader for libraries. /proc/self/maps does not show it, and an
 * mprotect that leaves it out would turn the checks off for the page. */
#ifndef HWCAP2_BTI
#define HWCAP2_BTI (1 << 17)
#endif

int np_host_code_prot(uint64_t addr)
{
	if (!(getauxval(AT_HWCAP2) & HWCAP2_BTI))
		return 0;
	return np_module_features(addr) & 1 /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
		       ? PROT_BTI
		       : 0;
}

/* Clean the data cache and invalidate the instruction cache to the point
 * of unification for the words written; np_sync_cores() then makes every
 * core discard what it fetched before (membarrier SYNC_CORE). */
void np_host_code_written(uint64_t addr, size_t len)
{
	__builtin___clear_cache((char *)(uintptr_t)addr, (char *)(uintptr_t)(addr + len));
}

int np_host_init(void)
{
	uint64_t tp;
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	tls_off = (uint64_t)(uintptr_t)np_thread_tls_slot() - tp;
	/* what add #imm12, lsl #12 + ldr [#imm12 * 8] reach: initial-exec
	 * offsets are a few KiB */
	if (tls_off >= (1u << 24) || tls_off & 7) {
		np_logf(NP_LOG_ERROR, "thread pointer offset 0x%llx out of the trampolines' reach",
			(unsigned long long)tls_off);
		return -ERANGE;
	}
	return 0;
}

long np_host_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}

/* SPDX-License-Identifier: MIT */
/*
 * arm64 host runtime: builds region trampolines from the template in
 * tramp.S, converts between ucontext and struct np_regs, and keeps the
 * return address of a probed call in x30.
 *
 * A region is one word (the JUMP patch is one `b`), so a trampoline is
 *   [site block: save, call np__dispatch, restore]   if a probe sits there
 *   the word, relocated, ending with a `b` back to the next word.
 * The out-of-line copy of a TRAP region is the relocated word alone.
 *
 * Unlike x86-64, the hit path calls np__dispatch for every hit: there is
 * no inline fast path yet (see docs/arm64.md).
 */
#include "core/internal.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>

extern const uint8_t np_a64_site_begin[], np_a64_site_end[];
extern const uint8_t np_a64_site_pc[], np_a64_site_site[], np_a64_site_kind[];
extern const uint8_t np_a64_site_fn[], np_a64_site_redirect[];
extern const uint8_t np_a64_redirect[], np_a64_redirect_brk[], np_a64_ret_tramp[];

_Static_assert(offsetof(struct np_ctx, regs) == NP_CTX_REGS_OFF, "ctx layout");
_Static_assert(offsetof(struct np_ctx, redirect) == 12, "ctx layout");
_Static_assert(sizeof(struct np_ctx) == 288, "ctx layout used by tramp.S");

#define SP 31
#define LR 30
#define NZCV_MASK 0xf0000000u

static void put64(uint8_t *block, const uint8_t *slot, uint64_t value)
{
	memcpy(block + (slot - np_a64_site_begin), &value, sizeof(value));
}

/* The block that runs a site's handlers; out == NULL measures it. */
static size_t site_block(uint8_t *out, const struct np_site *site)
{
	size_t len = (size_t)(np_a64_site_end - np_a64_site_begin);
	if (!out)
		return len;
	memcpy(out, np_a64_site_begin, len);
	put64(out, np_a64_site_pc, site->addr);
	put64(out, np_a64_site_site, (uint64_t)(uintptr_t)site);
	put64(out, np_a64_site_kind, NP_CTX_ENTRY); /* redirect, the high half: 0 */
	put64(out, np_a64_site_fn, (uint64_t)(uintptr_t)&np__dispatch);
	put64(out, np_a64_site_redirect, (uint64_t)(uintptr_t)np_a64_redirect);
	return len;
}

size_t np_host_tramp_size(const struct np_region *r)
{
	size_t len = 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP)
			len += site_block(NULL, r->sites[i]);
		len += 32; /* the longest relocation: literal load through a veneer */
	}
	return len + 16; /* the branch back */
}

int np_host_build_tramp(struct np_region *r, uint8_t *buf, size_t cap, uint64_t at)
{
	size_t pos = 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		const struct np_insn *in = &r->insn[i];
		r->tramp_off[i] = (uint32_t)pos;
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP) {
			if (pos + site_block(NULL, r->sites[i]) > cap)
				return -ENOSPC;
			pos += site_block(buf + pos, r->sites[i]);
		}
		struct np_reloc rl = {
			.src = r->orig + (in->pc - r->start),
			.src_len = in->len,
			.src_pc = in->pc,
			.dst = buf + pos,
			.dst_cap = cap - pos,
			.dst_pc = at + pos,
			.resume_pc = i + 1 == r->ninsn ? r->end : 0,
		};
		int n = np_host_isa->relocate(&rl);
		if (n < 0)
			return n;
		pos += (size_t)n;
	}
	return (int)pos;
}

/* --- registers ------------------------------------------------------------ */

void np_host_regs_from_uc(struct np_regs *regs, const void *ucv)
{
	const ucontext_t *uc = ucv;
	memset(regs, 0, sizeof(*regs));
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

/* The frame is known by its entry sp, which the return leaves unchanged. */
uint64_t np_host_ret_slot(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[SP];
}

uint64_t np_host_ret_get(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[LR];
}

void np_host_ret_set(struct np_ctx *ctx, uint64_t value)
{
	ctx->regs.gpr[LR] = value;
}

uint64_t np_host_ret_key(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[SP];
}

uint64_t np_host_ret_trampoline(bool fpu)
{
	(void)fpu; /* the one return trampoline saves the FP/SIMD state */
	return (uint64_t)(uintptr_t)np_a64_ret_tramp;
}

bool np_host_is_ret_trampoline(uint64_t addr)
{
	return addr == (uint64_t)(uintptr_t)np_a64_ret_tramp;
}

void np_host_return_now(struct np_ctx *ctx, uint64_t value)
{
	ctx->regs.gpr[0] = value;
	ctx->regs.pc = ctx->regs.gpr[LR];
	ctx->redirect = 1;
}

bool np_host_ret_in_memory(void)
{
	return false;
}

/* Every trampoline saves every register. */
bool np_host_reg_captured(uint32_t kind, int reg)
{
	(void)kind;
	(void)reg;
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

/* Clean the data cache and invalidate the instruction cache to the point
 * of unification for the words written; np_sync_cores() then makes every
 * core discard what it fetched before (membarrier SYNC_CORE). */
void np_host_code_written(uint64_t addr, size_t len)
{
	__builtin___clear_cache((char *)(uintptr_t)addr, (char *)(uintptr_t)(addr + len));
}

int np_host_init(void)
{
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

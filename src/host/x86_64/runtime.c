/* SPDX-License-Identifier: MIT */
/*
 * x86-64 host runtime: the pieces of site blocks (host/pieces.h, which
 * src/host/tramp.c lays out) from the templates in tramp.S, the shared
 * routines (redirect, return trampolines), ucontext conversion, and where
 * a function keeps its return address at entry.
 *
 * Its pieces: three saves (full, entry: red zone and flags dead, args:
 * the caller-saved registers only) with their restores, XSAVEC/XSAVE/
 * FXSAVE for the vector state, the inline hit path (guard, a direct call
 * or a counter bump per probe, inline shadow-stack arming), and the inline
 * return path after RET_CALL. Slots hold 4- and 8-byte immediates, rel32
 * branches and an address, to points of the block.
 */
#include "core/nolibc.h"
#include "host/host.h"
#include "host/layout.h"
#include "host/pieces.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ucontext.h>
#include <unistd.h>

#define TPL(name)                                                            \
	extern const uint8_t name##_begin[], name##_end[]

TPL(np_x86_save_full);
TPL(np_x86_save_entry);
TPL(np_x86_save_tail);
TPL(np_x86_xsave);
TPL(np_x86_xsavec);
TPL(np_x86_xrstor);
TPL(np_x86_fxsave);
TPL(np_x86_fxrstor);
TPL(np_x86_ret_tramp_fpu);
TPL(np_x86_ret_tramp_fx);
TPL(np_x86_ret_call);
TPL(np_x86_ret_save);
TPL(np_x86_ret_enter);
TPL(np_x86_ret_handler);
TPL(np_x86_ret_restore);
TPL(np_x86_restore_full);
TPL(np_x86_restore_entry);
TPL(np_x86_redirect);
TPL(np_x86_save_args);
TPL(np_x86_restore_args);
TPL(np_x86_ret_tramp);
TPL(np_x86_enter);
TPL(np_x86_handler);
TPL(np_x86_count);
TPL(np_x86_arm);
TPL(np_x86_leave);
extern const uint8_t np_x86_save_full_pc_imm[], np_x86_save_entry_pc_imm[];
extern const uint8_t np_x86_save_args_pc_imm[];
extern const uint8_t np_x86_save_tail_site_imm[], np_x86_save_tail_kind_imm[];
extern const uint8_t np_x86_restore_full_redirect_imm[], np_x86_restore_entry_redirect_imm[];
extern const uint8_t np_x86_restore_args_redirect_imm[];
extern const uint8_t np_x86_enter_tls[], np_x86_enter_site_imm[], np_x86_enter_version[];
extern const uint8_t np_x86_enter_slow_imm[], np_x86_enter_done_rel[];
extern const uint8_t np_x86_handler_tls[], np_x86_handler_hits[], np_x86_handler_data[];
extern const uint8_t np_x86_handler_fn[], np_x86_count_tls[], np_x86_count_hits[];
extern const uint8_t np_x86_arm_fn[], np_x86_arm_tls[], np_x86_arm_expect[], np_x86_leave_tls[];
extern const uint8_t np_x86_arm_flags[];
extern const uint8_t np_x86_ret_call_jz[], np_x86_ret_call_call[], np_x86_ret_save_site[];
extern const uint8_t np_x86_ret_enter_tls[], np_x86_ret_enter_site[], np_x86_ret_enter_version[];
extern const uint8_t np_x86_ret_enter_slow[], np_x86_ret_enter_done_rel[];
extern const uint8_t np_x86_ret_handler_data[], np_x86_ret_handler_fn[];
extern const uint8_t np_x86_redirect_noflags[];
extern const uint8_t np_x86_ret_tramp_fn_imm[], np_x86_ret_tramp_fpu_fn_imm[];
extern const uint8_t np_x86_ret_tramp_fx_fn_imm[];
extern const uint8_t np_x86_ret_tramp_fpu_size[];
extern const uint8_t np_x86_xsave_size[], np_x86_xsave_mask[], np_x86_xsavec_size[];
extern const uint8_t np_x86_xsavec_mask[], np_x86_xrstor_mask[];
extern const uint8_t np_x86_ret_tramp_fpu_mask[], np_x86_ret_tramp_fpu_mask2[];

/* The copies of the redirect routine: with rflags, and without (an entry or
 * a return, where the ABI says the flags are dead). */
__attribute__((visibility("hidden"))) uint64_t np_x86_redirect_ptr, np_x86_redirect_nf_ptr;
static uint64_t ret_tramp, ret_tramp_fpu;
static uint32_t xsave_size; /* 0: no XSAVE, use FXSAVE */
static uint32_t xsave_mask; /* x87, SSE, AVX, AVX-512: what XCR0 enables */
static bool have_xsavec;
static int32_t self_disp; /* %fs displacement of the thread-block pointer */


/* --- the pieces of a site block (host/pieces.h) ---------------------------- */

enum slot_kind {
	IMM32,  /* a 4-byte immediate */
	IMM64,  /* an 8-byte immediate */
	REL32,  /* a rel32 to a point of the block */
	ADDR64, /* a point's address, 0 when the block has no such point */
};

#define S8(sym, v) {sym, IMM64, (uint64_t)(v)}
#define S4(sym, v) {sym, IMM32, (uint64_t)(uint32_t)(v)}
#define REL(sym, point) {sym, REL32, point}
#define ADDR(sym, point) {sym, ADDR64, point}

static void patch_slot(uint8_t *insn, const struct np_slot *s, size_t off, const struct np_emit *e)
{
	uint64_t v = s->value;
	if (s->kind == REL32)
		v = e->point[v] - (off + 4);
	else if (s->kind == ADDR64)
		v = e->point[v] == NP_NO_POINT ? 0 : e->at + e->point[v];
	memcpy(insn, &v, s->kind == IMM32 || s->kind == REL32 ? 4 : 8);
}

static uint32_t hits_off(uint32_t slot)
{
	return (uint32_t)(offsetof(struct np_thread, hits) + slot * sizeof(uint64_t));
}

/* The lean save, of the caller-saved registers only: asked for, or at an
 * entry with no entry handler, where nothing reads the entry ctx but the
 * engine: the caller-saved registers are all the C slow path can clobber. */
static bool lean(const struct np_block_site *s)
{
	return s->entry && (s->site->args_only || !s->entry_handlers);
}

static void add_save(struct np_block *b, const struct np_block_site *s)
{
	const struct np_site *site = s->site;
	bool args = lean(s);
	if (args)
		np_block_add(b, NP_PIECE(np_x86_save_args, S8(np_x86_save_args_pc_imm, site->addr)));
	else if (s->entry)
		np_block_add(b, NP_PIECE(np_x86_save_entry, S8(np_x86_save_entry_pc_imm, site->addr)));
	else
		np_block_add(b, NP_PIECE(np_x86_save_full, S8(np_x86_save_full_pc_imm, site->addr)));
	np_block_add(b, NP_PIECE(np_x86_save_tail, S8(np_x86_save_tail_site_imm, site),
				 S8(np_x86_save_tail_kind_imm,
				    NP_CTX_ENTRY | (args ? NP_CTX_CAPTURE_ARGS : 0) |
					    (s->fpu ? 0 : NP_CTX_NO_FPU))));
}

static void add_restore(struct np_block *b, const struct np_block_site *s)
{
	if (lean(s))
		np_block_add(b, NP_PIECE(np_x86_restore_args,
					 S8(np_x86_restore_args_redirect_imm, np_x86_redirect_nf_ptr)));
	else if (s->entry)
		np_block_add(b, NP_PIECE(np_x86_restore_entry,
					 S8(np_x86_restore_entry_redirect_imm, np_x86_redirect_nf_ptr)));
	else
		np_block_add(b, NP_PIECE(np_x86_restore_full,
					 S8(np_x86_restore_full_redirect_imm, np_x86_redirect_ptr)));
}

/* The vector state: XSAVEC, XSAVE, or FXSAVE on CPUs without them. */
static void add_vector_save(struct np_block *b)
{
	if (xsave_size && have_xsavec)
		np_block_add(b, NP_PIECE(np_x86_xsavec, S4(np_x86_xsavec_size, xsave_size),
					 S4(np_x86_xsavec_mask, xsave_mask)));
	else if (xsave_size)
		np_block_add(b, NP_PIECE(np_x86_xsave, S4(np_x86_xsave_size, xsave_size),
					 S4(np_x86_xsave_mask, xsave_mask)));
	else
		np_block_add(b, NP_PIECE(np_x86_fxsave));
}

static void add_vector_restore(struct np_block *b)
{
	np_block_add(b, xsave_size ? NP_PIECE(np_x86_xrstor, S4(np_x86_xrstor_mask, xsave_mask))
				   : NP_PIECE(np_x86_fxrstor));
}

/* The inline hit path. With return handlers at an entry, the block ends
 * by calling the rest of the trampoline, the relocated function start
 * (RET_CALL), and holds that call's return point, the return path, whose
 * address ARM puts on the shadow stack. */
static void add_piece(struct np_block *b, enum np_piece_kind k, const struct np_block_site *s)
{
	const struct np_site *site = s->site;
	const struct np_probe *p = s->probe;
	switch (k) {
	case NP_PIECE_SAVE:
		add_save(b, s);
		break;
	case NP_PIECE_VEC_SAVE:
		add_vector_save(b);
		break;
	case NP_PIECE_ENTER:
		np_block_add(b, NP_PIECE(np_x86_enter, S4(np_x86_enter_tls, self_disp),
					 S8(np_x86_enter_site_imm, site),
					 S4(np_x86_enter_version, site->version),
					 S8(np_x86_enter_slow_imm, &np__dispatch),
					 REL(np_x86_enter_done_rel, NP_AT_CALLS_END)));
		break;
	case NP_PIECE_HANDLER:
		np_block_add(b, NP_PIECE(np_x86_handler, S4(np_x86_handler_tls, self_disp),
					 S4(np_x86_handler_hits, hits_off(p->slot)),
					 S8(np_x86_handler_data, p->data),
					 S8(np_x86_handler_fn, p->on_entry)));
		break;
	case NP_PIECE_COUNT:
		np_block_add(b, NP_PIECE(np_x86_count, S4(np_x86_count_tls, self_disp),
					 S4(np_x86_count_hits, hits_off(p->slot))));
		break;
	case NP_PIECE_ARM:
		np_block_add(b, NP_PIECE(np_x86_arm, S4(np_x86_arm_tls, self_disp),
					 ADDR(np_x86_arm_expect, NP_AT_RET_PATH),
					 S8(np_x86_arm_fn, &np__shadow_arm),
					 S4(np_x86_arm_flags, s->fpu ? NP_RET_FPU : 0)));
		break;
	case NP_PIECE_LEAVE:
		np_block_add(b, NP_PIECE(np_x86_leave, S4(np_x86_leave_tls, self_disp)));
		break;
	case NP_PIECE_VEC_RESTORE:
		add_vector_restore(b);
		break;
	case NP_PIECE_RESTORE:
		add_restore(b, s);
		break;
	case NP_PIECE_RET_CALL:
		np_block_add(b, NP_PIECE(np_x86_ret_call, REL(np_x86_ret_call_jz, NP_AT_END),
					 REL(np_x86_ret_call_call, NP_AT_END)));
		break;
	case NP_PIECE_RET_SAVE:
		np_block_add(b, NP_PIECE(np_x86_ret_save, S8(np_x86_ret_save_site, site)));
		break;
	case NP_PIECE_RET_ENTER:
		np_block_add(b, NP_PIECE(np_x86_ret_enter, S4(np_x86_ret_enter_tls, self_disp),
					 S8(np_x86_ret_enter_site, site),
					 S4(np_x86_ret_enter_version, site->version),
					 S8(np_x86_ret_enter_slow, &np__ret_dispatch),
					 REL(np_x86_ret_enter_done_rel, NP_AT_RET_CALLS_END)));
		break;
	case NP_PIECE_RET_HANDLER:
		np_block_add(b, NP_PIECE(np_x86_ret_handler, S8(np_x86_ret_handler_data, p->data),
					 S8(np_x86_ret_handler_fn, p->on_return)));
		break;
	case NP_PIECE_RET_RESTORE:
		np_block_add(b, NP_PIECE(np_x86_ret_restore));
		break;
	}
}

const struct np_host_pieces np_host_pieces = {
	.add = add_piece,
	.patch = patch_slot,
	.reloc_max = 64, /* a relocated instruction grows to at most ~30 bytes */
	.back_max = 32,  /* the jump back, generously */
};

/* --- registers ------------------------------------------------------------ */

const struct np_uc_shape np_host_uc_shape = NP_UC_SHAPE(uc_mcontext.gregs[REG_RIP], uc_mcontext.gregs[REG_RSP]);

/* gregs index for each hardware register number. */
static const int greg_of[16] = {
	REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
	REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};

void np_host_regs_from_uc(struct np_regs *regs, const void *ucv)
{
	const ucontext_t *uc = ucv;
	np_zero(regs, sizeof(*regs)); /* the hit path: no libc memset */
	for (int i = 0; i < 16; i++)
		regs->gpr[i] = (uint64_t)uc->uc_mcontext.gregs[greg_of[i]];
	regs->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	regs->flags = (uint64_t)uc->uc_mcontext.gregs[REG_EFL];
}

void np_host_regs_to_uc(const struct np_regs *regs, void *ucv)
{
	ucontext_t *uc = ucv;
	for (int i = 0; i < 16; i++)
		uc->uc_mcontext.gregs[greg_of[i]] = (greg_t)regs->gpr[i];
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)regs->pc;
	uc->uc_mcontext.gregs[REG_EFL] = (greg_t)regs->flags;
}

/* At a function entry the return address is at (%rsp). */
uint64_t np_host_ret_slot(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[4];
}

/* The probed program's stack, whose shadow under ASan is not ours to
 * judge (np_ctx_claim says why): unchecked. */
__attribute__((no_sanitize("address"))) uint64_t np_host_ret_get(const struct np_ctx *ctx)
{
	return *(const uint64_t *)np_host_ret_slot(ctx);
}

__attribute__((no_sanitize("address"))) void np_host_ret_set(struct np_ctx *ctx, uint64_t value)
{
	*(uint64_t *)np_host_ret_slot(ctx) = value;
}

/* The return trampoline runs after the ret popped the slot. */
uint64_t np_host_ret_key(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[4] - sizeof(uint64_t);
}

uint64_t np_host_ret_trampoline(bool fpu)
{
	return fpu ? ret_tramp_fpu : ret_tramp;
}

void np_host_return_now(struct np_ctx *ctx, uint64_t value)
{
	uint64_t sp = ctx->regs.gpr[4];
	ctx->regs.gpr[0] = value;
	ctx->regs.pc = *(const uint64_t *)sp;
	ctx->regs.gpr[4] = sp + 8;
	ctx->redirect = 1;
}

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* Which extended state to save, and how many bytes that takes in the
 * standard layout (an upper bound for the compacted one). 0 when the CPU
 * or the OS has no XSAVE. */
static void xsave_setup(void)
{
	uint32_t r[4], lo, hi;
	cpuid(1, 0, r);
	if (!(r[2] & (1u << 27))) /* OSXSAVE */
		return;
	__asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	xsave_mask = lo & 0xe7; /* x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM */
	xsave_size = 576;       /* legacy area + header */
	for (unsigned i = 2; i < 8; i++)
		if (xsave_mask & (1u << i)) {
			cpuid(0xd, i, r);
			if (r[1] + r[0] > xsave_size)
				xsave_size = r[1] + r[0];
		}
	cpuid(0xd, 1, r);
	have_xsavec = r[0] & (1u << 1);
}

/* Copy a shared routine into executable memory, patching, if given, its
 * 8-byte call slot and its XSAVE size and masks. */
static uint64_t install_routine(const uint8_t *begin, const uint8_t *end, const uint8_t *fn_slot,
				uint64_t fn, const uint8_t *size_slot)
{
	uint8_t code[1024];
	size_t len = (size_t)(end - begin);

	if (len > sizeof(code))
		return 0;
	memcpy(code, begin, len);
	if (fn_slot)
		memcpy(code + (fn_slot - begin), &fn, 8);
	if (size_slot) {
		memcpy(code + (size_slot - begin), &xsave_size, 4);
		memcpy(code + (np_x86_ret_tramp_fpu_mask - begin), &xsave_mask, 4);
		memcpy(code + (np_x86_ret_tramp_fpu_mask2 - begin), &xsave_mask, 4);
	}
	uint64_t at = np_codemem_alloc(0, len, 0);
	return at && np_code_write(at, code, len) == 0 ? at : 0;
}

int np_host_init(void)
{
	uint64_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	self_disp = (int32_t)((int64_t)(uintptr_t)np_thread_tls_slot() - (int64_t)tp);
	xsave_setup();
	uint64_t at = install_routine(np_x86_redirect_begin, np_x86_redirect_end, NULL, 0, NULL);
	ret_tramp = install_routine(np_x86_ret_tramp_begin, np_x86_ret_tramp_end,
				    np_x86_ret_tramp_fn_imm, (uint64_t)&np__ret_dispatch, NULL);
	if (xsave_size)
		ret_tramp_fpu = install_routine(
			np_x86_ret_tramp_fpu_begin, np_x86_ret_tramp_fpu_end,
			np_x86_ret_tramp_fpu_fn_imm, (uint64_t)&np__ret_dispatch,
			np_x86_ret_tramp_fpu_size);
	else
		ret_tramp_fpu = install_routine(np_x86_ret_tramp_fx_begin, np_x86_ret_tramp_fx_end,
						np_x86_ret_tramp_fx_fn_imm,
						(uint64_t)&np__ret_dispatch, NULL);
	if (!at || !ret_tramp || !ret_tramp_fpu)
		return -ENOMEM;
	np_x86_redirect_ptr = at;
	np_x86_redirect_nf_ptr = at + (uint64_t)(np_x86_redirect_noflags - np_x86_redirect_begin);
	return 0;
}

/* Registers the lean trampolines leave out (see tramp.S). */
bool np_host_reg_captured(uint32_t kind, int reg)
{
	static const uint32_t args = 0x0fdf; /* rax rcx rdx rbx rsp rsi rdi r8-r11 */
	static const uint32_t ret = 0x0fff;  /* all but r12-r15, which C preserves */
	if (kind & NP_CTX_CAPTURE_ARGS)
		return reg < 16 && ((args >> reg) & 1);
	if (kind & NP_CTX_CAPTURE_RET)
		return reg < 16 && ((ret >> reg) & 1);
	return true;
}

/* The return address is on the stack at a function entry. */
bool np_host_ret_in_memory(void)
{
	return true;
}

/* x86 keeps instruction fetch coherent with stores; a written page needs
 * no maintenance, and /proc/self/mem leaves the program's mappings as they
 * are. */
bool np_host_patch_in_place(void)
{
	return false;
}

void np_host_code_written(uint64_t addr, size_t len)
{
	(void)addr;
	(void)len;
}

/* Every redirect goes through np_x86_redirect without a trap. */
bool np_host_trap_own(void *uc)
{
	(void)uc;
	return false;
}

long np_host_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	long ret;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The first bytes of a file, NUL-terminated; 0 or -errno. */
static int read_head(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	for (ssize_t r = 1; r > 0 && n + 1 < len; n += (size_t)r)
		if ((r = read(fd, buf + n, len - 1 - n)) < 0)
			r = 0;
	close(fd);
	buf[n] = 0;
	return 0;
}

/* Is word a whole word of the line that starts at line? */
static bool has_flag(const char *line, const char *word)
{
	size_t n = strlen(word);
	const char *end = strchr(line, '\n');
	for (const char *p = line; (p = strstr(p, word)) && (!end || p < end); p += n)
		if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

/*
 * The TSC may stand in for CLOCK_MONOTONIC (core/clock.c) when the kernel
 * keeps CLOCK_MONOTONIC with it: its clocksource is "tsc", which its
 * watchdog takes away from a TSC it finds unsynchronised or unstable
 * (the clocksource then reads hpet, acpi_pm or kvm-clock), and the first
 * cpu's flags say the TSC ticks at a constant rate (constant_tsc) and
 * does not stop in idle states (nonstop_tsc). Only the first cpu's entry
 * of /proc/cpuinfo is read: the kernel sets these flags for every cpu
 * or none.
 */
int np_host_counter_check(char *why, size_t len)
{
	char src[64], info[8192];
	if (read_head("/sys/devices/system/clocksource/clocksource0/current_clocksource", src,
		      sizeof(src))) {
		snprintf(why, len, "the kernel's clocksource cannot be read");
		return -EOPNOTSUPP;
	}
	src[strcspn(src, "\n")] = 0;
	if (strcmp(src, "tsc") != 0) {
		snprintf(why, len, "the kernel's clocksource is %.32s, not tsc", src);
		return -EOPNOTSUPP;
	}
	const char *flags = NULL;
	if (read_head("/proc/cpuinfo", info, sizeof(info)) == 0)
		flags = strstr(info, "\nflags\t");
	if (!flags) {
		snprintf(why, len, "the cpu flags cannot be read (/proc/cpuinfo)");
		return -EOPNOTSUPP;
	}
	if (!has_flag(flags + 1, "constant_tsc") || !has_flag(flags + 1, "nonstop_tsc")) {
		snprintf(why, len, "the cpu flags lack constant_tsc or nonstop_tsc");
		return -EOPNOTSUPP;
	}
	return 0;
}

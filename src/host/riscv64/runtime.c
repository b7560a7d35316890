/* SPDX-License-Identifier: MIT */
/*
 * riscv64 host runtime: the pieces of site blocks (host/pieces.h, which
 * src/host/tramp.c lays out) from the template in tramp.S, ucontext
 * conversion, and the return address of a probed call in ra.
 *
 * A site block is two pieces, save and restore, around a call of shared
 * code that runs np__dispatch: no inline hit path yet. It starts on an
 * 8-byte boundary (its literals are doublewords), padded with c.nop, and
 * opens with a jump over its literals. The jump back to the end of the
 * displaced bytes is a jal when it reaches, else auipc+jalr through a
 * register free there (the region's scratch masks, from the free-register
 * analysis). The out-of-line copy of a TRAP region is the relocated
 * instruction alone.
 */
#include "core/nolibc.h"
#include "host/host.h"
#include "host/layout.h"
#include "host/pieces.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>

extern const uint8_t np_rv_save_begin[], np_rv_save_end[];
extern const uint8_t np_rv_restore_begin[], np_rv_restore_end[];
extern const uint8_t np_rv_site_pc[], np_rv_site_site[], np_rv_site_kind[];
extern const uint8_t np_rv_site_fn[], np_rv_site_rest_fn[];
extern const uint8_t np_rv_site_rest[], np_rv_site_rest_nofp[];
extern const uint8_t np_rv_redirect_brk[];
extern const uint8_t np_rv_ret_tramp[], np_rv_ret_tramp_nofp[];

#define RA 1
#define SP 2
#define C_NOP 0x0001

/* --- the pieces of a site block (host/pieces.h) ---------------------------- */

enum slot_kind {
	LIT64, /* a doubleword literal */
};

#define L(sym, v) {sym, LIT64, (uint64_t)(uintptr_t)(v)}

static void patch_slot(uint8_t *insn, const struct np_slot *s, size_t off, const struct np_emit *e)
{
	(void)off;
	(void)e;
	memcpy(insn, &s->value, sizeof(s->value));
}

/* No inline hit path: SAVE calls the shared rest, which saves the other
 * registers and the FP state when a handler of the site may touch it
 * (site->fpu, from the engine's scan of the handlers), runs np__dispatch
 * and loads them back; a return probe goes through the shared return
 * trampoline. The block is the same size either way. */
static void add_piece(struct np_block *b, enum np_piece_kind k, const struct np_block_site *s)
{
	const struct np_site *site = s->site;
	if (k == NP_PIECE_SAVE)
		np_block_add(b, NP_PIECE(np_rv_save, L(np_rv_site_pc, site->addr),
					 L(np_rv_site_site, site),
					 /* redirect, the high half: 0 */
					 L(np_rv_site_kind, NP_CTX_ENTRY | (s->fpu ? 0 : NP_CTX_NO_FPU)),
					 L(np_rv_site_fn, &np__dispatch),
					 L(np_rv_site_rest_fn, s->fpu ? np_rv_site_rest
								      : np_rv_site_rest_nofp)));
	else if (k == NP_PIECE_RESTORE)
		np_block_add(b, NP_PIECE(np_rv_restore));
}

/* A block starts on an 8-byte boundary (its literals are doublewords),
 * padded with c.nop. */
const struct np_host_pieces np_host_pieces = {
	.add = add_piece,
	.patch = patch_slot,
	.align = 8,
	.pad = {C_NOP & 0xff, C_NOP >> 8},
	.pad_len = 2,
	.reloc_max = 24, /* the longest relocation: a far branch through a register */
	.back_max = 8,   /* the jump back */
};

/* --- registers ------------------------------------------------------------ */

const struct np_uc_shape np_host_uc_shape = NP_UC_SHAPE(uc_mcontext.__gregs[0], uc_mcontext.__gregs[2]);

/* __gregs[0] is pc, __gregs[i] is xi. The FP state stays in the ucontext:
 * the signal handler's C code saves what it uses itself. */
void np_host_regs_from_uc(struct np_regs *regs, const void *ucv)
{
	const ucontext_t *uc = ucv;
	np_zero(regs, sizeof(*regs)); /* the hit path: no libc memset */
	for (int i = 1; i < 32; i++)
		regs->gpr[i] = uc->uc_mcontext.__gregs[i];
	regs->pc = uc->uc_mcontext.__gregs[0];
}

void np_host_regs_to_uc(const struct np_regs *regs, void *ucv)
{
	ucontext_t *uc = ucv;
	for (int i = 1; i < 32; i++)
		uc->uc_mcontext.__gregs[i] = regs->gpr[i];
	uc->uc_mcontext.__gregs[0] = regs->pc;
}

/* The redirect routine's ebreak: sp points at the ctx the handlers changed
 * (tramp.S). Its FP state is already loaded, or was never saved: both
 * entries of the routine share this ebreak. */
bool np_host_trap_own(void *ucv)
{
	ucontext_t *uc = ucv;
	if (uc->uc_mcontext.__gregs[0] != (uint64_t)(uintptr_t)np_rv_redirect_brk)
		return false;
	const struct np_ctx *ctx = (const struct np_ctx *)(uintptr_t)uc->uc_mcontext.__gregs[SP];
	np_host_regs_to_uc(&ctx->regs, uc);
	return true;
}

/* --- return probes: the return address is ra ------------------------------- */

/* The frame is known by its entry sp, which the return leaves unchanged. */
uint64_t np_host_ret_slot(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[SP];
}

uint64_t np_host_ret_get(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[RA];
}

void np_host_ret_set(struct np_ctx *ctx, uint64_t value)
{
	ctx->regs.gpr[RA] = value;
}

uint64_t np_host_ret_key(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[SP];
}

uint64_t np_host_ret_trampoline(bool fpu)
{
	return (uint64_t)(uintptr_t)(fpu ? np_rv_ret_tramp : np_rv_ret_tramp_nofp);
}

void np_host_return_now(struct np_ctx *ctx, uint64_t value)
{
	ctx->regs.gpr[10] = value; /* a0 */
	ctx->regs.pc = ctx->regs.gpr[RA];
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
	return reg != 0; /* x0 is not a register one can set */
}

/* --- code ----------------------------------------------------------------- */

/* Code is written with aligned stores into the briefly writable page: a
 * 16-bit store of c.ebreak, or a 32-bit store of a jal over one aligned
 * instruction, is what another hart fetches whole; under qemu-user a write
 * through /proc/self/mem would bypass the invalidation of translated code. */
bool np_host_patch_in_place(void)
{
	return true;
}

/* glibc's __riscv_flush_icache (the riscv_flush_icache system call, or
 * its vDSO entry) with no flags: the instruction cache of every hart that
 * runs this process now is synchronised, and every other hart is before
 * it runs one of our threads again. */
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
	register long a7 __asm__("a7") = nr;
	register long a0 __asm__("a0") = a1;
	register long r1 __asm__("a1") = a2;
	register long r2 __asm__("a2") = a3;
	register long r3 __asm__("a3") = a4;
	register long r4 __asm__("a4") = a5;
	register long r5 __asm__("a5") = a6;
	__asm__ volatile("ecall"
			 : "+r"(a0)
			 : "r"(a7), "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5)
			 : "memory");
	return a0;
}

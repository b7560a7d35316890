/* SPDX-License-Identifier: MIT */
/*
 * riscv64 host runtime: builds region trampolines from the template in
 * tramp.S, converts between ucontext and struct np_regs, and keeps the
 * return address of a probed call in ra.
 *
 * A trampoline is, for each displaced instruction,
 *   [site block: save, call np__dispatch, restore]   if a probe sits there
 *   the instruction, relocated
 * and then the jump back to the end of the displaced bytes: jal when it
 * reaches, else auipc+jalr through a register free there (the region's
 * scratch masks, from the free-register analysis). A site block starts on
 * an 8-byte boundary (its literals are doublewords), padded with c.nop;
 * it opens with a jump over its literals.
 * The out-of-line copy of a TRAP region is the relocated instruction
 * alone.
 *
 * As on arm64, every hit calls np__dispatch: no inline fast path yet.
 */
#include "core/nolibc.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>

extern const uint8_t np_rv_site_begin[], np_rv_site_end[];
extern const uint8_t np_rv_site_pc[], np_rv_site_site[], np_rv_site_kind[];
extern const uint8_t np_rv_site_fn[], np_rv_site_rest_fn[];
extern const uint8_t np_rv_site_rest[], np_rv_site_rest_nofp[];
extern const uint8_t np_rv_redirect_brk[];
extern const uint8_t np_rv_ret_tramp[], np_rv_ret_tramp_nofp[];

#define RA 1
#define SP 2
#define C_NOP 0x0001

static void put64(uint8_t *block, const uint8_t *slot, uint64_t value)
{
	memcpy(block + (slot - np_rv_site_begin), &value, sizeof(value));
}

/* The block that runs a site's handlers; out == NULL measures it. The
 * shared code it calls saves the FP state only when a handler of the site
 * may touch it (site->fpu, from the engine's scan of the handlers): the
 * one difference between the two, so the block is the same size. */
static size_t site_block(uint8_t *out, const struct np_site *site)
{
	size_t len = (size_t)(np_rv_site_end - np_rv_site_begin);
	if (!out)
		return len;
	bool fp = site->fpu == NP_FPU_FULL;
	memcpy(out, np_rv_site_begin, len);
	put64(out, np_rv_site_pc, site->addr);
	put64(out, np_rv_site_site, (uint64_t)(uintptr_t)site);
	/* redirect, the high half: 0 */
	put64(out, np_rv_site_kind, NP_CTX_ENTRY | (fp ? 0 : NP_CTX_NO_FPU));
	put64(out, np_rv_site_fn, (uint64_t)(uintptr_t)&np__dispatch);
	put64(out, np_rv_site_rest_fn,
	      (uint64_t)(uintptr_t)(fp ? np_rv_site_rest : np_rv_site_rest_nofp));
	return len;
}

size_t np_host_tramp_size(const struct np_region *r)
{
	size_t len = 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP)
			len += 6 + site_block(NULL, r->sites[i]); /* padding to 8 */
		len += 24; /* the longest relocation: a far branch through a register */
	}
	return len + 8; /* the jump back */
}

int np_host_build_tramp(struct np_region *r, uint8_t *buf, size_t cap, uint64_t at)
{
	size_t pos = 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		const struct np_insn *in = &r->insn[i];
		r->tramp_off[i] = (uint32_t)pos;
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP) {
			size_t len = site_block(NULL, r->sites[i]);
			for (; (at + pos) % 8; pos += 2) {
				uint16_t nop = C_NOP;
				if (pos + 2 > cap)
					return -ENOSPC;
				memcpy(buf + pos, &nop, 2);
			}
			if (pos + len > cap)
				return -ENOSPC;
			site_block(buf + pos, r->sites[i]);
			r->tramp_off[i] = (uint32_t)pos;
			pos += len;
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
		int n = np_host_isa->relocate_via(&rl, &r->scratch);
		if (n < 0)
			return n;
		pos += (size_t)n;
	}
	return (int)pos;
}

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

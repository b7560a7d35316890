/* SPDX-License-Identifier: MIT */
/*
 * Emulation of the SIMULATED A64 instructions on a register file.
 *
 * The trap path calls this with the brk already written over the
 * instruction, so a simulator sees only what decode.c packed into the
 * np_insn (internal.h). One simulator per kind, one signature; each sets
 * pc itself. Memory goes through np_mem so that a fault becomes -EFAULT,
 * and every memory access happens before any register changes, so a
 * fault leaves the register file as it was.
 *
 * Register 31 is the zero register for every operand here except the
 * base of stp, which is sp (gpr[31] in np_regs); PSTATE.NZCV is read from
 * np_regs.flags, bits 31..28.
 */
#include <errno.h>

#include "arch/arm64/internal.h"

typedef int (*a64_sim_fn)(const struct np_insn *in, unsigned arg, struct np_regs *r,
			  const struct np_mem *mem);

static uint64_t xreg(const struct np_regs *r, unsigned n)
{
	return n == A64_ZR ? 0 : r->gpr[n];
}

static void set_xreg(struct np_regs *r, unsigned n, uint64_t v)
{
	if (n != A64_ZR)
		r->gpr[n] = v;
}

static uint64_t next_pc(const struct np_insn *in)
{
	return in->pc + 4;
}

/*
 * Conditions (C1.2.4): the even code tests, the odd one negates, except
 * 1111 (nv), which is "always" like 1110 (al).
 *   0 eq Z      2 cs C      4 mi N      6 vs V
 *   8 hi C&!Z  10 ge N==V  12 gt !Z&N==V  14 al
 */
bool a64_cond(unsigned cond, uint64_t pstate)
{
	bool n = pstate & A64_N, z = pstate & A64_Z, c = pstate & A64_C, v = pstate & A64_V;
	bool t;

	switch ((cond & 0xf) >> 1) {
	case 0: t = z; break;
	case 1: t = c; break;
	case 2: t = n; break;
	case 3: t = v; break;
	case 4: t = c && !z; break;
	case 5: t = n == v; break;
	case 6: t = !z && n == v; break;
	default: return true;
	}
	return (cond & 1) ? !t : t;
}

static int sim_nop(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	r->pc = next_pc(in);
	return 0;
}

static int sim_b(const struct np_insn *in, unsigned arg, struct np_regs *r,
		 const struct np_mem *mem)
{
	r->pc = in->target;
	return 0;
}

static int sim_bl(const struct np_insn *in, unsigned arg, struct np_regs *r,
		  const struct np_mem *mem)
{
	r->gpr[A64_LR] = next_pc(in);
	r->pc = in->target;
	return 0;
}

static int sim_bcond(const struct np_insn *in, unsigned arg, struct np_regs *r,
		     const struct np_mem *mem)
{
	r->pc = a64_cond(arg, r->flags) ? in->target : next_pc(in);
	return 0;
}

/* arg: Rt(4:0) | sf(5) | nonzero(6). A 32-bit form tests Wt only. */
static int sim_cbz(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	uint64_t v = xreg(r, arg & 31);
	bool zero = (arg & 0x20) ? v == 0 : (uint32_t)v == 0;

	r->pc = zero != !!(arg & 0x40) ? in->target : next_pc(in);
	return 0;
}

/* arg: Rt(4:0) | bit(10:5) | nonzero(11) */
static int sim_tbz(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	bool set = xreg(r, arg & 31) >> ((arg >> 5) & 63) & 1;

	r->pc = set == !!(arg & 0x800) ? in->target : next_pc(in);
	return 0;
}

static int sim_br(const struct np_insn *in, unsigned arg, struct np_regs *r,
		  const struct np_mem *mem)
{
	r->pc = xreg(r, arg);
	return 0;
}

/* blr x30 branches to the old x30: read before the link is written. */
static int sim_blr(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	uint64_t to = xreg(r, arg);

	r->gpr[A64_LR] = next_pc(in);
	r->pc = to;
	return 0;
}

static int sim_adr(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	set_xreg(r, arg, in->target);
	r->pc = next_pc(in);
	return 0;
}

/* arg: Rt(4:0) | A64_LDR_* (6:5). A 32-bit load zero-extends. */
static int sim_ldr_lit(const struct np_insn *in, unsigned arg, struct np_regs *r,
		       const struct np_mem *mem)
{
	unsigned size = arg >> 5;
	uint64_t v = 0;
	uint32_t w = 0;
	int err = size == A64_LDR_X ? mem->read(mem->cookie, in->target, &v, 8)
				    : mem->read(mem->cookie, in->target, &w, 4);

	if (err)
		return err;
	if (size == A64_LDR_W)
		v = w;
	else if (size == A64_LDR_SW)
		v = (uint64_t)(int64_t)(int32_t)w;
	set_xreg(r, arg & 31, v);
	r->pc = next_pc(in);
	return 0;
}

/* arg: Rt(4:0) | Rt2(9:5) | sf(10); target: the signed byte offset.
 * Both registers are read before sp moves (neither can be sp: 31 is xzr
 * as a transfer register), then stored at the new sp in one write. */
static int sim_stp_pre(const struct np_insn *in, unsigned arg, struct np_regs *r,
		       const struct np_mem *mem)
{
	uint64_t a = xreg(r, arg & 31), b = xreg(r, (arg >> 5) & 31);
	uint64_t at = r->gpr[A64_SP] + in->target;
	uint32_t w[2] = {(uint32_t)a, (uint32_t)b};
	uint64_t x[2] = {a, b};
	int err = (arg & 0x400) ? mem->write(mem->cookie, at, x, sizeof(x))
				: mem->write(mem->cookie, at, w, sizeof(w));

	if (err)
		return err;
	r->gpr[A64_SP] = at;
	r->pc = next_pc(in);
	return 0;
}

static const a64_sim_fn a64_simulators[A64_SIM_NKINDS] = {
	[A64_SIM_NOP] = sim_nop,
	[A64_SIM_B] = sim_b,
	[A64_SIM_BL] = sim_bl,
	[A64_SIM_BCOND] = sim_bcond,
	[A64_SIM_CBZ] = sim_cbz,
	[A64_SIM_TBZ] = sim_tbz,
	[A64_SIM_RET] = sim_br, /* ret Xn is br Xn with a return hint */
	[A64_SIM_BR] = sim_br,
	[A64_SIM_BLR] = sim_blr,
	[A64_SIM_ADR] = sim_adr,
	[A64_SIM_LDR_LIT] = sim_ldr_lit,
	[A64_SIM_STP_PRE] = sim_stp_pre,
};

int a64_simulate(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem)
{
	unsigned kind = A64_SIM_KIND(insn->sim);

	if (insn->cls != NP_INSN_SIMULATED || kind >= A64_SIM_NKINDS || !a64_simulators[kind])
		return -EOPNOTSUPP;
	return a64_simulators[kind](insn, A64_SIM_ARG(insn->sim), regs, mem);
}

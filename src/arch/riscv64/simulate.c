/* SPDX-License-Identifier: MIT */
/*
 * The instructions the trap path performs itself: every control-flow
 * form and auipc, the ones whose meaning depends on their address. The
 * rest runs out of line. One signature, chosen by the sim kind; the link
 * value is pc + len, so c.jalr (len 2) needs nothing of its own. x0 is
 * never written.
 */
#include <errno.h>

#include "arch/riscv64/internal.h"

static void set_reg(struct np_regs *regs, unsigned r, uint64_t v)
{
	if (r != RV_ZERO)
		regs->gpr[r] = v;
}

/* jal: imm[20|10:1|11|19:12] rd 1101111 */
static int sim_jal(const struct np_insn *insn, unsigned rd, struct np_regs *regs)
{
	set_reg(regs, rd, insn->pc + insn->len);
	regs->pc = insn->target;
	return 0;
}

/* jalr: imm[11:0]=0 rs1 000 rd 1100111; rs1 is read before rd is written */
static int sim_jalr(const struct np_insn *insn, unsigned arg, struct np_regs *regs)
{
	uint64_t to = regs->gpr[arg >> 5 & 31] & ~1ull;

	set_reg(regs, arg & 31, insn->pc + insn->len);
	regs->pc = to;
	return 0;
}

/* auipc: imm[31:12] rd 0010111; target holds pc + imm */
static int sim_auipc(const struct np_insn *insn, unsigned rd, struct np_regs *regs)
{
	set_reg(regs, rd, insn->target);
	regs->pc = insn->pc + insn->len;
	return 0;
}

/* branches: imm[12|10:5] rs2 rs1 funct3 imm[4:1|11] 1100011 */
static bool taken(unsigned kind, uint64_t a, uint64_t b)
{
	switch (kind) {
	case RV_SIM_BEQ: return a == b;
	case RV_SIM_BNE: return a != b;
	case RV_SIM_BLT: return (int64_t)a < (int64_t)b;
	case RV_SIM_BGE: return (int64_t)a >= (int64_t)b;
	case RV_SIM_BLTU: return a < b;
	default: return a >= b; /* RV_SIM_BGEU */
	}
}

int rv_simulate(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem)
{
	unsigned kind = RV_SIM_KIND(insn->sim), arg = RV_SIM_ARG(insn->sim);
	uint64_t a, b;

	if (insn->cls != NP_INSN_SIMULATED)
		return -EOPNOTSUPP;
	regs->gpr[RV_ZERO] = 0;
	switch (kind) {
	case RV_SIM_JAL: return sim_jal(insn, arg, regs);
	case RV_SIM_JALR: return sim_jalr(insn, arg, regs);
	case RV_SIM_AUIPC: return sim_auipc(insn, arg, regs);
	case RV_SIM_BEQ: case RV_SIM_BNE: case RV_SIM_BLT:
	case RV_SIM_BGE: case RV_SIM_BLTU: case RV_SIM_BGEU:
		a = regs->gpr[arg & 31];
		b = regs->gpr[arg >> 5 & 31];
		regs->pc = taken(kind, a, b) ? insn->target : insn->pc + insn->len;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

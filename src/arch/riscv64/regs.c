/* SPDX-License-Identifier: MIT */
/*
 * The integer registers each instruction reads and writes, for the
 * free-register analysis (src/arch/freereg.c).
 *
 * The format of the major opcode says which of rd, rs1, rs2 are integer
 * registers. The float opcodes are the care point: most of their
 * operands are f registers, invisible here, but compares, fclass, fmv.x
 * and fcvt to an integer write an x register, and fmv.[wd].x and fcvt
 * from an integer read one. Reads may be over-reported (harmless: a
 * register is then only less often free); writes never are. x0 is
 * neither read nor written as far as the analysis is concerned.
 */
#include "arch/riscv64/internal.h"

#define RDB(x)  (1ull << rv_rd(x))
#define RS1B(x) (1ull << rv_rs1(x))
#define RS2B(x) (1ull << rv_rs2(x))

static void fp_uses(uint32_t x, struct np_reg_use *u)
{
	unsigned f5 = rv_funct7(x) >> 2;

	switch (f5) {
	case 0x14: /* feq, flt, fle */
	case 0x18: /* fcvt.{w,wu,l,lu}.{s,d} */
	case 0x1c: /* fmv.x.{w,d}, fclass */
		u->written = RDB(x);
		break;
	case 0x1a: /* fcvt.{s,d}.{w,wu,l,lu} */
	case 0x1e: /* fmv.{w,d}.x */
		u->read = RS1B(x);
		break;
	default:
		break;
	}
}

void rv_uses(uint32_t x, struct np_reg_use *u)
{
	*u = (struct np_reg_use){0, 0};
	switch (rv_opcode(x)) {
	case RV_OP_LUI: case RV_OP_AUIPC: case RV_OP_JAL:
		u->written = RDB(x);
		break;
	case RV_OP_IMM: case RV_OP_IMM_32: case RV_OP_LOAD: case RV_OP_JALR:
		u->read = RS1B(x);
		u->written = RDB(x);
		break;
	case RV_OP_LOAD_FP: case RV_OP_MISC_MEM:
		u->read = RS1B(x);
		break;
	case RV_OP_STORE: case RV_OP_BRANCH:
		u->read = RS1B(x) | RS2B(x);
		break;
	case RV_OP_STORE_FP:
		u->read = RS1B(x);
		break;
	case RV_OP_OP: case RV_OP_OP_32: case RV_OP_AMO:
		u->read = RS1B(x) | RS2B(x);
		u->written = RDB(x);
		break;
	case RV_OP_SYSTEM: /* CSR forms read rs1 (or an immediate) and write rd */
		u->read = RS1B(x);
		u->written = rv_funct3(x) ? RDB(x) : 0;
		break;
	case RV_OP_FP:
		fp_uses(x, u);
		break;
	default: /* fused multiply-add: f registers only */
		break;
	}
	u->read &= ~1ull;
	u->written &= ~1ull;
}

int rv_reg_use(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out)
{
	struct np_insn ni;
	struct rv_insn in;
	int err = rv_decode(code, avail, pc, &ni);

	if (err)
		return err;
	rv_fetch(code, avail, &in);
	rv_uses(in.x, out);
	return 0;
}

/* `auipc rX, hi; jalr rd, lo(rX)`: the assembler's call (rd ra) and tail
 * (rd zero, rX t1) that the linker left unrelaxed, a direct transfer to
 * the pc-relative address the two compute. The jalr's own rd (the link)
 * may be rX itself. */
uint64_t rv_pair_target(const uint8_t *code, size_t avail, uint64_t pc)
{
	struct rv_insn a, b;

	if (rv_fetch(code, avail, &a) || a.len != 4 || rv_opcode(a.x) != RV_OP_AUIPC ||
	    rv_rd(a.x) == RV_ZERO || rv_fetch(code + 4, avail - 4, &b) ||
	    rv_opcode(b.x) != RV_OP_JALR || rv_rs1(b.x) != rv_rd(a.x))
		return 0;
	return pc + (uint64_t)rv_imm_u(a.x) + (uint64_t)rv_imm_i(b.x);
}

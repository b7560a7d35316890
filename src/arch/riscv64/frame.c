/* SPDX-License-Identifier: MIT */
/*
 * What an instruction does to sp (x2) and s0 (x8, the frame pointer)
 * (np_isa.frame_effect), for the stack heights of a function
 * (src/plan/heights.c). Compressed parcels are read in their 32-bit
 * form, so c.addi16sp is an addi and c.mv an add. The forms compilers
 * write for a frame, each named; any other write of either register is
 * NP_FRAME_UNKNOWN, and so is every opcode whose writes regs.c does not
 * give (the vector extension's vsetvli writes rd).
 *
 *   addi sp, sp, imm                 sp + imm
 *   addi sp, s0, imm; mv sp, s0      sp = s0 + imm
 *   addi s0, sp, imm; mv s0, sp      s0 = sp + imm
 */
#include <errno.h>

#include "arch/riscv64/internal.h"

#define RV_SP 2
#define RV_S0 8

static void set(uint8_t *op, int32_t *delta, uint8_t how, int64_t d)
{
	*op = how;
	*delta = (int32_t)d;
}

/* Opcodes whose register writes rv_uses() gives in full. */
static bool writes_known(uint32_t x)
{
	switch (rv_opcode(x)) {
	case RV_OP_LOAD: case RV_OP_LOAD_FP: case RV_OP_MISC_MEM: case RV_OP_IMM:
	case RV_OP_AUIPC: case RV_OP_IMM_32: case RV_OP_STORE: case RV_OP_STORE_FP:
	case RV_OP_AMO: case RV_OP_OP: case RV_OP_LUI: case RV_OP_OP_32: case RV_OP_MADD:
	case RV_OP_MSUB: case RV_OP_NMSUB: case RV_OP_NMADD: case RV_OP_FP: case RV_OP_BRANCH:
	case RV_OP_JALR: case RV_OP_JAL: case RV_OP_SYSTEM:
		return true;
	default:
		return false;
	}
}

/* `rd = rs + imm` for addi, and for the add c.mv expands to (add rd,
 * x0, rs): true with *rs and *imm. */
static bool is_move_add(uint32_t x, unsigned *rs, int64_t *imm)
{
	if (rv_opcode(x) == RV_OP_IMM && rv_funct3(x) == 0) {
		*rs = rv_rs1(x);
		*imm = rv_imm_i(x);
		return true;
	}
	if (rv_opcode(x) == RV_OP_OP && rv_funct3(x) == 0 && rv_funct7(x) == 0 &&
	    (rv_rs1(x) == 0 || rv_rs2(x) == 0)) {
		*rs = rv_rs1(x) ? rv_rs1(x) : rv_rs2(x);
		*imm = 0;
		return true;
	}
	return false;
}

int rv_frame_effect(const uint8_t *code, size_t avail, uint64_t pc, struct np_frame_effect *out)
{
	struct rv_insn in;
	struct np_reg_use u;
	unsigned rs;
	int64_t imm;
	int err = rv_fetch(code, avail, &in);

	(void)pc;
	*out = (struct np_frame_effect){0};
	if (err)
		return err;
	if (!writes_known(in.x)) {
		out->sp = out->fp = NP_FRAME_UNKNOWN;
		return 0;
	}
	rv_uses(in.x, &u);
	bool move = is_move_add(in.x, &rs, &imm);
	if (u.written & (1ull << RV_SP)) {
		out->sp = NP_FRAME_UNKNOWN;
		if (move && rs == RV_SP)
			set(&out->sp, &out->sp_delta, NP_FRAME_ADD, imm);
		else if (move && rs == RV_S0)
			set(&out->sp, &out->sp_delta, NP_FRAME_FROM, imm);
	}
	if (u.written & (1ull << RV_S0)) {
		out->fp = NP_FRAME_UNKNOWN;
		if (move && rs == RV_SP)
			set(&out->fp, &out->fp_delta, NP_FRAME_FROM, imm);
	}
	return 0;
}

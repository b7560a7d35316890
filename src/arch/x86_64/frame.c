/* SPDX-License-Identifier: MIT */
/*
 * What an instruction does to %rsp and %rbp (np_isa.frame_effect), for
 * the stack heights of a function (src/plan/heights.c): the forms
 * compilers write for a frame, each named; any other write of either
 * register is NP_FRAME_UNKNOWN, which only costs what the heights can
 * tell.
 *
 *   push, pushf, pop, popf          %rsp -/+ the operand's bytes
 *   sub/add $imm,%rsp               %rsp -/+ imm
 *   lea d(%rsp),%rsp                %rsp + d
 *   mov %rbp,%rsp / lea d(%rbp),%rsp  %rsp = %rbp + d
 *   leave                           %rsp = %rbp + 8, %rbp unknown
 *   mov %rsp,%rbp / lea d(%rsp),%rbp  %rbp = %rsp + d
 *   call                            %rsp as before, for the code after it
 */
#include <errno.h>

#include "arch/x86_64/internal.h"

static bool is_reg(const ZydisDecodedOperand *op, ZydisRegister r)
{
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && op->reg.value == r;
}

/* d(%base) with no index, as a lea's source */
static bool is_base_disp(const ZydisDecodedOperand *op, ZydisRegister base)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == base &&
	       op->mem.index == ZYDIS_REGISTER_NONE && x86_fits_i32(op->mem.disp.value);
}

static bool imm32(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && x86_fits_i32(op->imm.value.s);
}

static void set(uint8_t *op, int32_t *delta, uint8_t how, int64_t d)
{
	*op = how;
	*delta = (int32_t)d;
}

static void sp_write(const struct x86_insn *x, struct np_frame_effect *out)
{
	const ZydisDecodedOperand *a = &x->ops[0], *b = &x->ops[1];
	int bytes = x->zi.operand_width / 8;

	out->sp = NP_FRAME_UNKNOWN;
	switch (x->zi.mnemonic) {
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_PUSHFQ:
		set(&out->sp, &out->sp_delta, NP_FRAME_ADD, -bytes);
		break;
	case ZYDIS_MNEMONIC_POP:
		if (!is_reg(a, ZYDIS_REGISTER_RSP)) /* pop %rsp loads it */
			set(&out->sp, &out->sp_delta, NP_FRAME_ADD, bytes);
		break;
	case ZYDIS_MNEMONIC_POPFQ:
		set(&out->sp, &out->sp_delta, NP_FRAME_ADD, bytes);
		break;
	case ZYDIS_MNEMONIC_CALL:
	case ZYDIS_MNEMONIC_RET:
		out->sp = NP_FRAME_KEEP;
		break;
	case ZYDIS_MNEMONIC_SUB:
	case ZYDIS_MNEMONIC_ADD:
		if (is_reg(a, ZYDIS_REGISTER_RSP) && imm32(b)) {
			int64_t d = b->imm.value.s;
			set(&out->sp, &out->sp_delta, NP_FRAME_ADD,
			    x->zi.mnemonic == ZYDIS_MNEMONIC_SUB ? -d : d);
		}
		break;
	case ZYDIS_MNEMONIC_LEA:
		if (!is_reg(a, ZYDIS_REGISTER_RSP))
			break;
		if (is_base_disp(b, ZYDIS_REGISTER_RSP))
			set(&out->sp, &out->sp_delta, NP_FRAME_ADD, b->mem.disp.value);
		else if (is_base_disp(b, ZYDIS_REGISTER_RBP))
			set(&out->sp, &out->sp_delta, NP_FRAME_FROM, b->mem.disp.value);
		break;
	case ZYDIS_MNEMONIC_MOV:
		if (is_reg(a, ZYDIS_REGISTER_RSP) && is_reg(b, ZYDIS_REGISTER_RBP))
			set(&out->sp, &out->sp_delta, NP_FRAME_FROM, 0);
		break;
	case ZYDIS_MNEMONIC_LEAVE:
		set(&out->sp, &out->sp_delta, NP_FRAME_FROM, 8);
		break;
	default:
		break;
	}
}

static void fp_write(const struct x86_insn *x, struct np_frame_effect *out)
{
	const ZydisDecodedOperand *a = &x->ops[0], *b = &x->ops[1];

	out->fp = NP_FRAME_UNKNOWN;
	if (x->zi.mnemonic == ZYDIS_MNEMONIC_MOV && is_reg(a, ZYDIS_REGISTER_RBP) &&
	    is_reg(b, ZYDIS_REGISTER_RSP))
		set(&out->fp, &out->fp_delta, NP_FRAME_FROM, 0);
	else if (x->zi.mnemonic == ZYDIS_MNEMONIC_LEA && is_reg(a, ZYDIS_REGISTER_RBP) &&
		 is_base_disp(b, ZYDIS_REGISTER_RSP))
		set(&out->fp, &out->fp_delta, NP_FRAME_FROM, b->mem.disp.value);
}

int x86_frame_effect(const uint8_t *code, size_t avail, uint64_t pc, struct np_frame_effect *out)
{
	struct x86_insn x;
	int err = x86_zdecode(code, avail, &x);

	(void)pc;
	*out = (struct np_frame_effect){0};
	if (err)
		return err;
	if (x86_writes(&x, ZYDIS_REGISTER_RSP))
		sp_write(&x, out);
	if (x86_writes(&x, ZYDIS_REGISTER_RBP))
		fp_write(&x, out);
	return 0;
}

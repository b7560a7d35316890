/* SPDX-License-Identifier: MIT */
/*
 * The general registers an x86-64 instruction reads and writes, for the
 * free-register analysis (src/arch/freereg.c), from Zydis' operands,
 * hidden ones included (push/pop/call touch rsp, rep movs rcx/rsi/rdi).
 *
 * Only a write of the whole register counts: a 32-bit write zero-extends
 * and so kills the old value, an 8- or 16-bit write keeps the rest of it,
 * and a conditional write (cmov) may not happen. Registers that address
 * memory are read.
 */
#include "arch/x86_64/internal.h"

static uint64_t bit(ZydisRegister reg)
{
	int n = x86_gpr64(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg));

	return n >= 0 ? 1ull << n : 0;
}

static bool kills(ZydisRegister reg)
{
	ZydisRegisterClass c = ZydisRegisterGetClass(reg);

	return c == ZYDIS_REGCLASS_GPR64 || c == ZYDIS_REGCLASS_GPR32;
}

static void operand_uses(const ZydisDecodedOperand *op, struct np_reg_use *u)
{
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		u->read |= bit(op->mem.base) | bit(op->mem.index);
		return;
	}
	if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return;
	if (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ)
		u->read |= bit(op->reg.value);
	if ((op->actions & ZYDIS_OPERAND_ACTION_WRITE) && kills(op->reg.value))
		u->written |= bit(op->reg.value);
	else if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
		u->read |= bit(op->reg.value); /* a partial write merges: as good as a read */
}

int x86_reg_use(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out)
{
	struct x86_insn x;
	int err = x86_zdecode(code, avail, &x);

	if (err)
		return err;
	*out = (struct np_reg_use){0, 0};
	for (unsigned i = 0; i < x.zi.operand_count; i++)
		operand_uses(&x.ops[i], out);
	/* xor %eax,%eax and friends read nothing: the result is 0 */
	if ((x.zi.mnemonic == ZYDIS_MNEMONIC_XOR || x.zi.mnemonic == ZYDIS_MNEMONIC_SUB) &&
	    x.zi.operand_count_visible == 2 && x.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
	    x.ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && x.ops[0].reg.value == x.ops[1].reg.value &&
	    kills(x.ops[0].reg.value))
		out->read &= ~bit(x.ops[0].reg.value);
	return 0;
}

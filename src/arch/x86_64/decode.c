/* SPDX-License-Identifier: MIT */
/*
 * Decoding and classification of one x86-64 instruction.
 *
 * Zydis decodes; this file decides what a probe may do with the result.
 * The decision runs in a fixed order, each step a table:
 *
 *   1. flags: what the instruction does to control flow (from Zydis'
 *      category and branch type), plus padding and system marks. They are
 *      computed for every instruction, rejected ones included, because the
 *      function analysis needs them (ud2 ends a path, int3 is padding).
 *   2. REJECTED when x86_rejects[] names the mnemonic, or an attribute
 *      says the instruction only means something at its own address or
 *      privilege level. Each rejection carries the reason users will see.
 *   3. SIMULATED when x86_sims[] has a rule for the mnemonic and the rule
 *      accepts the operand form; the rule packs what the simulator needs
 *      into the sim id (see internal.h).
 *   4. OUT_OF_LINE otherwise: relocate.c rewrites every pc-relative form,
 *      so any instruction that is neither rejected nor pc-dependent in a
 *      way we cannot rewrite can run from a trampoline.
 */
#include <errno.h>
#include <string.h>

#include "arch/x86_64/internal.h"

int x86_zdecode(const uint8_t *code, size_t avail, struct x86_insn *x)
{
	ZydisDecoder d;
	ZyanStatus st;

	if (avail == 0)
		return -ENODATA;
	/* A decoder per call: cheap, and keeps this file free of globals. */
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -EILSEQ;
	st = ZydisDecoderDecodeFull(&d, code, avail, &x->zi, x->ops);
	if (st == ZYDIS_STATUS_NO_MORE_DATA && avail < ZYDIS_MAX_INSTRUCTION_LENGTH)
		return -ENODATA;
	return ZYAN_SUCCESS(st) ? 0 : -EILSEQ;
}

int x86_zdecode_quick(const uint8_t *code, size_t avail, ZydisDecodedInstruction *zi)
{
	ZydisDecoder d;

	if (avail == 0)
		return -ENODATA;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -EILSEQ;
	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d, NULL, code, avail, zi)) ? 0 : -EILSEQ;
}

int x86_insn_length(const uint8_t *code, size_t avail)
{
	ZydisDecodedInstruction zi;
	int err = x86_zdecode_quick(code, avail, &zi);
	return err ? err : zi.length;
}

int x86_gpr64(ZydisRegister reg)
{
	if (ZydisRegisterGetClass(reg) != ZYDIS_REGCLASS_GPR64)
		return -1;
	return ZydisRegisterGetId(reg);
}

bool x86_writes(const struct x86_insn *x, ZydisRegister reg)
{
	ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);

	for (unsigned i = 0; i < x->zi.operand_count; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];

		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op->reg.value) == full)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* 1. Flags                                                            */

static const ZydisDecodedOperand *rel_operand(const struct x86_insn *x)
{
	for (unsigned i = 0; i < x->zi.operand_count_visible; i++)
		if (x->ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && x->ops[i].imm.is_relative)
			return &x->ops[i];
	return NULL;
}

static const ZydisDecodedOperand *ip_mem_operand(const struct x86_insn *x)
{
	for (unsigned i = 0; i < x->zi.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];

		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (op->mem.base == ZYDIS_REGISTER_RIP || op->mem.base == ZYDIS_REGISTER_EIP))
			return op;
	}
	return NULL;
}

/* Control flow, by Zydis category. A relative conditional branch is one
 * even without a branch type: xbegin goes to its abort handler. Otherwise
 * only real branches have a branch type (xabort, in UNCOND_BR, has none). */
static uint32_t control_flags(const struct x86_insn *x)
{
	bool rel = rel_operand(x) != NULL;

	if (x->zi.meta.category == ZYDIS_CATEGORY_COND_BR)
		return rel ? NP_INSN_BRANCH | NP_INSN_COND : 0;
	if (x->zi.meta.branch_type == ZYDIS_BRANCH_TYPE_NONE)
		return 0;
	switch (x->zi.meta.category) {
	case ZYDIS_CATEGORY_UNCOND_BR:
		return NP_INSN_NOFALL | (rel ? NP_INSN_BRANCH : NP_INSN_INDIRECT);
	case ZYDIS_CATEGORY_CALL:
		return NP_INSN_CALL | (rel ? NP_INSN_BRANCH : NP_INSN_INDIRECT);
	case ZYDIS_CATEGORY_RET:
		return NP_INSN_RET | NP_INSN_NOFALL;
	default:
		return 0;
	}
}

static const struct {
	ZydisMnemonic mn;
	uint32_t flags;
} x86_mnemonic_flags[] = {
	{ZYDIS_MNEMONIC_NOP, NP_INSN_PADDING}, /* 90, 66 90, 0f 1f /0, cs nopw ... */
	{ZYDIS_MNEMONIC_INT3, NP_INSN_PADDING}, /* cc fills gaps between functions */
	{ZYDIS_MNEMONIC_UD0, NP_INSN_NOFALL},
	{ZYDIS_MNEMONIC_UD1, NP_INSN_NOFALL},
	{ZYDIS_MNEMONIC_UD2, NP_INSN_NOFALL | NP_INSN_PADDING}, /* unreachable's filler */
	{ZYDIS_MNEMONIC_HLT, NP_INSN_NOFALL},
	{ZYDIS_MNEMONIC_IRET, NP_INSN_NOFALL}, /* no branch type in Zydis */
	{ZYDIS_MNEMONIC_IRETD, NP_INSN_NOFALL},
	{ZYDIS_MNEMONIC_IRETQ, NP_INSN_NOFALL},
};

static uint32_t other_flags(const struct x86_insn *x)
{
	uint32_t f = 0;

	for (size_t i = 0; i < X86_ARRAY_SIZE(x86_mnemonic_flags); i++)
		if (x86_mnemonic_flags[i].mn == x->zi.mnemonic)
			f |= x86_mnemonic_flags[i].flags;
	switch (x->zi.meta.category) {
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_SYSTEM:
	case ZYDIS_CATEGORY_INTERRUPT:
		f |= NP_INSN_SYSTEM;
		break;
	default:
		break;
	}
	if (x->zi.attributes & ZYDIS_ATTRIB_IS_PRIVILEGED)
		f |= NP_INSN_SYSTEM;
	return f;
}

static uint64_t absolute(const struct x86_insn *x, const ZydisDecodedOperand *op, uint64_t pc)
{
	ZyanU64 a = 0;

	ZydisCalcAbsoluteAddress(&x->zi, op, pc, &a);
	return a;
}

/* ------------------------------------------------------------------ */
/* 2. Rejections                                                       */

#define UNDEFINED "undefined instruction: would fault at a different pc"
#define XTRANS    "transactional region: a trap or a jump out would abort it"

static const struct {
	ZydisMnemonic mn;
	const char *why;
} x86_rejects[] = {
	{ZYDIS_MNEMONIC_INT3, "breakpoint already present"},
	{ZYDIS_MNEMONIC_INT1, "int1/icebp: raises a debug trap"},
	{ZYDIS_MNEMONIC_INT, "software interrupt: its signal would report a trampoline pc"},
	{ZYDIS_MNEMONIC_UD0, UNDEFINED},
	{ZYDIS_MNEMONIC_UD1, UNDEFINED},
	{ZYDIS_MNEMONIC_UD2, UNDEFINED},
	{ZYDIS_MNEMONIC_HLT, "hlt: privileged, faults in user mode"},
	{ZYDIS_MNEMONIC_CLI, "cli: faults in user mode"},
	{ZYDIS_MNEMONIC_STI, "sti: faults in user mode"},
	{ZYDIS_MNEMONIC_IRET, "interrupt return: far control transfer"},
	{ZYDIS_MNEMONIC_IRETD, "interrupt return: far control transfer"},
	{ZYDIS_MNEMONIC_IRETQ, "interrupt return: far control transfer"},
	{ZYDIS_MNEMONIC_SYSENTER, "sysenter: returns to a kernel-chosen address"},
	{ZYDIS_MNEMONIC_XBEGIN, XTRANS},
	{ZYDIS_MNEMONIC_XABORT, XTRANS},
	{ZYDIS_MNEMONIC_XEND, XTRANS},
};

static bool has_prefix(const struct x86_insn *x, uint8_t value)
{
	for (unsigned i = 0; i < x->zi.raw.prefix_count; i++)
		if (x->zi.raw.prefixes[i].value == value)
			return true;
	return false;
}

static const char *reject_reason(const struct x86_insn *x)
{
	for (size_t i = 0; i < X86_ARRAY_SIZE(x86_rejects); i++)
		if (x86_rejects[i].mn == x->zi.mnemonic)
			return x86_rejects[i].why;
	if (x->zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
		return "far branch: changes the code segment";
	if (x->zi.attributes & ZYDIS_ATTRIB_IS_PRIVILEGED)
		return "privileged instruction: faults in user mode";
	/* Intel ignores 0x66 on near branches, AMD truncates rip to 16 bits
	 * and even reads a shorter displacement: the length is vendor's. */
	if (x->zi.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE && has_prefix(x, 0x66))
		return "operand-size prefix on a branch: length and target differ by vendor";
	if (ip_mem_operand(x) && ip_mem_operand(x)->mem.base == ZYDIS_REGISTER_EIP)
		return "eip-relative operand (addr32): cannot be relocated";
	return NULL;
}

/* ------------------------------------------------------------------ */
/* 3. Simulation rules                                                 */

typedef uint16_t (*x86_sim_rule)(const struct x86_insn *x, const struct np_insn *n,
				 const char **why);

static int reg_operand(const struct x86_insn *x, unsigned i)
{
	if (x->ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return -1;
	return x86_gpr64(x->ops[i].reg.value);
}

static uint16_t sim_nop(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	return X86_SIM(X86_SIM_NOP, 0);
}

static uint16_t sim_push_pop(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	int r = reg_operand(x, 0);

	if (r < 0 || x->zi.operand_width != 64)
		return 0; /* push imm, push mem, segment registers: out of line */
	return X86_SIM(x->zi.mnemonic == ZYDIS_MNEMONIC_PUSH ? X86_SIM_PUSH : X86_SIM_POP, r);
}

static uint16_t sim_ret(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	uint64_t imm = x->zi.operand_count_visible ? x->ops[0].imm.value.u : 0;

	if (imm > X86_SIM_ARG_MAX) {
		*why = "ret imm16 beyond the simulator's 12-bit field";
		return 0;
	}
	return X86_SIM(X86_SIM_RET, imm);
}

static uint16_t sim_jmp_call(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	bool call = x->zi.mnemonic == ZYDIS_MNEMONIC_CALL;
	int r = reg_operand(x, 0);

	if (n->flags & NP_INSN_BRANCH)
		return X86_SIM(call ? X86_SIM_CALL : X86_SIM_JMP, 0);
	if (r >= 0)
		return X86_SIM(call ? X86_SIM_CALL_REG : X86_SIM_JMP_REG, r);
	return 0; /* through memory: out of line */
}

static uint16_t sim_jcc(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	/* 70+cc rel8 and 0f 80+cc rel32: the condition is the low nibble. */
	return X86_SIM(X86_SIM_JCC, x->zi.opcode & 0xf);
}

static uint16_t sim_loop(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	unsigned v = X86_LOOP_JRCXZ;

	if (x->zi.mnemonic == ZYDIS_MNEMONIC_LOOP)
		v = X86_LOOP_LOOP;
	else if (x->zi.mnemonic == ZYDIS_MNEMONIC_LOOPE)
		v = X86_LOOP_LOOPE;
	else if (x->zi.mnemonic == ZYDIS_MNEMONIC_LOOPNE)
		v = X86_LOOP_LOOPNE;
	if (x->zi.address_width == 32)
		v |= X86_LOOP_ECX;
	return X86_SIM(X86_SIM_LOOP, v);
}

static uint16_t sim_lea(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	ZydisRegister dst = x->ops[0].reg.value;

	if (x->ops[1].mem.base != ZYDIS_REGISTER_RIP || x->ops[1].mem.index != ZYDIS_REGISTER_NONE)
		return 0; /* register-based lea does not depend on pc */
	if (ZydisRegisterGetClass(dst) == ZYDIS_REGCLASS_GPR64)
		return X86_SIM(X86_SIM_LEA, ZydisRegisterGetId(dst));
	if (ZydisRegisterGetClass(dst) == ZYDIS_REGCLASS_GPR32)
		return X86_SIM(X86_SIM_LEA, ZydisRegisterGetId(dst) | X86_LEA_32);
	*why = "lea into a 16-bit register is not simulated";
	return 0;
}

static uint16_t sim_mov(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	int dst = reg_operand(x, 0), src = reg_operand(x, 1);

	if (dst < 0 || src < 0)
		return 0;
	return X86_SIM(X86_SIM_MOV, (unsigned)dst | (unsigned)src << 4);
}

/* add/sub $imm,%rsp: frame setup; the simulator computes the flags. */
static uint16_t sim_add_sub_rsp(const struct x86_insn *x, const struct np_insn *n,
				const char **why)
{
	int64_t imm = x->ops[1].imm.value.s;

	if (x->ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
	    x->ops[0].reg.value != ZYDIS_REGISTER_RSP ||
	    x->ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return 0;
	if (imm < 0 || imm > (int64_t)X86_SIM_ARG_MAX) {
		*why = "stack adjustment beyond the simulator's 12-bit field";
		return 0;
	}
	return X86_SIM(x->zi.mnemonic == ZYDIS_MNEMONIC_ADD ? X86_SIM_ADD_RSP : X86_SIM_SUB_RSP,
		       imm);
}

static const struct {
	ZydisMnemonic mn;
	x86_sim_rule rule;
} x86_sims[] = {
	{ZYDIS_MNEMONIC_NOP, sim_nop},
	{ZYDIS_MNEMONIC_ENDBR64, sim_nop}, /* a nop unless IBT is on, and then */
	{ZYDIS_MNEMONIC_ENDBR32, sim_nop}, /* it only marks a landing pad     */
	{ZYDIS_MNEMONIC_PUSH, sim_push_pop},
	{ZYDIS_MNEMONIC_POP, sim_push_pop},
	{ZYDIS_MNEMONIC_RET, sim_ret},
	{ZYDIS_MNEMONIC_JMP, sim_jmp_call},
	{ZYDIS_MNEMONIC_CALL, sim_jmp_call},
	{ZYDIS_MNEMONIC_JO, sim_jcc},
	{ZYDIS_MNEMONIC_JNO, sim_jcc},
	{ZYDIS_MNEMONIC_JB, sim_jcc},
	{ZYDIS_MNEMONIC_JNB, sim_jcc},
	{ZYDIS_MNEMONIC_JZ, sim_jcc},
	{ZYDIS_MNEMONIC_JNZ, sim_jcc},
	{ZYDIS_MNEMONIC_JBE, sim_jcc},
	{ZYDIS_MNEMONIC_JNBE, sim_jcc},
	{ZYDIS_MNEMONIC_JS, sim_jcc},
	{ZYDIS_MNEMONIC_JNS, sim_jcc},
	{ZYDIS_MNEMONIC_JP, sim_jcc},
	{ZYDIS_MNEMONIC_JNP, sim_jcc},
	{ZYDIS_MNEMONIC_JL, sim_jcc},
	{ZYDIS_MNEMONIC_JNL, sim_jcc},
	{ZYDIS_MNEMONIC_JLE, sim_jcc},
	{ZYDIS_MNEMONIC_JNLE, sim_jcc},
	{ZYDIS_MNEMONIC_JRCXZ, sim_loop},
	{ZYDIS_MNEMONIC_JECXZ, sim_loop},
	{ZYDIS_MNEMONIC_LOOP, sim_loop},
	{ZYDIS_MNEMONIC_LOOPE, sim_loop},
	{ZYDIS_MNEMONIC_LOOPNE, sim_loop},
	{ZYDIS_MNEMONIC_LEA, sim_lea},
	{ZYDIS_MNEMONIC_MOV, sim_mov},
	{ZYDIS_MNEMONIC_ADD, sim_add_sub_rsp},
	{ZYDIS_MNEMONIC_SUB, sim_add_sub_rsp},
};

static uint16_t sim_id(const struct x86_insn *x, const struct np_insn *n, const char **why)
{
	for (size_t i = 0; i < X86_ARRAY_SIZE(x86_sims); i++)
		if (x86_sims[i].mn == x->zi.mnemonic)
			return x86_sims[i].rule(x, n, why);
	return 0;
}

/* ------------------------------------------------------------------ */

void x86_classify(const struct x86_insn *x, uint64_t pc, struct np_insn *out)
{
	const ZydisDecodedOperand *rel = rel_operand(x), *mem = ip_mem_operand(x);

	memset(out, 0, sizeof(*out));
	out->pc = pc;
	out->len = x->zi.length;
	out->flags = control_flags(x) | other_flags(x);
	if (rel && (out->flags & NP_INSN_BRANCH)) {
		out->target = absolute(x, rel, pc);
	} else if (mem) {
		out->flags |= NP_INSN_PCREL;
		out->target = absolute(x, mem, pc);
	}
	out->reason = reject_reason(x);
	if (out->reason) {
		out->cls = NP_INSN_REJECTED;
		return;
	}
	out->sim = sim_id(x, out, &out->reason);
	out->cls = out->sim ? NP_INSN_SIMULATED : NP_INSN_OUT_OF_LINE;
}

int x86_decode(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out)
{
	struct x86_insn x;
	int err = x86_zdecode(code, avail, &x);

	if (err)
		return err;
	x86_classify(&x, pc, out);
	return 0;
}

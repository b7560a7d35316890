/* SPDX-License-Identifier: MIT */
/*
 * Decoding and classification of one riscv64 instruction.
 *
 * Validity comes from the opcode table (opcodes.c): a word no line
 * matches is not RV64GC and decodes as -EILSEQ. Then, in order:
 *
 *   1. flags: control flow from the opcode (jal, jalr, branches): a
 *      jal/jalr that writes a link register is a call, whichever the
 *      register (ra by the convention, t0 for millicode such as
 *      __riscv_save_N, anything in hand-written code), since the callee
 *      may return to the link; `jalr x0, 0(ra|t0)` is a return.
 *   2. REJECTED when a line of rv_classes[] says so, with its reason;
 *   3. SIMULATED for the control-flow forms and auipc (the trap path
 *      performs them on the register file, and relocate.c rewrites them);
 *   4. OUT_OF_LINE otherwise: every other RV64GC instruction computes
 *      the same thing at any address.
 */
#include <errno.h>

#include "arch/riscv64/opcodes.h"

struct rv_class {
	uint32_t mask, match;
	uint8_t cls;
	const char *reason;
};

#define REJECTED(mask, match, why) {mask, match, NP_INSN_REJECTED, why}
#define SIMULATE(mask, match)      {mask, match, NP_INSN_SIMULATED, NULL}

/* First match wins. */
static const struct rv_class rv_classes[] = {
	REJECTED(0xffffffffu, 0x00000073u,
		 "ecall: the kernel restarts an interrupted system call at its address"),
	REJECTED(0xffffffffu, 0x00100073u, "ebreak: another debugger's breakpoint"),
	REJECTED(0xffffffffu, 0xc0001073u, "unimp: an illegal instruction, on purpose"),
	REJECTED(0x0000007fu, 0x00000073u,
		 "system instruction (CSR access or privileged): state tied to its hart"),
	REJECTED(0x0000707fu, 0x0000100fu,
		 "fence.i: synchronises this hart's instruction fetch at its own address"),
	REJECTED(0xf800007fu, 0x1000002fu,
		 "lr: a trap or jump before the sc clears the reservation"),
	REJECTED(0xf800007fu, 0x1800002fu,
		 "sc: a trap or jump after the lr clears the reservation"),
	SIMULATE(0x0000007fu, RV_OP_JAL),
	SIMULATE(0x0000707fu, RV_OP_JALR),
	SIMULATE(0x0000007fu, RV_OP_BRANCH),
	SIMULATE(0x0000007fu, RV_OP_AUIPC),
};

static bool is_link(unsigned r)
{
	return r == RV_RA || r == RV_T0;
}

static uint32_t jalr_flags(uint32_t x)
{
	if (rv_rd(x) != RV_ZERO)
		return NP_INSN_CALL | NP_INSN_INDIRECT;
	if (is_link(rv_rs1(x)) && rv_imm_i(x) == 0)
		return NP_INSN_RET | NP_INSN_NOFALL;
	return NP_INSN_INDIRECT | NP_INSN_NOFALL;
}

static uint32_t flags_of(uint32_t x, uint64_t pc, uint64_t *target)
{
	switch (rv_opcode(x)) {
	case RV_OP_JAL:
		*target = pc + (uint64_t)rv_imm_j(x);
		if (rv_rd(x) == RV_ZERO)
			return NP_INSN_BRANCH | NP_INSN_NOFALL;
		return NP_INSN_BRANCH | NP_INSN_CALL; /* any link may be returned to */
	case RV_OP_JALR:
		return jalr_flags(x);
	case RV_OP_BRANCH:
		*target = pc + (uint64_t)rv_imm_b(x);
		return NP_INSN_BRANCH | NP_INSN_COND;
	case RV_OP_AUIPC:
		*target = pc + (uint64_t)rv_imm_u(x);
		return NP_INSN_PCREL;
	case RV_OP_SYSTEM:
		if (x == 0xc0001073u) /* unimp: ends a path, may pad */
			return NP_INSN_SYSTEM | NP_INSN_NOFALL | NP_INSN_PADDING;
		return NP_INSN_SYSTEM | (x == 0x00100073u ? NP_INSN_PADDING : 0);
	case RV_OP_MISC_MEM:
		return rv_funct3(x) == 1 ? NP_INSN_SYSTEM : 0;
	case RV_OP_AMO:
		if ((x >> 27) == 2)
			return NP_INSN_LOAD_RESERVED;
		return (x >> 27) == 3 ? NP_INSN_STORE_COND : 0;
	default:
		return x == 0x00000013u ? NP_INSN_PADDING : 0; /* nop */
	}
}

static uint16_t sim_of(uint32_t x)
{
	switch (rv_opcode(x)) {
	case RV_OP_JAL:
		return RV_SIM(RV_SIM_JAL, rv_rd(x));
	case RV_OP_JALR:
		return rv_imm_i(x) ? 0 : RV_SIM(RV_SIM_JALR, rv_rd(x) | rv_rs1(x) << 5);
	case RV_OP_AUIPC:
		return RV_SIM(RV_SIM_AUIPC, rv_rd(x));
	case RV_OP_BRANCH:
		if (rv_funct3(x) == 2 || rv_funct3(x) == 3)
			return 0;
		return RV_SIM(RV_SIM_BEQ + rv_funct3(x) - (rv_funct3(x) >= 4 ? 2 : 0),
			      rv_rs1(x) | rv_rs2(x) << 5);
	default:
		return 0;
	}
}

static void classify(uint32_t x, struct np_insn *out)
{
	out->cls = NP_INSN_OUT_OF_LINE;
	out->reason = "runs out of line";
	for (size_t i = 0; i < RV_ARRAY_SIZE(rv_classes); i++) {
		const struct rv_class *c = &rv_classes[i];

		if ((x & c->mask) != c->match)
			continue;
		out->cls = c->cls;
		out->reason = c->reason;
		break;
	}
	if (out->cls != NP_INSN_SIMULATED)
		return;
	out->sim = sim_of(x);
	if (!out->sim) { /* jalr with an offset: relocate.c rewrites it */
		out->cls = NP_INSN_OUT_OF_LINE;
		out->reason = "jalr with an offset is not simulated";
	}
}

int rv_decode(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out)
{
	struct rv_insn in;
	int err = rv_fetch(code, avail, &in);

	if (err)
		return err;
	if (!rv_lookup(in.x))
		return -EILSEQ;
	*out = (struct np_insn){.pc = pc, .len = in.len};
	out->flags = flags_of(in.x, pc, &out->target);
	classify(in.x, out);
	return 0;
}

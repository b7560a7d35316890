/* SPDX-License-Identifier: MIT */
/* The RV64GC opcode table (opcodes.c): validity and objdump's names. */
#ifndef NP_ARCH_RISCV64_OPCODES_H
#define NP_ARCH_RISCV64_OPCODES_H

#include "arch/riscv64/internal.h"

enum rv_opcode_flag {
	RV_OPC_AQRL = 1u << 1,  /* ".aq", ".rl", ".aqrl" suffix from bits 26:25 */
	RV_OPC_FSGNJ = 1u << 2, /* fmv/fneg/fabs when both sources are equal */
};

struct rv_opcode {
	const char *name;
	const char *args; /* template, see opcodes.c */
	uint32_t mask, match;
	unsigned flags;
};

extern const struct rv_opcode rv_opcodes[];
extern const size_t rv_nopcodes;

/* The first line matching x, or NULL: x is not RV64GC. */
const struct rv_opcode *rv_lookup(uint32_t x);

#endif

/* SPDX-License-Identifier: MIT */
/* USDT argument specs as GAS writes them for riscv64 (src/arch/riscv64/usdt.c):
 * what riscv64-linux-gnu-gcc put into its notes at -O0 and -O2. */
#include <errno.h>

#include "rv_test.h"
#include "unit/usdt_check.h"

#define REG NP_USDT_REG
#define MEM NP_USDT_MEM
#define CONST NP_USDT_CONST

TEST(registers_constants_and_addresses)
{
	static const struct usdt_vec v[] = {
		/* text          kind size signed base index scale shift disp sym */
		{"-4@a2", REG, 4, true, 12, NOREG, 1, 0, 0, NULL},
		{"-8@a1", REG, 8, true, 11, NOREG, 1, 0, 0, NULL},
		{"8@s11", REG, 8, false, 27, NOREG, 1, 0, 0, NULL},
		{"8@x10", REG, 8, false, 10, NOREG, 1, 0, 0, NULL},
		{"8@fp", REG, 8, false, 8, NOREG, 1, 0, 0, NULL},
		{"8@zero", CONST, 8, false, NOREG, NOREG, 1, 0, 0, NULL},
		{"-4@42", CONST, 4, true, NOREG, NOREG, 1, 0, 42, NULL},
		{"-8@-7", CONST, 8, true, NOREG, NOREG, 1, 0, -7, NULL},
		{"-4@-36(s0)", MEM, 4, true, 8, NOREG, 1, 0, -36, NULL},
		{"-8@0(a0)", MEM, 8, true, 10, NOREG, 1, 0, 0, NULL},
		{"-2@4(a5)", MEM, 2, true, 15, NOREG, 1, 0, 4, NULL},
		{"8@(sp)", MEM, 8, false, 2, NOREG, 1, 0, 0, NULL},
	};
	check_usdt_good(ISA, v, sizeof(v) / sizeof(*v));
}

TEST(what_cannot_be_read_right_is_refused_with_its_reason)
{
	static const struct usdt_bad v[] = {
		{"a0", "no size"},
		{"4@a8", "neither a register"},
		{"4@x32", "neither a register"},
		{"4@8(a8)", "unknown base register"},
		{"4@8(a0", "does not end with ')'"},
		{"4@8(a0)x", "does not end with ')'"},
		{"4@8x", "text after the constant"},
		{"4@a0,", "text after the register"},
	};
	check_usdt_bad(ISA, v, sizeof(v) / sizeof(*v));
}

TEST_MAIN()

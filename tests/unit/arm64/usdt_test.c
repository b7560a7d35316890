/* SPDX-License-Identifier: MIT */
/* USDT argument specs as GAS writes them for arm64 (src/arch/arm64/usdt.c):
 * what aarch64-linux-gnu-gcc put into its notes at -O0 and -O2. */
#include <errno.h>

#include "a64_test.h"
#include "unit/usdt_check.h"

#define REG NP_USDT_REG
#define MEM NP_USDT_MEM
#define CONST NP_USDT_CONST

TEST(registers_constants_and_addresses)
{
	static const struct usdt_vec v[] = {
		/* text          kind size signed base index scale shift disp sym */
		{"-4@x2", REG, 4, true, 2, NOREG, 1, 0, 0, NULL},
		{"8@x30", REG, 8, false, 30, NOREG, 1, 0, 0, NULL},
		{"-4@w7", REG, 4, true, 7, NOREG, 1, 0, 0, NULL},
		{"8@sp", REG, 8, false, 31, NOREG, 1, 0, 0, NULL},
		{"8@fp", REG, 8, false, 29, NOREG, 1, 0, 0, NULL},
		{"8@xzr", CONST, 8, false, NOREG, NOREG, 1, 0, 0, NULL},
		{"-4@42", CONST, 4, true, NOREG, NOREG, 1, 0, 42, NULL},
		{"-8@-7", CONST, 8, true, NOREG, NOREG, 1, 0, -7, NULL},
		{"4@#5", CONST, 4, false, NOREG, NOREG, 1, 0, 5, NULL},
		{"-4@[sp, 12]", MEM, 4, true, 31, NOREG, 1, 0, 12, NULL},
		{"-2@[x0, 4]", MEM, 2, true, 0, NOREG, 1, 0, 4, NULL},
		{"-8@[x0]", MEM, 8, true, 0, NOREG, 1, 0, 0, NULL},
		{"8@[x29, #-8]", MEM, 8, false, 29, NOREG, 1, 0, -8, NULL},
	};
	check_usdt_good(ISA, v, sizeof(v) / sizeof(*v));
}

TEST(what_cannot_be_read_right_is_refused_with_its_reason)
{
	static const struct usdt_bad v[] = {
		{"x0", "no size"},
		{"4@x31", "neither a register"},
		{"4@x01", "neither a register"},
		{"8@[x0, x1]", "not a constant"},
		{"8@[x0, x1, lsl 3]", "not a constant"},
		{"8@[x0, 8]!", "writeback"},
		{"8@[x0, 8", "does not end with ']'"},
		{"8@[xzr]", "unknown base register"},
		{"8@x0 4", "text after the register"},
		{"8@=sym", "neither a register"},
	};
	check_usdt_bad(ISA, v, sizeof(v) / sizeof(*v));
}

TEST(brackets_keep_their_space_when_a_note_is_split)
{
	struct np_usdt_span s[NP_USDT_MAX_ARGS];
	const char *args = "-4@[sp, 12] 1@[sp, 11] -8@x1";
	CHECK_EQ(np_usdt_split(args, s, NP_USDT_MAX_ARGS), 3);
	CHECK_EQ(s[0].len, 11);
	CHECK_EQ(s[1].off, 12);
	CHECK_EQ(s[1].len, 10);
	CHECK_EQ(s[2].off, 23);
}

TEST_MAIN()

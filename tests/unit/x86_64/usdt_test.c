/* SPDX-License-Identifier: MIT */
/* USDT argument specs in x86-64's AT&T syntax (src/arch/x86_64/usdt.c), and
 * the parts every ISA shares: the size prefix, the splitting of a note's
 * argument string. The good ones are what GCC and Python 3.11 wrote into
 * their notes. */
#include <errno.h>

#include "unit/usdt_check.h"
#include "x86_test.h"

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };
#define REG NP_USDT_REG
#define MEM NP_USDT_MEM
#define CONST NP_USDT_CONST

TEST(registers_of_every_width_read_their_64_bit_register)
{
	static const struct usdt_vec v[] = {
		/* text          kind size signed base index scale shift disp sym */
		{"-4@%edi", REG, 4, true, RDI, NOREG, 1, 0, 0, NULL},
		{"8@%rbx", REG, 8, false, RBX, NOREG, 1, 0, 0, NULL},
		{"-8@%r12", REG, 8, true, R12, NOREG, 1, 0, 0, NULL},
		{"-2@%r8w", REG, 2, true, R8, NOREG, 1, 0, 0, NULL},
		{"4@%r15d", REG, 4, false, R15, NOREG, 1, 0, 0, NULL},
		{"1@%cl", REG, 1, false, RCX, NOREG, 1, 0, 0, NULL},
		{"-1@%r9b", REG, 1, true, R9, NOREG, 1, 0, 0, NULL},
		{"1@%dil", REG, 1, false, RDI, NOREG, 1, 0, 0, NULL},
		{"1@%ah", REG, 1, false, RAX, NOREG, 1, 8, 0, NULL},
		{"-2@%dx", REG, 2, true, RDX, NOREG, 1, 0, 0, NULL},
	};
	check_usdt_good(ISA, v, sizeof(v) / sizeof(*v));
}

TEST(constants_and_memory_operands_say_where_the_value_is)
{
	static const struct usdt_vec v[] = {
		{"-4@$42", CONST, 4, true, NOREG, NOREG, 1, 0, 42, NULL},
		{"-8@$-7", CONST, 8, true, NOREG, NOREG, 1, 0, -7, NULL},
		{"8@$0x10", CONST, 8, false, NOREG, NOREG, 1, 0, 16, NULL},
		{"-4@-20(%rbp)", MEM, 4, true, RBP, NOREG, 1, 0, -20, NULL},
		{"-4@112(%rsp)", MEM, 4, true, RSP, NOREG, 1, 0, 112, NULL},
		{"8@(%rax)", MEM, 8, false, RAX, NOREG, 1, 0, 0, NULL},
		{"8@8(%rax,%rdx,8)", MEM, 8, false, RAX, RDX, 8, 0, 8, NULL},
		{"-8@(%rdi,%rsi,8)", MEM, 8, true, RDI, RSI, 8, 0, 0, NULL},
		{"4@(%r13,%r14)", MEM, 4, false, R13, R14, 1, 0, 0, NULL},
		{"2@16(,%rcx,2)", MEM, 2, false, NOREG, RCX, 2, 0, 16, NULL},
		{"-8@g(%rip)", MEM, 8, true, NOREG, NOREG, 1, 0, 0, "g"},
		{"-2@4+gs(%rip)", MEM, 2, true, NOREG, NOREG, 1, 0, 4, "gs"},
		{"4@counter.1-8(%rip)", MEM, 4, false, NOREG, NOREG, 1, 0, -8, "counter.1"},
		{"8@table(,%rax,8)", MEM, 8, false, NOREG, RAX, 8, 0, 0, "table"},
		{"8@gvar", MEM, 8, false, NOREG, NOREG, 1, 0, 0, "gvar"},
		{"4@6295616", MEM, 4, false, NOREG, NOREG, 1, 0, 6295616, NULL},
	};
	check_usdt_good(ISA, v, sizeof(v) / sizeof(*v));
}

TEST(what_cannot_be_read_right_is_refused_with_its_reason)
{
	static const struct usdt_bad v[] = {
		{"%edi", "no size"},
		{"3@%edi", "not 1, 2, 4 or 8"},
		{"16@%rax", "not 1, 2, 4 or 8"},
		{"-4@", "no operand"},
		{"4@%eaz", "unknown register"},
		{"4@%eax+1", "text after the register"},
		{"4@%fs:28", "segment-relative"},
		{"8@%fs:x@tpoff", "segment-relative"},
		{"4@$x", "not an integer"},
		{"4@$99999999999999999999", "not an integer"},
		{"8@8(%eax)", "not 64 bits"},
		{"8@8(%rax,%rsp,8)", "index register"},
		{"8@8(%rax,%rdx,3)", "scale"},
		{"8@8(%rax", "does not end with ')'"},
		{"8@8(%rip)", "without a symbol"},
		{"8@a+b(%rip)", "two symbols"},
		{"8@-a(%rip)", "subtracted"},
		{"8@8()", "no register"},
		{"2@%ah", "high byte register"},
		{"8@x(%rip) y", "text after the operand"},
	};
	check_usdt_bad(ISA, v, sizeof(v) / sizeof(*v));
}

TEST(a_note_splits_into_its_arguments_at_spaces)
{
	struct np_usdt_span s[NP_USDT_MAX_ARGS];
	const char *args = "8@%rbp 8@%r12  -4@%eax";
	CHECK_EQ(np_usdt_split(args, s, NP_USDT_MAX_ARGS), 3);
	CHECK_EQ(s[0].off, 0);
	CHECK_EQ(s[0].len, 6);
	CHECK_EQ(s[1].off, 7);
	CHECK_EQ(s[2].off, 15);
	CHECK_EQ(s[2].len, 7);
	CHECK_EQ(np_usdt_split("", s, NP_USDT_MAX_ARGS), 0);
	CHECK_EQ(np_usdt_split("1@%al 1@%al 1@%al", s, 2), -E2BIG);
}

TEST_MAIN()

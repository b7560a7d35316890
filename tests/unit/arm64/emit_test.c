/* SPDX-License-Identifier: MIT */
/* The JUMP patch, the breakpoint and the jump of any reach. */
#include <errno.h>

#include "a64_test.h"

#define MIB (1ull << 20)

TEST(jump_patch_is_one_b_that_decodes_to_its_target)
{
	uint8_t b[4];
	struct np_insn in;

	CHECK_EQ(ISA->emit_jump(b, PC, PC + 100 * MIB), 4);
	CHECK_EQ(ISA->decode(b, 4, PC, &in), 0);
	CHECK_EQ(in.flags, NP_INSN_BRANCH | NP_INSN_NOFALL);
	CHECK_EQ(in.target, PC + 100 * MIB);
	CHECK_EQ(ISA->emit_jump(b, PC + 128 * MIB, PC), 4);
	CHECK_EQ(ISA->decode(b, 4, PC + 128 * MIB, &in), 0);
	CHECK_EQ(in.target, PC);
}

TEST(jump_patch_beyond_128_mib_is_erange)
{
	uint8_t b[4];

	CHECK_EQ(ISA->emit_jump(b, PC, PC + 128 * MIB), -ERANGE);
	CHECK_EQ(ISA->emit_jump(b, PC + 128 * MIB + 4, PC), -ERANGE);
	CHECK(PC + ISA->jump_reach < PC + 128 * MIB);
}

TEST(trap_is_nanoprobes_brk_and_decodes_as_a_present_breakpoint)
{
	uint8_t b[4];
	struct np_insn in;

	CHECK_EQ(ISA->emit_trap(b), 4);
	CHECK_EQ(a64_at(b), 0xd42dce00u); /* brk #0x6e70 */
	CHECK_EQ(ISA->decode(b, 4, PC, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_REJECTED);
	CHECK(strstr(in.reason, "breakpoint") != NULL);
}

TEST(jump_any_is_a_b_when_in_reach_and_the_x16_veneer_beyond)
{
	uint8_t b[16];
	uint64_t to;

	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), PC, PC + MIB), 4);
	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), PC, PC + (1ull << 32)), 16);
	CHECK_EQ(a64_at(b), 0x58000050u);     /* ldr x16, .+8 */
	CHECK_EQ(a64_at(b + 4), 0xd61f0200u); /* br x16 */
	memcpy(&to, b + 8, 8);
	CHECK_EQ(to, PC + (1ull << 32));
	CHECK_EQ(ISA->emit_jump_any(b, 8, PC, PC + (1ull << 32)), -ENOSPC);
}

TEST_MAIN()

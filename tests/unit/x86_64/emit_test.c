/* SPDX-License-Identifier: MIT */
/* The JUMP patch, the breakpoint, jumps of any reach, and the contract's
 * constants. */
#include <errno.h>

#include "x86_test.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

TEST(jump_patch_is_e9_rel32_from_the_end_of_the_patch)
{
	uint8_t b[5];

	CHECK_EQ(ISA->emit_jump(b, 0x401000, 0x501000), 5);
	CHECK_EQ(b[0], 0xe9);
	CHECK_EQ(le32(b + 1), 0x501000 - 0x401005);
	CHECK_EQ(ISA->emit_jump(b, 0x401000, 0x301000), 5);
	CHECK_EQ(le32(b + 1), (uint32_t)(0x301000 - 0x401005));
}

TEST(jump_patch_out_of_rel32_reach_is_erange)
{
	uint8_t b[5];

	CHECK_EQ(ISA->emit_jump(b, 0x401000, 0x401005 + 0x80000000ull), -ERANGE);
	CHECK_EQ(ISA->emit_jump(b, 0x401000, 0x401005 + 0x7fffffffull), 5);
	CHECK_EQ(ISA->emit_jump(b, 0x7f0000000000ull, 0x1000), -ERANGE);
}

TEST(trap_is_int3)
{
	uint8_t b[1];

	CHECK_EQ(ISA->emit_trap(b), 1);
	CHECK_EQ(b[0], 0xcc);
	CHECK_EQ(ISA->trap_len, 1);
}

TEST(jump_any_is_as_short_as_the_distance_allows)
{
	uint8_t b[16];
	const uint8_t abs[] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
	uint64_t far = 0x7f0000001234ull;

	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), 0x401000, 0x401000 + 2 + 127), 2);
	CHECK(b[0] == 0xeb && b[1] == 127);
	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), 0x401000, 0x401000 + 2 - 128), 2);
	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), 0x401000, 0x401000 + 2 + 128), 5);
	CHECK_EQ(b[0], 0xe9);
	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), 0x401000, far), 14);
	CHECK(memcmp(b, abs, sizeof(abs)) == 0);
	CHECK_EQ(le32(b + 6), (uint32_t)far);
	CHECK_EQ(le32(b + 10), (uint32_t)(far >> 32));
}

TEST(jump_any_without_room_is_enospc)
{
	uint8_t b[16];

	CHECK_EQ(ISA->emit_jump_any(b, 1, 0x401000, 0x401010), -ENOSPC);
	CHECK_EQ(ISA->emit_jump_any(b, 4, 0x401000, 0x501000), -ENOSPC);
	CHECK_EQ(ISA->emit_jump_any(b, 13, 0x401000, 0x7f0000001234ull), -ENOSPC);
}

TEST(contract_constants_describe_x86_64)
{
	static const uint8_t args[] = {7, 6, 2, 1, 8, 9}; /* rdi rsi rdx rcx r8 r9 */

	CHECK_STR(ISA->name, "x86_64");
	CHECK_EQ(ISA->jump_len, 5);
	CHECK_EQ(ISA->max_insn, 15);
	CHECK_EQ(ISA->insn_align, 1);
	CHECK(ISA->jump_reach >= 0x7f000000 && ISA->jump_reach <= 0x7fffffff);
	CHECK_EQ(ISA->nargs_reg, 6);
	CHECK(memcmp(ISA->arg_regs, args, sizeof(args)) == 0);
	CHECK_EQ(ISA->ret_reg, 0);
	CHECK_EQ(ISA->sp_reg, 4);
	CHECK_STR(ISA->reg_names[0], "rax");
	CHECK_STR(ISA->reg_names[4], "rsp");
	CHECK_STR(ISA->reg_names[7], "rdi");
	CHECK_STR(ISA->reg_names[15], "r15");
	CHECK(ISA->reg_names[16] == NULL && ISA->reg_names[NP_NGPR - 1] == NULL);
}

TEST_MAIN()

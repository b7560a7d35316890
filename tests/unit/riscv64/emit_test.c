/* SPDX-License-Identifier: MIT */
/* The JUMP patch, the breakpoint, and jumps through a scratch register. */
#include <errno.h>

#include "rv_test.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static uint64_t jump_dest(const uint8_t *b, size_t n, uint64_t from)
{
	struct np_insn in;

	CHECK_EQ(ISA->decode(b, n, from, &in), 0);
	if (in.flags & NP_INSN_PCREL) { /* auipc r ; jalr zero,lo(r) */
		uint32_t y = rv_le32(b + 4);

		CHECK_EQ(y & 0x7f, 0x67);
		CHECK_EQ(y >> 7 & 31, 0);
		CHECK_EQ(y >> 15 & 31, rv_le32(b) >> 7 & 31);
		return in.target + (uint64_t)((int64_t)(int32_t)y >> 20);
	}
	CHECK(in.flags & NP_INSN_BRANCH);
	CHECK(in.flags & NP_INSN_NOFALL);
	return in.target;
}

TEST(jump_patch_is_a_jal_zero_within_one_mib)
{
	uint8_t b[4];

	CHECK_EQ(ISA->jump_len, 4);
	CHECK_EQ(ISA->emit_jump(b, 0x10000, 0x10000 + MIB - 2), 0);
	CHECK_EQ(jump_dest(b, 4, 0x10000), 0x10000 + MIB - 2);
	CHECK_EQ(ISA->emit_jump(b, 0x200000, 0x200000 - MIB), 0);
	CHECK_EQ(jump_dest(b, 4, 0x200000), 0x200000 - MIB);
	CHECK_EQ(ISA->emit_jump(b, 0x10000, 0x10000 + MIB), -ERANGE);
}

TEST(breakpoint_is_c_ebreak)
{
	uint8_t b[2];
	char text[16];

	CHECK_EQ(ISA->trap_len, 2);
	CHECK_EQ(ISA->emit_trap(b), 0);
	CHECK_EQ(b[0] | b[1] << 8, 0x9002);
	CHECK(ISA->format(b, 2, 0, text, sizeof(text)) > 0);
	CHECK_STR(text, "ebreak");
}

TEST(jump_via_picks_jal_when_near_and_a_scratch_register_when_far)
{
	uint8_t b[16];
	uint64_t from = 0x3ff7a00000ull;

	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), from, from + 4096, 1ull << 6), 4);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), from, from + GIB + 2, 1ull << 6), 8);
	CHECK_EQ(rv_le32(b) >> 7 & 31, 6);
	CHECK_EQ(jump_dest(b, 8, from), from + GIB + 2);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), from, from - 2 * GIB + 4096, 1ull << 6), 8);
	CHECK_EQ(jump_dest(b, 8, from), from - 2 * GIB + 4096);
}

TEST(jump_via_never_uses_x0_and_fails_without_a_register)
{
	uint8_t b[16];

	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), 0x10000, 0x10000 + GIB, 1), -ERANGE);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), 0x10000, 0x10000 + GIB, 0), -ERANGE);
	CHECK_EQ(ISA->emit_jump_any(b, sizeof(b), 0x10000, 0x10000 + GIB), -ERANGE);
}

TEST(jump_via_beyond_two_gib_is_erange)
{
	uint8_t b[16];

	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), 0x10000, 0x10000 + 4 * GIB, 1ull << 6), -ERANGE);
}

TEST(jump_via_into_a_small_buffer_is_enospc)
{
	uint8_t b[8];

	CHECK_EQ(ISA->emit_jump_via(b, 4, 0x10000, 0x10000 + GIB, 1ull << 6), -ENOSPC);
	CHECK_EQ(ISA->emit_jump_via(b, 2, 0x10000, 0x10008, 0), -ENOSPC);
}

TEST_MAIN()

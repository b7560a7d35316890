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

/* Arm ARM B2.2.5: another thread may execute a word while it changes
 * only when the old and the new word are both one of b, bl, brk, hvc,
 * isb, nop, smc, svc. */
static bool needs_stop(uint32_t old, uint32_t new_)
{
	uint8_t a[4], b[4];

	a64_le(a, old);
	a64_le(b, new_);
	return ISA->patch_needs_stop(a, b, 4, PC);
}

TEST(patch_needs_stop_unless_both_words_are_concurrently_modifiable)
{
	const uint32_t b = 0x14000010, bl = 0x94000010, nop = 0xd503201f, isb = 0xd5033fdf;
	const uint32_t svc = 0xd4000001, hvc = 0xd4000002, smc = 0xd4000003;
	const uint32_t stp = 0xa9bf7bfd, add = 0x8b020029, adrp = 0x90000010;
	uint32_t brk;
	uint8_t w[4];

	ISA->emit_trap(w);
	brk = a64_at(w);
	CHECK(!needs_stop(brk, b));   /* the JUMP's second step */
	CHECK(!needs_stop(b, brk));   /* removal's first step */
	CHECK(!needs_stop(b, 0x14000020)); /* a b re-pointed */
	CHECK(!needs_stop(nop, b));
	CHECK(!needs_stop(bl, brk));
	CHECK(!needs_stop(isb, svc) && !needs_stop(hvc, smc));
	CHECK(needs_stop(stp, brk));  /* an arbitrary word to the breakpoint */
	CHECK(needs_stop(brk, add));  /* and back */
	CHECK(needs_stop(stp, b));
	CHECK(needs_stop(adrp, brk));
	CHECK(!needs_stop(add, add)); /* nothing changes */
}

TEST(patch_needs_stop_looks_at_every_word_that_changes)
{
	uint8_t old[12], new_[12];

	a64_le(old, 0x8b020029);     /* add, add, add ... */
	a64_le(old + 4, 0x8b020029);
	a64_le(old + 8, 0x8b020029);
	memcpy(new_, old, sizeof(new_));
	CHECK(!ISA->patch_needs_stop(old, new_, 12, PC));
	CHECK_EQ(ISA->emit_jump_via(new_, sizeof(new_), PC, PC + (1ull << 30), 1ull << 16), 12);
	CHECK(ISA->patch_needs_stop(old, new_, 12, PC)); /* adrp; add; br */
	CHECK(ISA->patch_needs_stop(old, old, 4, PC + 2)); /* misaligned: never atomic */
}

TEST_MAIN()

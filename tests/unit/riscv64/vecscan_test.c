/* SPDX-License-Identifier: MIT */
/* Does a handler touch floating-point state? (vector_state_used) */
#include "rv_test.h"

#define FN 0x10000ull

static int scan(const uint64_t *words)
{
	struct rv_code c;
	struct fake_mem m;
	struct np_mem mem;

	rv_code(&c, words);
	fake_mem_init(&m, FN);
	memcpy(m.buf, c.b, c.len);
	mem = fake_mem_ops(&m);
	return ISA->vector_state_used(FN, &mem);
}

TEST(integer_code_that_returns_uses_no_fp_state)
{
	/* addi a0,a0,1 ; beqz a0,.+6 ; c.addi a0,-1 ; ret */
	CHECK_EQ(scan((const uint64_t[]){I32(0x00150513), I32(0x00050363), C16(0x157d),
					 I32(0x00008067), 0}), 0);
}

TEST(an_fp_load_on_either_side_of_a_branch_is_found)
{
	/* beqz a0,.+8 ; ret ; fld fa0,8(sp) ; ret */
	CHECK_EQ(scan((const uint64_t[]){I32(0x00050463), I32(0x00008067), I32(0x00813507),
					 I32(0x00008067), 0}), 1);
}

TEST(a_direct_call_is_followed_into_the_callee)
{
	/* jal .+8 ; ret ; fadd.d fa0,fa1,fa2 ; ret */
	CHECK_EQ(scan((const uint64_t[]){I32(0x008000ef), I32(0x00008067), I32(0x02c5f553),
					 I32(0x00008067), 0}), 1);
	/* jal .+8 ; ret ; addi a0,a0,1 ; ret */
	CHECK_EQ(scan((const uint64_t[]){I32(0x008000ef), I32(0x00008067), I32(0x00150513),
					 I32(0x00008067), 0}), 0);
}

TEST(an_indirect_call_or_a_csr_access_is_assumed_to_use_it)
{
	/* jalr a5 ; ret */
	CHECK_EQ(scan((const uint64_t[]){C16(0x9782), I32(0x00008067), 0}), 1);
	/* frflags a0 ; ret */
	CHECK_EQ(scan((const uint64_t[]){I32(0x00102573), I32(0x00008067), 0}), 1);
}

TEST(unreadable_code_is_assumed_to_use_it)
{
	struct fake_mem m;
	struct np_mem mem;

	fake_mem_init(&m, FN);
	mem = fake_mem_ops(&m);
	CHECK_EQ(ISA->vector_state_used(FN + 0x100000, &mem), 1);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/* Branch targets of a whole function, and the jumps that cannot be resolved. */
#include "rv_test.h"

#define FN 0x10000ull

struct seen {
	uint64_t t[16];
	size_t n;
};

static void found(void *cookie, uint64_t target)
{
	struct seen *s = cookie;

	if (s->n < 16)
		s->t[s->n++] = target;
}

TEST(direct_branches_and_calls_report_their_targets)
{
	struct rv_code c;
	struct seen s = {.n = 0};
	struct np_mem mem = {NULL, NULL, NULL};

	/* beqz a0,.+12 ; jal .+0x1000 ; c.j .-4 ; ret */
	rv_code(&c, (const uint64_t[]){I32(0x00050663), I32(0x000010ef), C16(0xbff5),
				       I32(0x00008067), 0});
	CHECK_EQ(ISA->branch_targets(c.b, c.len, FN, &mem, found, &s), 0);
	CHECK_EQ(s.n, 3);
	CHECK_EQ(s.t[0], FN + 12);
	CHECK_EQ(s.t[1], FN + 4 + 0x1000);
	CHECK_EQ(s.t[2], FN + 8 - 4);
}

TEST(an_indirect_jump_is_unresolved_but_calls_and_returns_are_not)
{
	struct rv_code c;
	struct seen s = {.n = 0};
	struct np_mem mem = {NULL, NULL, NULL};

	/* jalr a5 ; jr a5 ; ret ; c.jr t0 */
	rv_code(&c, (const uint64_t[]){I32(0x000780e7), I32(0x00078067), I32(0x00008067),
				       C16(0x8282), 0});
	CHECK_EQ(ISA->branch_targets(c.b, c.len, FN, &mem, found, &s), 1);
	CHECK_EQ(s.n, 0);
}

TEST(undecodable_runs_count_once_each)
{
	struct rv_code c;
	struct seen s = {.n = 0};
	struct np_mem mem = {NULL, NULL, NULL};

	/* two V-extension words, nop, one more */
	rv_code(&c, (const uint64_t[]){I32(0x02000057), I32(0x02000057), I32(0x00000013),
				       I32(0x02000057), 0});
	CHECK_EQ(ISA->branch_targets(c.b, c.len, FN, &mem, found, &s), 2);
}

TEST_MAIN()

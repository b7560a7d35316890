/* SPDX-License-Identifier: MIT */
/* Branch targets of a whole function, and the jumps that cannot be resolved. */
#include "rv_test.h"

#define FN 0x10000ull

struct seen {
	uint64_t t[16];
	size_t n;
};

static void found(void *cookie, uint64_t from, uint64_t target)
{
	struct seen *s = cookie;

	(void)from;
	if (s->n < 16)
		s->t[s->n++] = target;
}

static int scan(const uint8_t *code, size_t len, const struct np_mem *mem, struct seen *s)
{
	struct np_branch_sink sink = {found, NULL, NULL, s};

	return ISA->branch_targets(code, len, FN, mem, &sink);
}

TEST(direct_branches_and_calls_report_their_targets)
{
	struct rv_code c;
	struct seen s = {.n = 0};
	struct np_mem mem = {NULL, NULL, NULL};

	/* beqz a0,.+12 ; jal .+0x1000 ; c.j .-4 ; ret */
	rv_code(&c, (const uint64_t[]){I32(0x00050663), I32(0x000010ef), C16(0xbff5),
				       I32(0x00008067), 0});
	CHECK_EQ(scan(c.b, c.len, &mem, &s), 0);
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
	CHECK_EQ(scan(c.b, c.len, &mem, &s), 1);
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
	CHECK_EQ(scan(c.b, c.len, &mem, &s), 2);
}

/* Whether a tail call after the frame's release lands inside the
 * function is the planner's stack heights' to say (tests/unit/plan/). */
TEST(an_indirect_jump_after_the_frame_is_released_is_still_unresolved)
{
	struct rv_code c;
	struct seen s = {.n = 0};
	struct np_mem mem = {NULL, NULL, NULL};

	/* ld a5,32(a0) ; addi sp,sp,16 ; jr a5 */
	rv_code(&c, (const uint64_t[]){C16(0x711c), C16(0x0141), C16(0x8782), 0});
	CHECK_EQ(scan(c.b, c.len, &mem, &s), 1);
}

/* The switch table GCC emits for PIC code, assembled and linked at FN by
 * riscv64-linux-gnu-as/ld: four int32 entries relative to the table. */
static const uint8_t switch_fn[] = {
	0x8d, 0x47,             /* li    a5,3 */
	0x63, 0xe1, 0xa7, 0x02, /* bltu  a5,a0,0x10024 */
	0x17, 0x07, 0x00, 0x00, /* auipc a4,0x0 */
	0x13, 0x07, 0x27, 0x02, /* add   a4,a4,34: the table, 0x10028 */
	0x0a, 0x05,             /* sll   a0,a0,0x2 */
	0x3a, 0x95,             /* add   a0,a0,a4 */
	0x1c, 0x41,             /* lw    a5,0(a0) */
	0xba, 0x97,             /* add   a5,a5,a4 */
	0x82, 0x87,             /* jr    a5 */
	0x05, 0x45, 0x82, 0x80, /* L0: li a0,1 ; ret */
	0x09, 0x45, 0x82, 0x80, /* L1: li a0,2 ; ret */
	0x0d, 0x45, 0x82, 0x80, /* L2: li a0,3 ; ret */
	0x01, 0x45, 0x82, 0x80, /* default: li a0,0 ; ret */
	0xf0, 0xff, 0xff, 0xff, 0xf4, 0xff, 0xff, 0xff, /* L0-tbl, L1-tbl */
	0xf8, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0xff, /* L2-tbl, L0-tbl */
};

static bool seen(const struct seen *s, uint64_t t)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i] == t)
			return true;
	return false;
}

TEST(a_pic_switch_table_is_resolved_to_its_entries)
{
	struct fake_mem m;
	struct np_mem mem;
	struct seen s = {.n = 0};

	fake_mem_init(&m, FN);
	memcpy(m.buf, switch_fn, sizeof(switch_fn));
	mem = fake_mem_ops(&m);
	CHECK_EQ(scan(switch_fn, 0x28, &mem, &s), 0);
	CHECK(seen(&s, FN + 0x24)); /* the bound's default */
	CHECK(seen(&s, FN + 0x18));
	CHECK(seen(&s, FN + 0x1c));
	CHECK(seen(&s, FN + 0x20));
	CHECK_EQ(s.n, 1 + 4);
}

TEST(a_switch_table_without_its_bound_check_is_unresolved)
{
	uint8_t code[sizeof(switch_fn)];
	struct fake_mem m;
	struct np_mem mem;
	struct seen s = {.n = 0};

	memcpy(code, switch_fn, sizeof(code));
	code[0] = 0x01; /* li a5,3 -> nop: the bound is unknown */
	code[1] = 0x00;
	fake_mem_init(&m, FN);
	memcpy(m.buf, code, sizeof(code));
	mem = fake_mem_ops(&m);
	CHECK_EQ(scan(code, 0x28, &mem, &s), 1);
}

TEST(a_switch_table_that_cannot_be_read_is_unresolved)
{
	struct seen s = {.n = 0};
	struct fake_mem m;
	struct np_mem mem;

	fake_mem_init(&m, FN + 0x100000); /* the table is not there */
	mem = fake_mem_ops(&m);
	CHECK_EQ(scan(switch_fn, 0x28, &mem, &s), 1);
}

TEST_MAIN()

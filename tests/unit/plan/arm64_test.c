/* SPDX-License-Identifier: MIT */
/*
 * The planner on arm64 code: b (one word, +-128 MiB), or adrp+add+br
 * through a free register, or brk. Each function is its words with
 * aarch64-linux-gnu-objdump's text beside.
 */
#include "plan_test.h"

#define ISA (&np_isa_arm64)
#define BASE 0x400000ull

static const struct np_plan_places near = {BASE - 0x1000, BASE + 0x10000, 0};
static const struct np_plan_places far = {BASE - (1ull << 30), BASE + (1ull << 30), 0};

static const uint8_t excl[] = {
	0x01, 0xfc, 0x5f, 0x88, /* +0  ldaxr w1, [x0] */
	0x21, 0x04, 0x00, 0x11, /* +4  add w1, w1, #0x1 */
	0x01, 0xfc, 0x02, 0x88, /* +8  stlxr w2, w1, [x0] */
	0xa2, 0xff, 0xff, 0x35, /* +12 cbnz w2, +0 */
	0xc0, 0x03, 0x5f, 0xd6, /* +16 ret */
};

/* A trap or a trampoline between a load- and a store-exclusive clears
 * the monitor: the store fails every time, and the loop never ends. */
TEST(arm64_words_of_an_exclusive_retry_loop_are_refused)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, excl, sizeof(excl));
	fake_view(&v, ISA, &h, BASE + sizeof(excl), BASE + sizeof(excl), true, BASE, 0);
	for (unsigned off = 0; off <= 8; off += 4) {
		CHECK_EQ(fake_site(&v, BASE + off, &near, &s), -EOPNOTSUPP);
		CHECK_EQ(s.kind, NP_SITE_REFUSED);
		CHECK(strstr(s.why, "exclusive") || strstr(s.why, "lr/sc"));
	}
	fake_site(&v, BASE + 12, &near, &s); /* after the store: the retry branch */
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	fake_site(&v, BASE + 16, &near, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_STR(np_plan_form_name(ISA, s.plan.form), "b");
	np_fn_view_free(&v);
}

static const uint8_t frame[] = {
	0xfd, 0x7b, 0xbf, 0xa9, /* +0  stp x29, x30, [sp, #-16]! */
	0xfd, 0x03, 0x00, 0x91, /* +4  mov x29, sp */
	0xfd, 0x7b, 0xc1, 0xa8, /* +8  ldp x29, x30, [sp], #16 */
	0xc0, 0x03, 0x5f, 0xd6, /* +12 ret */
};

TEST(arm64_one_word_b_needs_no_free_register)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	fake_view(&v, ISA, &h, BASE + sizeof(frame), BASE + sizeof(frame), true, BASE, 0);
	for (unsigned off = 0; off < sizeof(frame); off += 4) {
		CHECK_EQ(fake_site(&v, BASE + off, &near, &s), 0);
		CHECK_EQ(s.kind, NP_SITE_JUMP);
		CHECK_EQ(s.plan.ninsn, 1);
		CHECK_EQ(s.plan.form, NP_JUMP_SHORT);
	}
	np_fn_view_free(&v);
}

/* Beyond b's reach: adrp+add+br (12 bytes) through a register free at
 * the site; at an entry x16 and x17 are, since veneers and PLT stubs
 * may clobber them at any call. */
TEST(arm64_beyond_b_reach_the_long_form_goes_through_x16_at_an_entry)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	fake_view(&v, ISA, &h, BASE + sizeof(frame), BASE + sizeof(frame), true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &far, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_LONG);
	CHECK_STR(np_plan_form_name(ISA, s.plan.form), "adrp+add+br");
	CHECK_EQ(s.plan.jump_len, 12);
	CHECK_EQ(np_plan_long_len(ISA, BASE), 12);
	CHECK(s.plan.via & (1ull << 16 | 1ull << 17));
	CHECK_EQ(s.plan.end, BASE + 12);
	np_fn_view_free(&v);
}

TEST_MAIN()

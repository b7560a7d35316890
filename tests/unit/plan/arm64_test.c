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

/* The long form displaces three words: an indirect jump whose targets
 * are unknown may not land on the second or the third. br x16 after the
 * frame is popped runs at the entry's height, the prologue's words after
 * the first at 32 below it: it cannot land there. */
static const uint8_t tail_call[] = {
	0xfd, 0x7b, 0xbe, 0xa9, /* +0  stp x29, x30, [sp, #-32]! */
	0xfd, 0x03, 0x00, 0x91, /* +4  mov x29, sp */
	0xf3, 0x0b, 0x00, 0xf9, /* +8  str x19, [sp, #16] */
	0x10, 0x00, 0x01, 0x8b, /* +12 add x16, x0, x1: a computed target */
	0xf3, 0x0b, 0x40, 0xf9, /* +16 ldr x19, [sp, #16] */
	0xfd, 0x7b, 0xc2, 0xa8, /* +20 ldp x29, x30, [sp], #32 */
	0x00, 0x02, 0x1f, 0xd6, /* +24 br x16 */
};

static const uint8_t body_switch[] = {
	0xfd, 0x7b, 0xbe, 0xa9, /* +0  stp x29, x30, [sp, #-32]! */
	0xfd, 0x03, 0x00, 0x91, /* +4  mov x29, sp */
	0xf3, 0x0b, 0x00, 0xf9, /* +8  str x19, [sp, #16] */
	0x10, 0x00, 0x01, 0x8b, /* +12 add x16, x0, x1 */
	0x00, 0x02, 0x1f, 0xd6, /* +16 br x16: a switch, in the frame */
	0xf3, 0x0b, 0x40, 0xf9, /* +20 ldr x19, [sp, #16] */
	0xfd, 0x7b, 0xc2, 0xa8, /* +24 ldp x29, x30, [sp], #32 */
	0xc0, 0x03, 0x5f, 0xd6, /* +28 ret */
};

static void plan_far(const uint8_t *code, size_t len, struct np_site_plan *s)
{
	struct fake_host h;
	struct np_fn_view v;
	fake_host_init(&h, BASE, code, len);
	fake_view(&v, ISA, &h, BASE + len, BASE + len, true, BASE, 0);
	fake_site(&v, BASE, &far, s);
	np_fn_view_free(&v);
}

TEST(arm64_a_tail_call_after_the_frame_is_popped_leaves_the_long_jump_the_prologue)
{
	struct np_site_plan s;
	plan_far(tail_call, sizeof(tail_call), &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_LONG);
	CHECK_EQ(s.plan.end, BASE + 12);
}

TEST(arm64_a_switch_in_the_frame_refuses_the_long_jump_over_the_prologue)
{
	struct np_site_plan s;
	plan_far(body_switch, sizeof(body_switch), &s);
	CHECK(s.kind != NP_SITE_JUMP);
	CHECK(strstr(s.why, "the function has 1 indirect jump(s) whose targets cannot be "
			    "resolved, one at the stack height of 0x400004") != NULL);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * The planner on riscv64 code: jal (4 bytes, +-1 MiB) over whole 2- and
 * 4-byte instructions, or auipc+jalr through a free register, or c.ebreak.
 * Each function is its bytes with riscv64-linux-gnu-objdump's text beside.
 */
#include "plan_test.h"

#define ISA (&np_isa_riscv64)
#define BASE 0x200000ull

static const struct np_plan_places near = {BASE - 0x1000, BASE + 0x10000, 0};
/* no place within jal's reach: everything goes 64 MiB away */
static const struct np_plan_places far = {BASE - (256ull << 20), BASE + (256ull << 20),
					  BASE + (64ull << 20)};

/* Debian's riscv64 glibc 2.36, abort+0x7a..+0xca (at 0x26942): an lr/sc
 * loop after a run of mixed 2- and 4-byte instructions. */
#define ABORT 0x26942ull
static const struct np_plan_places abort_near = {ABORT - 0x1000, ABORT + 0x100000, 0};
static const uint8_t abort_part[] = {
	0x23, 0xa5, 0x06, 0x42, /* 26942 sw zero,1066(a3) */
	0x9b, 0x86, 0xf7, 0xff, /* 26946 addw a3,a5,-1 */
	0x54, 0xc0,             /* 2694a sw a3,4(s0) */
	0xb6, 0x87,             /* 2694c mv a5,a3 */
	0x95, 0xe2,             /* 2694e bnez a3,26972 */
	0x97, 0x06, 0x10, 0x00, /* 26950 auipc a3,0x100 */
	0x23, 0xb8, 0x06, 0x40, /* 26954 sd zero,1040(a3) */
	0x0f, 0x00, 0x50, 0x0f, /* 26958 fence iorw,ow */
	0xaf, 0xa7, 0xf4, 0x08, /* 2695c amoswap.w a5,a5,(s1) */
	0x81, 0x27,             /* 26960 sext.w a5,a5 */
	0x63, 0x58, 0xf7, 0x00, /* 26962 bge a4,a5,26972 */
	0x17, 0x05, 0x10, 0x00, /* 26966 auipc a0,0x100 */
	0x13, 0x05, 0x25, 0x3f, /* 2696a add a0,a0,1010 */
	0xef, 0x10, 0x64, 0x7b, /* 2696e jal 68124 */
	0x19, 0x45,             /* 26972 li a0,6 */
	0xef, 0xf0, 0x90, 0x27, /* 26974 jal 363ec */
	0x1c, 0x64,             /* 26978 ld a5,8(s0) */
	0x13, 0x09, 0x02, 0x8a, /* 2697a add s2,tp,-1888 */
	0x63, 0x83, 0x27, 0x03, /* 2697e beq a5,s2,269a4 */
	0x05, 0x47,             /* 26982 li a4,1 */
	0xaf, 0xa7, 0x04, 0x10, /* 26984 lr.w a5,(s1) */
	0x81, 0xe7,             /* 26988 bnez a5,26990 */
	0xaf, 0xa6, 0xe4, 0x1c, /* 2698a sc.w.aq a3,a4,(s1) */
	0xfd, 0xfa,             /* 2698e bnez a3,26984 */
	0x81, 0x27,             /* 26990 sext.w a5,a5 */
};

/* analyze looked for the lr from 64 bytes back, 0x26948: the middle of
 * the addw at 0x26946, which did not decode, so it saw no lr and gave the
 * bnez between lr and sc a breakpoint. Its trap clears the reservation:
 * the sc fails, the loop takes the lr again and traps again, forever. The
 * sweep from the function's entry stays on instruction boundaries. */
TEST(riscv64_a_site_between_lr_and_sc_is_refused_whatever_the_code_before)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, ABORT, abort_part, sizeof(abort_part));
	fake_view(&v, ISA, &h, ABORT + sizeof(abort_part), ABORT + sizeof(abort_part), false,
		  0x26988, 0);
	CHECK_EQ(fake_site(&v, 0x26988, &abort_near, &s), -EOPNOTSUPP);
	CHECK_EQ(s.kind, NP_SITE_REFUSED);
	CHECK_STR(s.why, "inside an lr/sc sequence: a trap or jump would clear the reservation");
	fake_site(&v, 0x26984, &abort_near, &s); /* the lr itself */
	CHECK_EQ(s.kind, NP_SITE_REFUSED);
	CHECK(strncmp(s.why, "lr:", 3) == 0);
	fake_site(&v, 0x2698e, &abort_near, &s); /* after the sc: the loop's branch */
	CHECK(s.kind != NP_SITE_REFUSED);
	/* before the lr: no jump of its own over it, but the one at the beq
	 * before it displaces it too, and comes back to the lr */
	fake_site(&v, 0x26982, &abort_near, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.start, 0x2697e);
	CHECK_EQ(s.plan.end, 0x26984);
	np_fn_view_free(&v);
}

static const uint8_t tail[] = {
	0x01, 0x11,             /* +0  addi sp,sp,-32 */
	0x06, 0xec,             /* +2  sd ra,24(sp) */
	0xe2, 0x60,             /* +4  ld ra,24(sp) */
	0xa2, 0x64,             /* +6  ld s1,8(sp) */
	0x05, 0x61,             /* +8  addi sp,sp,32 */
	0x6f, 0x10, 0x00, 0x80, /* +10 j .-0xff000: a tail call */
};

/* At +8 the jal would displace the tail call, which the trampoline, 64
 * KiB above, cannot make: its target is 1 MiB below, and no register is
 * free for a longer jump. The jal at +6 covers +8 and leaves the tail
 * call where it is. analyze took it; the engine gave up on the jal once
 * the trampoline could not be built, and trapped. */
TEST(riscv64_a_jump_whose_relocation_cannot_reach_goes_at_the_instruction_before)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, tail, sizeof(tail));
	fake_view(&v, ISA, &h, BASE + sizeof(tail), BASE + sizeof(tail), true, BASE + 8, 0);
	CHECK_EQ(fake_site(&v, BASE + 8, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_SHORT);
	CHECK_EQ(s.plan.start, BASE + 6);
	CHECK_EQ(s.plan.end, BASE + 10);
	np_fn_view_free(&v);
}

static const uint8_t plain[] = {
	0x41, 0x11, /* +0 addi sp,sp,-16 */
	0x06, 0xe4, /* +2 sd ra,8(sp) */
	0xa2, 0x60, /* +4 ld ra,8(sp) */
	0x41, 0x01, /* +6 addi sp,sp,16 */
	0x82, 0x80, /* +8 ret */
};

/* What the module says when only the convention reaches the function:
 * every caller-saved register is dead at its returns. */
static void convention_only(struct fake_host *h)
{
	h->have_env = true;
	h->env = (struct np_freereg_env){ISA->call_clobbered, NULL, NULL};
}

/* Beyond jal's reach the long form needs a register free at the site:
 * at the entry the convention frees t1 and t3..t6, but under -fipa-ra
 * only when no caller relies on them, which the module says. */
TEST(riscv64_a_long_jump_lacking_a_register_asks_the_module_once)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, plain, sizeof(plain));
	convention_only(&h);
	fake_view(&v, ISA, &h, BASE + sizeof(plain), BASE + sizeof(plain), true, BASE, 0);
	CHECK_EQ(h.module_asks, 0);
	CHECK_EQ(fake_site(&v, BASE, &far, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_LONG);
	CHECK_STR(np_plan_form_name(ISA, s.plan.form), "auipc+jalr");
	CHECK_EQ(s.plan.jump_len, 8);
	CHECK(s.plan.via & 1ull << 6); /* t1 */
	CHECK_EQ(s.place, far.far);
	CHECK_EQ(h.module_asks, 1);
	fake_site(&v, BASE + 2, &far, &s);
	CHECK_EQ(h.module_asks, 1);
	np_fn_view_free(&v);
}

/* analyze assumed a trampoline anywhere within jal's 1 MiB; the engine
 * allocates within 7/8 of it (np_plan_reach), so that relocated branches
 * still reach from there. */
TEST(riscv64_trampolines_are_assumed_within_the_reach_the_engine_allocates_in)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	struct np_plan_places edge = {BASE - (64ull << 20), BASE + (1ull << 20) - 0x1000, 0};
	fake_host_init(&h, BASE, plain, sizeof(plain));
	fake_view(&v, ISA, &h, BASE + sizeof(plain), BASE + sizeof(plain), true, BASE, 0);
	CHECK(np_plan_reach(ISA, NP_JUMP_SHORT) < edge.above - BASE);
	fake_site(&v, BASE, &edge, &s);
	CHECK(s.kind != NP_SITE_JUMP || s.plan.form == NP_JUMP_LONG);
	CHECK(strstr(s.why, "no trampoline place within jal's reach") != NULL);
	edge.above -= (1ull << 20) / 8;
	fake_site(&v, BASE, &edge, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_SHORT);
	np_fn_view_free(&v);
}

static const uint8_t busy[] = {
	0x13, 0x85, 0x15, 0x00, /* +0  addi a0,a1,1 */
	0x13, 0x05, 0xf5, 0xff, /* +4  addi a0,a0,-1 */
	0xe3, 0x1e, 0x05, 0xfe, /* +8  bnez a0,+4 */
	0x67, 0x80, 0x00, 0x00, /* +12 ret */
};

/* The entry's long jump would cover the loop head at +4 and no place is
 * within jal's reach: the entry traps, its copy 64 MiB away. The copy's
 * jump back needs a register free at +4; the function alone frees none
 * (a caller may keep values in the registers it does not write). */
TEST(riscv64_an_out_of_line_copy_traps_back_when_no_register_is_known_free)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, busy, sizeof(busy));
	fake_view(&v, ISA, &h, BASE + sizeof(busy), BASE + sizeof(busy), true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &far, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK(s.trap_back);
	CHECK_STR(s.why, "a branch lands at 0x200004, inside the displaced bytes; no trampoline "
			 "place within jal's reach; the copy jumps back by a trap");
	CHECK_EQ(h.module_asks, 1);
	np_fn_view_free(&v);
}

/* The engine built that copy with a trap back without asking the module,
 * which says that the convention alone reaches the function: then t1 is
 * free at +4, and the copy jumps back through it. */
TEST(riscv64_an_out_of_line_copy_asks_the_module_before_it_traps_back)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, busy, sizeof(busy));
	convention_only(&h);
	fake_view(&v, ISA, &h, BASE + sizeof(busy), BASE + sizeof(busy), true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &far, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK(!s.trap_back);
	CHECK_EQ(s.place, far.far);
	CHECK_EQ(h.module_asks, 1);
	np_fn_view_free(&v);
}

static const uint8_t lrsc[] = {
	0x13, 0x07, 0x10, 0x00, /* +0  li a4,1 */
	0xaf, 0x27, 0x05, 0x10, /* +4  lr.w a5,(a0) */
	0x63, 0x96, 0x07, 0x00, /* +8  bnez a5,+20 */
	0xaf, 0x26, 0xe5, 0x1c, /* +12 sc.w.aq a3,a4,(a0) */
	0xe3, 0x9a, 0x06, 0xfe, /* +16 bnez a3,+4 */
	0x1b, 0x85, 0x07, 0x00, /* +20 sext.w a0,a5 */
	0x67, 0x80, 0x00, 0x00, /* +24 ret */
};

TEST(riscv64_every_site_from_lr_to_sc_is_refused_the_others_jump)
{
	static const enum np_site_kind want[] = {NP_SITE_JUMP, NP_SITE_REFUSED, NP_SITE_REFUSED,
						 NP_SITE_REFUSED, NP_SITE_JUMP, NP_SITE_JUMP,
						 NP_SITE_JUMP};
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, lrsc, sizeof(lrsc));
	fake_view(&v, ISA, &h, BASE + sizeof(lrsc), BASE + sizeof(lrsc), true, BASE, 0);
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		fake_site(&v, BASE + 4 * i, &near, &s);
		CHECK_EQ(s.kind, want[i]);
	}
	fake_site(&v, BASE + 8, &near, &s);
	CHECK_STR(s.why, "inside an lr/sc sequence: a trap or jump would clear the reservation");
	np_fn_view_free(&v);
}

/* A return followed by the compiler's alignment nops inside the function,
 * before a loop head further on: jal covers the ret and one nop. */
static const uint8_t ret_then_nops[] = {
	0x01, 0x45, /* +0 li a0,0 */
	0x82, 0x80, /* +2 ret */
	0x01, 0x00, /* +4 nop (c.nop) */
	0x01, 0x00, /* +6 nop */
	0x05, 0x05, /* +8 addi a0,a0,1: a loop head, a branch's target */
	0xe3, 0x0f, 0x05, 0xfe, /* +10 beqz a0,+8 */
	0x82, 0x80, /* +14 ret */
};

TEST(riscv64_the_nops_after_a_return_inside_the_function_are_patched_over)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, ret_then_nops, sizeof(ret_then_nops));
	fake_view(&v, ISA, &h, BASE + sizeof(ret_then_nops), BASE + sizeof(ret_then_nops), true,
		  BASE + 2, 0);
	CHECK_EQ(fake_site(&v, BASE + 2, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.ninsn, 1); /* the ret: the nop is not relocated */
	CHECK_EQ(s.plan.end, BASE + 6);
	np_fn_view_free(&v);
}

/* A switch on a masked value needs no bound check, so no branch stands
 * between the frame's release and its jump: the scan took such a jump
 * for a tail call (it follows addi sp,sp,16 in straight-line code) and
 * let a jal displace the two cases. The stack heights know the cases
 * only the switch reaches as of unknown height, where it may land. */
static const uint8_t masked_switch[] = {
	0x41, 0x11, /* +0  addi sp,sp,-16 */
	0x06, 0xe4, /* +2  sd ra,8(sp) */
	0xa2, 0x60, /* +4  ld ra,8(sp) */
	0x41, 0x01, /* +6  addi sp,sp,16 */
	0x0d, 0x89, /* +8  andi a0,a0,3 */
	0xaa, 0x97, /* +10 add a5,a5,a0 */
	0x82, 0x87, /* +12 jr a5 */
	0x05, 0x45, /* +14 li a0,1: a case */
	0x89, 0x45, /* +16 li a1,2: a case */
	0x82, 0x80, /* +18 ret */
};

TEST(riscv64_a_switch_after_the_frame_is_released_is_no_tail_call)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, masked_switch, sizeof(masked_switch));
	fake_view(&v, ISA, &h, BASE + sizeof(masked_switch), BASE + sizeof(masked_switch), true,
		  BASE + 14, 0);
	CHECK_EQ(fake_site(&v, BASE + 14, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK(strstr(s.why, "the function has 1 indirect jump(s) whose targets cannot be "
			    "resolved") != NULL);
	/* the prologue runs 16 below the entry, the jump at the entry's height */
	CHECK_EQ(fake_site(&v, BASE, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.end, BASE + 4);
	np_fn_view_free(&v);
}

TEST_MAIN()

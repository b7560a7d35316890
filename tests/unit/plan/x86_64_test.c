/* SPDX-License-Identifier: MIT */
/*
 * The planner on x86-64 code: a 5-byte jmp rel32 over whole instructions,
 * or a breakpoint. Each function is its bytes at BASE, with objdump's
 * disassembly beside them.
 */
#include "plan_test.h"

#define ISA (&np_isa_x86_64)
#define BASE 0x400000ull

/* trampoline pages next to the module, as a file's model assumes */
static const struct np_plan_places near = {BASE - 0x1000, BASE + 0x10000, 0};

static const uint8_t frame[] = {
	0x55,                   /* +0  push %rbp */
	0x48, 0x89, 0xe5,       /* +1  mov %rsp,%rbp */
	0x48, 0x83, 0xec, 0x10, /* +4  sub $0x10,%rsp */
	0x89, 0xf8,             /* +8  mov %edi,%eax */
	0xc9,                   /* +10 leave */
	0xc3,                   /* +11 ret */
};

/* the site's strategy in frame, with h as it is */
static void plan_frame(struct fake_host *h, uint64_t pc, struct np_site_plan *s)
{
	struct np_fn_view v;
	fake_view(&v, ISA, h, BASE + sizeof(frame), BASE + sizeof(frame), true, pc, 0);
	fake_site(&v, pc, &near, s);
	np_fn_view_free(&v);
}

TEST(x86_jump_displaces_whole_instructions_and_is_named_by_the_isa)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	plan_frame(&h, BASE, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_SHORT);
	CHECK_EQ(s.plan.start, BASE);
	CHECK_EQ(s.plan.end, BASE + 8); /* push, mov, sub */
	CHECK_EQ(s.plan.ninsn, 3);
	CHECK_EQ(s.plan.jump_len, 5);
	CHECK_EQ(s.place, near.above);
	CHECK_STR(np_plan_form_name(ISA, s.plan.form), "jmp rel32");
	CHECK(np_plan_form_name(ISA, NP_JUMP_LONG) == NULL);
	CHECK_STR(s.why, "");
}

/* list planned without the module's neighbours and said JUMP where the
 * engine, which has them, chose TRAP (glibc's __mempcpy_* jumps to the
 * second instruction of __memmove_*). */
TEST(x86_a_neighbours_branch_into_the_displaced_bytes_makes_the_site_trap)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	h.targets[h.ntargets++] = BASE + 4;
	plan_frame(&h, BASE, &s);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM); /* push is simulated */
	CHECK_STR(s.why, "a branch lands at 0x400004, inside the displaced bytes"
			 "; no hop: no dead padding in reach");
}

static const uint8_t tiny_padded[] = {
	0xc3,                         /* +0 ret */
	0xcc, 0xcc, 0xcc, 0xcc, 0xcc, /* +1 int3 (alignment padding) */
};

TEST(x86_a_one_byte_function_jumps_over_the_padding_after_it)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, tiny_padded, sizeof(tiny_padded));
	fake_view(&v, ISA, &h, BASE + 1, BASE + sizeof(tiny_padded), true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.ninsn, 1);
	CHECK_EQ(s.plan.end, BASE + 5); /* the padding is patched over, not run */
	np_fn_view_free(&v);
}

/* A function ending in unreachable filler inside its own symbol: GCC's
 * ud2 after a path __builtin_unreachable() ends, clang's int3s. */
static const uint8_t ret_then_ud2[] = {
	0x31, 0xc0, /* +0 xor %eax,%eax */
	0xc3,       /* +2 ret */
	0x0f, 0x0b, /* +3 ud2: unreachable, inside the function */
	0x55,       /* +5 push %rbp: the next function */
};

static int plan_code(struct fake_host *h, uint64_t end, struct np_site_plan *s)
{
	struct np_fn_view v;
	fake_view(&v, ISA, h, end, end, true, BASE, 0);
	int err = fake_site(&v, BASE, &near, s);
	np_fn_view_free(&v);
	return err;
}

TEST(x86_the_filler_after_a_return_inside_the_function_is_patched_over)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, ret_then_ud2, sizeof(ret_then_ud2));
	CHECK_EQ(plan_code(&h, BASE + 5, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.ninsn, 2); /* xor, ret: the ud2 is not relocated */
	CHECK_EQ(s.plan.end, BASE + 5);
}

TEST(x86_filler_a_branch_lands_on_is_not_patched_over)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, ret_then_ud2, sizeof(ret_then_ud2));
	h.targets[h.ntargets++] = BASE + 3; /* a jne to the ud2 */
	CHECK_EQ(plan_code(&h, BASE + 5, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK_STR(s.why, "a branch lands at 0x400003, in the filler after the jump or return at "
			 "0x400002; no hop: no dead padding in reach");
}

static const uint8_t ret_then_ud2_then_switch[] = {
	0x31, 0xc0, /* +0 xor %eax,%eax */
	0xc3,       /* +2 ret */
	0x0f, 0x0b, /* +3 ud2 */
	0xff, 0xe0, /* +5 jmp *%rax: a jump whose targets are not known */
};

TEST(x86_filler_is_not_patched_over_when_a_jump_of_the_function_is_unresolved)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, ret_then_ud2_then_switch, sizeof(ret_then_ud2_then_switch));
	CHECK_EQ(plan_code(&h, BASE + sizeof(ret_then_ud2_then_switch), &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK_STR(s.why, "the filler after the jump or return at 0x400002 may be a branch target: "
			 "1 indirect jump(s) of the function are unresolved");
}

/* glibc's _IO_setvbuf+0x75: an alignment nop between a jmp and a loop
 * head. The jmp before it may cover the nop as filler, but then nothing
 * runs the nop: a probe there takes a trap of its own (it never fires). */
static const uint8_t jmp_nop_head[] = {
	0xbd, 0xff, 0xff, 0xff, 0xff, /* +0  mov $0xffffffff,%ebp */
	0xeb, 0x03,                   /* +5  jmp +10 */
	0x0f, 0x1f, 0x00,             /* +7  nopl (%rax) */
	0x41, 0x83, 0xfd, 0x01,       /* +10 cmp $0x1,%r13d: the jmp's target */
	0xc3,                         /* +14 ret */
};

TEST(x86_filler_is_never_a_site_the_jump_before_covers)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, jmp_nop_head, sizeof(jmp_nop_head));
	fake_view(&v, ISA, &h, BASE + sizeof(jmp_nop_head), BASE + sizeof(jmp_nop_head), true,
		  BASE + 7, 0);
	CHECK_EQ(fake_site(&v, BASE + 7, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM); /* the nop is simulated */
	CHECK_STR(s.why, "a branch lands at 0x40000a, inside the displaced bytes"
			 "; no hop: no dead padding in reach");
	np_fn_view_free(&v);
}

static const uint8_t ret_then_int3[] = {
	0xc3,                         /* +0 ret */
	0xcc, 0xcc, 0xcc, 0xcc, 0xcc, /* +1 int3s, inside the function's symbol */
};

TEST(x86_a_return_and_int3s_inside_the_symbol_jump)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, ret_then_int3, sizeof(ret_then_int3));
	fake_view(&v, ISA, &h, BASE + sizeof(ret_then_int3), BASE + sizeof(ret_then_int3), true,
		  BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.ninsn, 1);
	CHECK_EQ(s.plan.end, BASE + 5);
	np_fn_view_free(&v);
}

static const uint8_t tiny_then_code[] = {
	0xc3,                         /* +0 ret */
	0xb8, 0x01, 0x00, 0x00, 0x00, /* +1 mov $0x1,%eax: the next function */
};

TEST(x86_a_one_byte_function_followed_by_code_traps_with_the_reason)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, tiny_then_code, sizeof(tiny_then_code));
	fake_view(&v, ISA, &h, BASE + 1, BASE + 1, true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM);
	CHECK_STR(s.why, "the function ends at 0x400001, before the 5 bytes a jump needs, and what "
			 "follows is not padding");
	np_fn_view_free(&v);
}

static const uint8_t loop[] = {
	0x31, 0xc0,       /* +0  xor %eax,%eax */
	0x48, 0x01, 0xf8, /* +2  add %rdi,%rax */
	0x48, 0xff, 0xce, /* +5  dec %rsi */
	0x75, 0xf8,       /* +8  jne +2 */
	0xc3,             /* +10 ret */
};

TEST(x86_the_functions_own_branch_into_the_displaced_bytes_makes_the_site_trap)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, loop, sizeof(loop));
	fake_view(&v, ISA, &h, BASE + sizeof(loop), BASE + sizeof(loop), true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK_STR(s.why, "a branch lands at 0x400002, inside the displaced bytes"
			 "; no hop: no dead padding in reach");
	CHECK_EQ(s.place, near.above); /* the copy's slot */
	np_fn_view_free(&v);
}

/* No jump fits at +8 (the ret at +11 is followed by more of the
 * function), so it goes at the or at +5 and covers +8: unless a branch
 * from elsewhere lands on +8, as a .cold part's jump back does (python3.11
 * at 0x441cf3). The engine asked its neighbours for targets after the
 * site only, and missed that one. */
static const uint8_t onto[] = {
	0x55,                         /* +0  push %rbp */
	0x53,                         /* +1  push %rbx */
	0x52,                         /* +2  push %rdx */
	0x31, 0xc0,                   /* +3  xor %eax,%eax */
	0x83, 0xc8, 0x5a,             /* +5  or $0x5a,%eax */
	0x5a,                         /* +8  pop %rdx */
	0x5b,                         /* +9  pop %rbx */
	0x5d,                         /* +10 pop %rbp */
	0xc3,                         /* +11 ret */
	0xb8, 0x01, 0x00, 0x00, 0x00, /* +12 mov $0x1,%eax */
	0xc3,                         /* +17 ret */
};

static void plan_onto(struct fake_host *h, struct np_site_plan *s)
{
	struct np_fn_view v;
	fake_view(&v, ISA, h, BASE + sizeof(onto), BASE + sizeof(onto), true, BASE + 8, 0);
	fake_site(&v, BASE + 8, &near, s);
	np_fn_view_free(&v);
}

TEST(x86_where_no_jump_fits_it_goes_at_the_instruction_before)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, onto, sizeof(onto));
	plan_onto(&h, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.start, BASE + 5);
	CHECK_EQ(s.plan.end, BASE + 10);
}

TEST(x86_a_neighbours_branch_onto_the_site_refuses_the_jump_from_the_instruction_before)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, onto, sizeof(onto));
	h.targets[h.ntargets++] = BASE + 8;
	plan_onto(&h, &s);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM); /* pop is simulated */
	CHECK_STR(s.why, "a jump or return at 0x40000b is followed by code the patch would "
			 "overwrite; no hop: no dead padding in reach");
}

static const uint8_t rejected[] = {
	0x0f, 0x0b, /* +0 ud2 */
	0xc3,       /* +2 ret */
};

/* The site's own refusal is its reason alone (list showed "instruction
 * at ADDR: ..." with the row's own address, analyze the reason). */
TEST(x86_a_rejected_instruction_is_refused_with_its_reason_alone)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, rejected, sizeof(rejected));
	fake_view(&v, ISA, &h, BASE + 3, BASE + 3, true, BASE, 0);
	CHECK_EQ(fake_site(&v, BASE, &near, &s), -EOPNOTSUPP);
	CHECK_EQ(s.kind, NP_SITE_REFUSED);
	CHECK_EQ(s.len, 2);
	CHECK(strncmp(s.why, "undefined instruction", 21) == 0);
	np_fn_view_free(&v);
}

TEST(x86_a_jump_absorbs_the_regions_it_overlaps)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	/* a jump placed at +4 covers sub and mov, to +10 */
	h.regions[h.nregions++] = (struct np_plan_region){.start = BASE + 4, .end = BASE + 10};
	plan_frame(&h, BASE, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK(s.plan.merged);
	CHECK_EQ(s.plan.end, BASE + 10);
	CHECK_EQ(s.plan.ninsn, 4);
}

TEST(x86_a_breakpoint_placed_by_request_is_never_absorbed)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	h.regions[h.nregions++] =
		(struct np_plan_region){.start = BASE + 4, .end = BASE + 8, .forced_trap = true};
	plan_frame(&h, BASE, &s);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM);
	CHECK_STR(s.why, "a probe forced to TRAP at 0x400004 lies in the bytes a jump needs"
			 "; no hop: no dead padding in reach");
}

static const uint8_t pun[] = {
	0x55,                         /* +0  push %rbp */
	0x48, 0x89, 0xe5,             /* +1  mov %rsp,%rbp */
	0xe8, 0xf7, 0xff, 0xff, 0xff, /* +4  call +0 */
	0x5d,                         /* +9  pop %rbp */
	0xc3,                         /* +10 ret */
};

TEST(x86_a_jump_ending_on_a_call_4_bytes_in_ends_on_its_first_byte)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_plan p, out;
	uint64_t lo, size;
	fake_host_init(&h, BASE, pun, sizeof(pun));
	fake_view(&v, ISA, &h, BASE + sizeof(pun), BASE + sizeof(pun), true, BASE, 0);
	CHECK_EQ(np_plan_jump(&v, BASE, NP_JUMP_SHORT, &p), 0);
	CHECK_EQ(p.end, BASE + 9);
	CHECK_EQ(np_plan_pun(ISA, &p, &out), 0);
	CHECK_EQ(out.end, BASE + 4);
	CHECK_EQ(out.ninsn, 2);
	CHECK_EQ(out.pin, 4);
	CHECK_EQ(out.pun, 1);
	/* e8 as the displacement's top byte: a 16 MiB window 384 MiB below */
	np_plan_pun_window(BASE, pun, out.pin, &lo, &size);
	CHECK_EQ(size, 1ull << 24);
	CHECK_EQ(lo, BASE + 5 - 0x18000000ull);
	CHECK(np_plan_pun(&np_isa_riscv64, &p, &out) != 0); /* byte-granular code only */
	np_fn_view_free(&v);
}

/* ---- jumps to a hop (src/plan/hop.c) ----------------------------------
 * glibc's __memmove_avx_unaligned_erms in small: mempcpy (a neighbour)
 * jumps to +3, so no jmp rel32 fits at +0; a jmp rel8 displaces the mov
 * alone and goes to the nopl after the ret, where the jmp rel32 goes. */
static const uint8_t memmove_like[] = {
	0x48, 0x89, 0xf8,             /* +0  mov %rdi,%rax */
	0x48, 0x83, 0xfe, 0x20,       /* +3  cmp $0x20,%rsi: the neighbour's target */
	0x72, 0x09,                   /* +7  jb +18 */
	0x48, 0x01, 0xf0,             /* +9  add %rsi,%rax */
	0xc3,                         /* +12 ret */
	0x0f, 0x1f, 0x44, 0x00, 0x00, /* +13 nopl 0x0(%rax,%rax,1): the hop */
	0x48, 0x29, 0xf0,             /* +18 sub %rsi,%rax */
	0xc3,                         /* +21 ret */
};

static void plan_memmove(struct fake_host *h, struct np_site_plan *s)
{
	struct np_fn_view v;
	fake_view(&v, ISA, h, BASE + sizeof(memmove_like), BASE + sizeof(memmove_like), true, BASE,
		  0);
	fake_site(&v, BASE, &near, s);
	np_fn_view_free(&v);
}

static void memmove_host(struct fake_host *h)
{
	fake_host_init(h, BASE, memmove_like, sizeof(memmove_like));
	h->targets[h->ntargets++] = BASE + 3;
}

TEST(x86_a_memmove_entry_jumps_to_a_hop_in_the_padding_after_its_ret)
{
	struct fake_host h;
	struct np_site_plan s;
	uint8_t jmp[2];
	memmove_host(&h);
	plan_memmove(&h, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_HOP);
	CHECK_STR(np_plan_form_name(ISA, s.plan.form), "jmp rel8 + hop");
	CHECK_EQ(s.plan.jump_len, 2);
	CHECK_EQ(s.plan.start, BASE);
	CHECK_EQ(s.plan.end, BASE + 3); /* the mov alone: +3 stays */
	CHECK_EQ(s.plan.ninsn, 1);
	CHECK_EQ(s.plan.hop, BASE + 13);
	CHECK_EQ(s.place, near.above); /* the trampoline, as the short form's */
	CHECK_STR(s.why, "");
	CHECK_EQ(ISA->emit_hop(jmp, BASE, BASE + 13), 2);
	CHECK_EQ(jmp[0], 0xeb); /* jmp +13 */
	CHECK_EQ(jmp[1], 11);
	CHECK_EQ(ISA->emit_hop(jmp, BASE, BASE + 2 + 128), -ERANGE);
	CHECK_EQ(ISA->emit_hop(jmp, BASE + 200, BASE + 200 + 2 - 128), 2);
	CHECK_EQ(ISA->emit_hop(jmp, BASE + 200, BASE + 200 + 2 - 129), -ERANGE);
}

/* Only where the short form cannot be planned. */
TEST(x86_the_short_form_wins_where_it_fits)
{
	struct fake_host h;
	struct np_site_plan s;
	fake_host_init(&h, BASE, memmove_like, sizeof(memmove_like)); /* no neighbour */
	plan_memmove(&h, &s);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_SHORT);
	CHECK_EQ(s.plan.hop, 0);
}

/* A branch that lands anywhere from the padding's first byte to the hop's
 * last: the padding runs, so no hop (every byte of it tried). */
TEST(x86_no_hop_where_a_branch_lands_in_the_padding)
{
	for (uint64_t at = 13; at < 18; at++) {
		struct fake_host h;
		struct np_site_plan s;
		memmove_host(&h);
		h.targets[h.ntargets++] = BASE + at;
		plan_memmove(&h, &s);
		CHECK_EQ(s.kind, NP_SITE_TRAP_SIM);
		CHECK(strstr(s.why, "; no hop: a branch lands in the padding") != NULL);
	}
}

/* A code pointer the module holds into the padding, where a jump of the
 * function is resolved by them (an indirect jump may land there). */
TEST(x86_no_hop_where_a_held_pointer_points_in_the_padding)
{
	static const uint8_t tail_call[] = {
		0x48, 0x89, 0xf8,                         /* +0  mov %rdi,%rax */
		0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, /* +3  mov 0x1000(%rip),%rax */
		0xff, 0xe0,                               /* +10 jmp *%rax */
		0x0f, 0x1f, 0x44, 0x00, 0x00,             /* +12 nopl: the only padding */
		0xc3,                                     /* +17 ret */
	};
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	for (int pointed = 0; pointed < 2; pointed++) {
		fake_host_init(&h, BASE, tail_call, sizeof(tail_call));
		h.targets[h.ntargets++] = BASE + 3;
		h.held_known = true;
		if (pointed)
			h.held[h.nheld++] = BASE + 14;
		fake_view(&v, ISA, &h, BASE + sizeof(tail_call), BASE + sizeof(tail_call), true,
			  BASE, 0);
		fake_site(&v, BASE, &near, &s);
		CHECK_EQ(s.kind, pointed ? NP_SITE_TRAP_SIM : NP_SITE_JUMP);
		CHECK_EQ(s.plan.hop, pointed ? 0 : BASE + 12);
		np_fn_view_free(&v);
	}
}

/* Filler after a conditional branch runs (it falls through). */
TEST(x86_no_hop_in_padding_that_a_conditional_branch_falls_into)
{
	static const uint8_t falls[] = {
		0x48, 0x89, 0xf8,             /* +0  mov %rdi,%rax */
		0x48, 0x83, 0xfe, 0x20,       /* +3  cmp $0x20,%rsi */
		0x73, 0x08,                   /* +7  jae +17 */
		0x0f, 0x1f, 0x44, 0x00, 0x00, /* +9  nopl: run */
		0x48, 0x29, 0xf0,             /* +14 sub %rsi,%rax */
		0xc3,                         /* +17 ret */
	};
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, falls, sizeof(falls));
	h.targets[h.ntargets++] = BASE + 3;
	fake_view(&v, ISA, &h, BASE + sizeof(falls), BASE + sizeof(falls), true, BASE, 0);
	fake_site(&v, BASE, &near, &s);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM);
	CHECK_STR(s.why, "a branch lands at 0x400003, inside the displaced bytes; no hop: no dead "
			 "padding in reach");
	np_fn_view_free(&v);
}

/* A hop serves one region: one in place over the padding (another's hop,
 * or bytes it displaces) leaves none; and nothing absorbs a hop. */
TEST(x86_a_hop_is_never_shared_nor_absorbed)
{
	struct fake_host h;
	struct np_site_plan s;
	struct np_plan_region taken[] = {
		{.start = BASE + 13, .end = BASE + 18, .hop = true},
		{.start = BASE + 16, .end = BASE + 21},
	};
	for (unsigned i = 0; i < 2; i++) {
		memmove_host(&h);
		h.regions[h.nregions++] = taken[i];
		plan_memmove(&h, &s);
		CHECK_EQ(s.kind, NP_SITE_TRAP_SIM);
		CHECK(strstr(s.why, "; no hop: another probe holds the padding") != NULL);
	}
	/* a jump at +9 would cover +13 as filler: not over a hop (a branch to
	 * +9 keeps the jump from the instruction before) */
	struct np_fn_view v;
	struct np_plan p;
	fake_host_init(&h, BASE, memmove_like, sizeof(memmove_like));
	h.targets[h.ntargets++] = BASE + 9;
	h.regions[h.nregions++] = taken[0];
	fake_view(&v, ISA, &h, BASE + sizeof(memmove_like), BASE + sizeof(memmove_like), true,
		  BASE + 9, 0);
	CHECK_EQ(np_plan_jump(&v, BASE + 9, NP_JUMP_SHORT, &p), -EOPNOTSUPP);
	CHECK(strstr(p.why, "are the hop of another probe's jump") != NULL);
	np_fn_view_free(&v);
	/* nor a jump to a hop, which would leave its hop behind */
	fake_host_init(&h, BASE, memmove_like, sizeof(memmove_like));
	h.regions[h.nregions++] =
		(struct np_plan_region){.start = BASE + 3, .end = BASE + 5, .hop_site = true};
	fake_view(&v, ISA, &h, BASE + sizeof(memmove_like), BASE + sizeof(memmove_like), true,
		  BASE, 0);
	CHECK_EQ(np_plan_jump(&v, BASE, NP_JUMP_SHORT, &p), -EOPNOTSUPP);
	CHECK(strstr(p.why, "the jump to a hop at 0x400003 lies in the bytes") != NULL);
	np_fn_view_free(&v);
}

/* An unresolved indirect jump may land in any filler. */
TEST(x86_no_hop_where_a_jump_of_the_function_is_unresolved)
{
	static const uint8_t unresolved[] = {
		0x48, 0x89, 0xf8,             /* +0  mov %rdi,%rax */
		0x48, 0x83, 0xfe, 0x20,       /* +3  cmp $0x20,%rsi */
		0x72, 0x02,                   /* +7  jb +11 */
		0xff, 0xe6,                   /* +9  jmp *%rsi */
		0xc3,                         /* +11 ret */
		0x0f, 0x1f, 0x44, 0x00, 0x00, /* +12 nopl */
		0xc3,                         /* +17 ret */
	};
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, unresolved, sizeof(unresolved));
	h.targets[h.ntargets++] = BASE + 3;
	fake_view(&v, ISA, &h, BASE + sizeof(unresolved), BASE + sizeof(unresolved), true, BASE, 0);
	fake_site(&v, BASE, &near, &s);
	CHECK(s.kind != NP_SITE_JUMP);
	CHECK_EQ(s.plan.hop, 0);
	np_fn_view_free(&v);
}

/* ---- indirect jumps: stack heights (src/plan/heights.c) ---------------
 * An indirect jump whose targets are unknown lands, inside its function,
 * only where the stack is as high as where it is taken. */

/* the view of code[len] at BASE, planned at pc */
static int plan_at(struct fake_host *h, const uint8_t *code, size_t len, uint64_t pc,
		   struct np_site_plan *s)
{
	struct np_fn_view v;
	fake_host_init(h, BASE, code, len);
	fake_view(&v, ISA, h, BASE + len, BASE + len, true, pc, 0);
	int err = fake_site(&v, pc, &near, s);
	np_fn_view_free(&v);
	return err;
}

static const uint8_t frame_tail[] = {
	0x53,                   /* +0  push %rbx */
	0x55,                   /* +1  push %rbp */
	0x48, 0x83, 0xec, 0x08, /* +2  sub $0x8,%rsp */
	0x48, 0x89, 0xfb,       /* +6  mov %rdi,%rbx */
	0x48, 0x8b, 0x47, 0x10, /* +9  mov 0x10(%rdi),%rax */
	0x48, 0x01, 0xf0,       /* +13 add %rsi,%rax: a computed target */
	0x48, 0x83, 0xc4, 0x08, /* +16 add $0x8,%rsp */
	0x5d,                   /* +20 pop %rbp */
	0x5b,                   /* +21 pop %rbx */
	0xff, 0xe0,             /* +22 jmp *%rax: a tail call, the frame released */
};

TEST(x86_a_tail_call_after_the_frame_is_released_leaves_the_prologue_to_a_jump)
{
	struct fake_host h;
	struct np_site_plan s;
	/* push, push, sub: heights 8 and 16 inside, the jmp's is 0 */
	CHECK_EQ(plan_at(&h, frame_tail, sizeof(frame_tail), BASE, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.end, BASE + 6);
	/* add, pop: 16 inside */
	CHECK_EQ(plan_at(&h, frame_tail, sizeof(frame_tail), BASE + 16, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.end, BASE + 21);
}

static const uint8_t body_switch[] = {
	0x53,                         /* +0  push %rbx */
	0x55,                         /* +1  push %rbp */
	0x48, 0x83, 0xec, 0x08,       /* +2  sub $0x8,%rsp */
	0x48, 0x89, 0xfb,             /* +6  mov %rdi,%rbx */
	0x48, 0x01, 0xf0,             /* +9  add %rsi,%rax */
	0xff, 0xe0,                   /* +12 jmp *%rax: a switch, the frame live */
	0xb8, 0x01, 0x00, 0x00, 0x00, /* +14 mov $0x1,%eax: a case only it reaches */
	0x48, 0x83, 0xc4, 0x08,       /* +19 add $0x8,%rsp */
	0x5d,                         /* +23 pop %rbp */
	0x5b,                         /* +24 pop %rbx */
	0xc3,                         /* +25 ret */
};

TEST(x86_a_switch_whose_table_is_unknown_refuses_every_plan_at_its_height)
{
	struct fake_host h;
	struct np_site_plan s;
	/* the prologue runs at heights 8 and 16, the switch at 24 */
	CHECK_EQ(plan_at(&h, body_switch, sizeof(body_switch), BASE, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	/* mov, add: the add at the switch's height, where a case may be */
	CHECK_EQ(plan_at(&h, body_switch, sizeof(body_switch), BASE + 6, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM); /* mov is simulated */
	CHECK_STR(s.why, "the function has 1 indirect jump(s) whose targets cannot be resolved, "
			 "one at the stack height of 0x400009");
	/* the cases only the switch reaches have no height: any jump may land */
	CHECK_EQ(plan_at(&h, body_switch, sizeof(body_switch), BASE + 19, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_SIM);
	CHECK_STR(s.why, "the function has 1 indirect jump(s) whose targets cannot be resolved");
}

static const uint8_t frameless_switch[] = {
	0x48, 0x85, 0xff, /* +0  test %rdi,%rdi */
	0x74, 0x05,       /* +3  je +10 */
	0x48, 0x01, 0xf0, /* +5  add %rsi,%rax */
	0xff, 0xe0,       /* +8  jmp *%rax: at the entry's height, yet a switch */
	0xc3,             /* +10 ret */
};

/* Return address on top and the stack pointer back at the entry's does
 * not make a jump a tail call: a function with no frame has its switch
 * there, and its cases too. */
TEST(x86_a_jump_at_the_entrys_height_is_not_taken_for_a_tail_call)
{
	struct fake_host h;
	struct np_site_plan s;
	CHECK_EQ(plan_at(&h, frameless_switch, sizeof(frameless_switch), BASE, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	CHECK_STR(s.why, "the function has 1 indirect jump(s) whose targets cannot be resolved, "
			 "one at the stack height of 0x400003");
}

/* ---- indirect jumps through loaded pointers ----------------------------
 * sqlite3_mutex_enter (Debian's libsqlite3 3.40): a tail call through a
 * function pointer of a global struct, with no frame. */
static const uint8_t mutex_enter[] = {
	0x48, 0x85, 0xff,                         /* +0  test %rdi,%rdi */
	0x74, 0x13,                               /* +3  je +0x18 */
	0x48, 0x8b, 0x05, 0xbc, 0x24, 0x0b, 0x00, /* +5  mov 0xb24bc(%rip),%rax */
	0xff, 0xa0, 0x80, 0x00, 0x00, 0x00,       /* +12 jmp *0x80(%rax) */
	0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,       /* +18 nopw 0x0(%rax,%rax,1) */
	0xc3,                                     /* +24 ret */
};

static int plan_mutex(struct fake_host *h, bool held, uint64_t pointer, struct np_site_plan *s)
{
	struct np_fn_view v;
	fake_host_init(h, BASE, mutex_enter, sizeof(mutex_enter));
	h->held_known = held;
	if (pointer)
		h->held[h->nheld++] = pointer;
	fake_view(&v, ISA, h, BASE + sizeof(mutex_enter), BASE + sizeof(mutex_enter), true, BASE,
		  0);
	int err = fake_site(&v, BASE, &near, s);
	np_fn_view_free(&v);
	return err;
}

TEST(x86_a_tail_call_through_a_loaded_pointer_lands_where_pointers_point)
{
	struct fake_host h;
	struct np_site_plan s;
	CHECK_EQ(plan_mutex(&h, true, 0, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.end, BASE + 5);
	/* the module's pointers unknown: the jump may land anywhere */
	CHECK_EQ(plan_mutex(&h, false, 0, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
}

/* A pointer the module holds to the je (a label some code may jump to)
 * keeps the 5-byte jump from displacing it; a jmp rel8 displaces the test
 * alone, and its hop is the nopw after the tail call, dead: nothing falls
 * into it, no branch or held pointer lands in it, and the tail call's
 * target is a loaded pointer (docs/design.md, "Hops"). */
TEST(x86_a_pointer_the_module_holds_into_the_bytes_leaves_them_to_a_hop)
{
	struct fake_host h;
	struct np_site_plan s;
	CHECK_EQ(plan_mutex(&h, true, BASE + 3, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.form, NP_JUMP_HOP);
	CHECK_EQ(s.plan.end, BASE + 3); /* the test only: the je stays */
	CHECK_EQ(s.plan.jump_len, 2);
	CHECK_EQ(s.plan.hop, BASE + 18);
	/* the pointers unknown, the tail call may land in the nopw: no hop */
	CHECK_EQ(plan_mutex(&h, false, BASE + 3, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
}

static const uint8_t loaded_joined[] = {
	0x48, 0x85, 0xf6,       /* +0  test %rsi,%rsi */
	0x74, 0x04,             /* +3  je +9 */
	0x48, 0x8b, 0x47, 0x10, /* +5  mov 0x10(%rdi),%rax */
	0xff, 0xe0,             /* +9  jmp *%rax: the je brings %rax as it was */
};

/* The value a jump takes is the load's only when nothing lands between
 * the load and the jump. */
TEST(x86_a_branch_between_the_load_and_the_jump_leaves_it_unresolved)
{
	struct fake_host h;
	struct np_fn_view v;
	struct np_site_plan s;
	fake_host_init(&h, BASE, loaded_joined, sizeof(loaded_joined));
	h.held_known = true;
	fake_view(&v, ISA, &h, BASE + sizeof(loaded_joined), BASE + sizeof(loaded_joined), true,
		  BASE, 0);
	CHECK_EQ(v.unresolved, 1);
	CHECK_EQ(fake_site(&v, BASE, &near, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_TRAP_OOL);
	np_fn_view_free(&v);
}

/* A USDT probe's nop after an instruction as long as the jump, a ret and
 * more code after it (STAP_PROBE at the end of a function with a cold
 * path behind): the jump at the instruction before takes the nop in. */
static const uint8_t usdt_before_ret[] = {
	0x48, 0x89, 0xbc, 0x24, 0x00, 0x01, 0x00, 0x00, /* +0  mov %rdi,0x100(%rsp) */
	0x90,                                           /* +8  nop: the probe */
	0xc3,                                           /* +9  ret */
	0xb8, 0x01, 0x00, 0x00, 0x00,                   /* +10 mov $0x1,%eax */
	0xc3,                                           /* +15 ret */
};

TEST(x86_the_jump_before_a_site_covers_the_sites_instruction)
{
	struct fake_host h;
	struct np_site_plan s;
	CHECK_EQ(plan_at(&h, usdt_before_ret, sizeof(usdt_before_ret), BASE + 8, &s), 0);
	CHECK_EQ(s.kind, NP_SITE_JUMP);
	CHECK_EQ(s.plan.start, BASE);
	CHECK_EQ(s.plan.end, BASE + 9);
	CHECK_EQ(s.plan.ninsn, 2);
}

TEST(x86_boundaries_follow_a_sweep_from_the_entry)
{
	struct fake_host h;
	struct np_fn_view v;
	fake_host_init(&h, BASE, frame, sizeof(frame));
	fake_view(&v, ISA, &h, BASE + sizeof(frame), BASE + sizeof(frame), true, BASE, 0);
	CHECK(np_fn_view_is_boundary(&v, BASE + 1));
	CHECK(!np_fn_view_is_boundary(&v, BASE + 2));
	CHECK(np_fn_view_is_boundary(&v, BASE + sizeof(frame))); /* where the sweep ends */
	CHECK_EQ(np_fn_view_previous(&v, BASE + 4), BASE + 1);
	CHECK_EQ(np_fn_view_previous(&v, BASE + 3), 0);
	CHECK_EQ(np_fn_view_previous(&v, BASE), 0);
	CHECK_EQ(np_fn_view_boundary_from(&v, BASE + 2), BASE + 4);
	np_fn_view_free(&v);
	CHECK_EQ(np_fn_view_load(&v, ISA, &h.host,
				 &(struct np_func_bounds){BASE, BASE + 4, BASE + 4, true, true},
				 BASE + 4, 0),
		 -EINVAL); /* outside the function */
	np_fn_view_free(&v);
}

/* Whether t holds the branch target x. */
static bool has_target(const struct np_targets *t, uint64_t x)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i] == x)
			return true;
	return false;
}

/* The last function's end is a guess (64 bytes) that may run past the
 * end of what can be read; its branches were lost, and the whole module's
 * targets reported incomplete, when that guess made its one read fail. */
TEST(x86_the_last_function_is_decoded_up_to_the_end_of_what_can_be_read)
{
	uint8_t code[80];
	memset(code, 0x90, 64);       /* the first function: nops */
	code[63] = 0xc3;              /* +63 ret */
	code[64] = 0xeb;              /* +64 jmp BASE+10 */
	code[65] = (uint8_t)(10 - 66);
	memset(code + 66, 0xcc, sizeof(code) - 66);
	struct fake_host h;
	fake_host_init(&h, BASE, code, sizeof(code));
	const struct np_mem mem = {h.host.read, NULL, h.host.cookie};
	struct np_targets t = {0};
	const uint64_t starts[] = {BASE, BASE + 64};
	CHECK_EQ(np_targets_add_module(&t, ISA, &mem, starts, 2), 0);
	CHECK(has_target(&t, BASE + 10));
	np_targets_free(&t);

	const uint64_t unreadable[] = {BASE, BASE + 64, BASE + sizeof(code)};
	t = (struct np_targets){0};
	CHECK_EQ(np_targets_add_module(&t, ISA, &mem, unreadable, 3), -EFAULT);
	CHECK(has_target(&t, BASE + 10)); /* the others' targets are kept */
	np_targets_free(&t);
}

TEST_MAIN()

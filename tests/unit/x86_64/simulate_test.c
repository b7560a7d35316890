/* SPDX-License-Identifier: MIT */
/*
 * Simulation on a register file and a 4 KiB fake stack. Where the CPU
 * can answer (condition codes, add/sub flags, loop with ecx), an x86-64
 * host also compares the simulator with the hardware.
 */
#include <errno.h>

#include "x86_test.h"

#define STACK 0x7ffffffde000ull /* the fake memory */
#define SP    (STACK + 0x800)
#define RCX   1
#define RSP   4
#define RBP   5
#define R12   12
#define R15   15

#define CF 0x001
#define PF 0x004
#define AF 0x010
#define ZF 0x040
#define SF 0x080
#define OF 0x800
#define ARITH (CF | PF | AF | ZF | SF | OF)

static struct fake_mem stack;

static struct np_regs regs(void)
{
	struct np_regs r = {0};

	fake_mem_init(&stack, STACK);
	for (int i = 0; i < 16; i++)
		r.gpr[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
	r.gpr[RSP] = SP;
	r.flags = 0x202; /* IF and the always-one bit */
	return r;
}

/* Decode b at pc (it must be SIMULATED), then simulate it. */
static int run_at(const uint8_t *b, size_t n, uint64_t pc, struct np_regs *r)
{
	struct np_mem mem = fake_mem_ops(&stack);
	struct np_insn in;

	CHECK_EQ(ISA->decode(b, n, pc, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED);
	r->pc = pc;
	return ISA->simulate(&in, r, &mem);
}

#define RUN(r, ...) run_at((const uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__}), PC, r)

/* ---- stack ---- */

TEST(push_rbp_stores_rbp_below_rsp)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0x55), 0);
	CHECK_EQ(r.gpr[RSP], SP - 8);
	CHECK_EQ(fake_get64(&stack, SP - 8), r.gpr[RBP]);
	CHECK_EQ(r.pc, PC + 1);
}

TEST(push_r12_uses_the_rex_register)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0x41, 0x54), 0);
	CHECK_EQ(fake_get64(&stack, SP - 8), r.gpr[R12]);
	CHECK_EQ(r.pc, PC + 2);
}

TEST(push_rsp_stores_the_value_before_the_decrement)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0x54), 0);
	CHECK_EQ(fake_get64(&stack, SP - 8), SP);
}

TEST(pop_r15_loads_and_releases_the_slot)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0x55), 0); /* push %rbp */
	CHECK_EQ(RUN(&r, 0x41, 0x5f), 0);
	CHECK_EQ(r.gpr[R15], r.gpr[RBP]);
	CHECK_EQ(r.gpr[RSP], SP);
	CHECK_EQ(r.pc, PC + 2);
}

TEST(pop_rsp_loads_rsp_itself)
{
	struct np_regs r = regs();

	fake_put64(&stack, SP, 0x1234);
	CHECK_EQ(RUN(&r, 0x5c), 0);
	CHECK_EQ(r.gpr[RSP], 0x1234);
}

TEST(ret_pops_the_return_address_into_pc)
{
	struct np_regs r = regs();

	fake_put64(&stack, SP, 0x401234);
	CHECK_EQ(RUN(&r, 0xc3), 0);
	CHECK_EQ(r.pc, 0x401234);
	CHECK_EQ(r.gpr[RSP], SP + 8);
}

TEST(ret_imm16_also_releases_the_arguments)
{
	struct np_regs r = regs();

	fake_put64(&stack, SP, 0x401234);
	CHECK_EQ(RUN(&r, 0xc2, 0x10, 0x00), 0); /* ret $0x10 */
	CHECK_EQ(r.pc, 0x401234);
	CHECK_EQ(r.gpr[RSP], SP + 8 + 0x10);
}

TEST(frame_setup_moves_rsp_into_rbp)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0x48, 0x89, 0xe5), 0); /* mov %rsp,%rbp */
	CHECK_EQ(r.gpr[RBP], SP);
	CHECK_EQ(r.pc, PC + 3);
}

/* ---- branches ---- */

TEST(jmp_sets_pc_to_the_target)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0xeb, 0x10), 0);
	CHECK_EQ(r.pc, PC + 0x12);
	CHECK_EQ(RUN(&r, 0xe9, 0x00, 0x01, 0x00, 0x00), 0);
	CHECK_EQ(r.pc, PC + 0x105);
}

TEST(call_pushes_the_next_pc_and_jumps)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0xe8, 0x00, 0x01, 0x00, 0x00), 0);
	CHECK_EQ(r.pc, PC + 0x105);
	CHECK_EQ(r.gpr[RSP], SP - 8);
	CHECK_EQ(fake_get64(&stack, SP - 8), PC + 5);
}

TEST(call_through_register_pushes_the_next_pc)
{
	struct np_regs r = regs();

	r.gpr[11] = 0x402000;
	CHECK_EQ(RUN(&r, 0x41, 0xff, 0xd3), 0); /* call *%r11 */
	CHECK_EQ(r.pc, 0x402000);
	CHECK_EQ(fake_get64(&stack, SP - 8), PC + 3);
}

TEST(call_through_rsp_jumps_to_rsp_before_the_push)
{
	struct np_regs r = regs();

	CHECK_EQ(RUN(&r, 0xff, 0xd4), 0); /* call *%rsp */
	CHECK_EQ(r.pc, SP);
}

TEST(jmp_through_register_sets_pc)
{
	struct np_regs r = regs();

	r.gpr[0] = 0x403000;
	CHECK_EQ(RUN(&r, 0x3e, 0xff, 0xe0), 0); /* notrack jmp *%rax */
	CHECK_EQ(r.pc, 0x403000);
	CHECK_EQ(r.gpr[RSP], SP);
}

/* Condition codes, written out so they also hold on any host. */
TEST(jcc_follows_the_flags)
{
	static const struct {
		uint8_t cc;
		uint64_t flags;
		bool taken;
	} v[] = {
		{0x4, ZF, true},       {0x4, 0, false},     /* je */
		{0x5, ZF, false},      {0x2, CF, true},     /* jne, jb */
		{0x7, CF, false},      {0x7, 0, true},      /* ja */
		{0xc, SF, true},       {0xc, SF | OF, false}, /* jl */
		{0xe, ZF, true},       {0xf, OF, false},    /* jle, jg */
		{0xa, PF, true},       {0x0, OF, true},     /* jp, jo */
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct np_regs r = regs();

		r.flags |= v[i].flags;
		CHECK_EQ(RUN(&r, (uint8_t)(0x70 | v[i].cc), 0x10), 0);
		CHECK_EQ(r.pc, v[i].taken ? PC + 0x12 : PC + 2);
	}
}

#if defined(__x86_64__)
/* set<cc> with rflags loaded by popfq, clear of the red zone. */
#define HW_SETCC(cc)                                                                  \
	static bool hw_set##cc(uint64_t fl)                                           \
	{                                                                             \
		uint8_t r;                                                            \
		__asm__ volatile("lea -128(%%rsp),%%rsp\n\tpushq %1\n\tpopfq\n\t"     \
				 "set" #cc " %0\n\tlea 128(%%rsp),%%rsp"              \
				 : "=q"(r)                                            \
				 : "r"(fl)                                            \
				 : "cc");                                             \
		return r;                                                             \
	}
HW_SETCC(o) HW_SETCC(no) HW_SETCC(b) HW_SETCC(ae) HW_SETCC(e) HW_SETCC(ne) HW_SETCC(be)
HW_SETCC(a) HW_SETCC(s) HW_SETCC(ns) HW_SETCC(p) HW_SETCC(np) HW_SETCC(l) HW_SETCC(ge)
HW_SETCC(le) HW_SETCC(g)

static bool (*const hw_setcc[16])(uint64_t) = {
	hw_seto, hw_setno, hw_setb, hw_setae, hw_sete, hw_setne, hw_setbe, hw_seta,
	hw_sets, hw_setns, hw_setp, hw_setnp, hw_setl, hw_setge, hw_setle, hw_setg,
};
#endif

TEST(every_jcc_decides_like_the_cpu_for_every_flag_combination)
{
#if defined(__x86_64__)
	static const uint64_t bits[] = {CF, PF, AF, ZF, SF, OF};

	for (unsigned cc = 0; cc < 16; cc++) {
		for (unsigned combo = 0; combo < 64; combo++) {
			struct np_regs r = regs();

			for (unsigned b = 0; b < 6; b++)
				if (combo & (1u << b))
					r.flags |= bits[b];
			CHECK_EQ(RUN(&r, 0x0f, (uint8_t)(0x80 | cc), 0x10, 0, 0, 0), 0);
			CHECK_EQ(r.pc == PC + 0x16, hw_setcc[cc](r.flags));
		}
	}
#else
	printf("# skip: needs an x86-64 host\n");
#endif
}

TEST(jrcxz_jumps_only_when_rcx_is_zero)
{
	struct np_regs r = regs();

	r.gpr[RCX] = 0;
	CHECK_EQ(RUN(&r, 0xe3, 0x10), 0);
	CHECK_EQ(r.pc, PC + 0x12);
	r.gpr[RCX] = 0x100000000ull;
	CHECK_EQ(RUN(&r, 0xe3, 0x10), 0);
	CHECK_EQ(r.pc, PC + 2);
	CHECK_EQ(RUN(&r, 0x67, 0xe3, 0x10), 0); /* jecxz: ecx is 0 */
	CHECK_EQ(r.pc, PC + 0x13);
}

TEST(loop_decrements_rcx_without_touching_flags)
{
	struct np_regs r = regs();

	r.gpr[RCX] = 2;
	r.flags |= ZF | CF;
	CHECK_EQ(RUN(&r, 0xe2, 0x10), 0);
	CHECK_EQ(r.gpr[RCX], 1);
	CHECK_EQ(r.pc, PC + 0x12);
	CHECK_EQ(RUN(&r, 0xe2, 0x10), 0);
	CHECK_EQ(r.gpr[RCX], 0);
	CHECK_EQ(r.pc, PC + 2);
	CHECK_EQ(r.flags, 0x202 | ZF | CF);
}

/* Checked on hardware: with addr32, loop writes ecx and clears the top. */
TEST(loopl_counts_in_ecx_and_clears_the_top_half)
{
	struct np_regs r = regs();

	r.gpr[RCX] = 0xffffffff00000005ull;
	CHECK_EQ(RUN(&r, 0x67, 0xe2, 0x10), 0);
	CHECK_EQ(r.gpr[RCX], 4);
	CHECK_EQ(r.pc, PC + 0x13);
}

TEST(loope_and_loopne_also_test_zf)
{
	struct np_regs r = regs();

	r.gpr[RCX] = 5;
	CHECK_EQ(RUN(&r, 0xe1, 0x10), 0); /* loope, ZF clear: falls through */
	CHECK_EQ(r.pc, PC + 2);
	CHECK_EQ(RUN(&r, 0xe0, 0x10), 0); /* loopne, ZF clear: taken */
	CHECK_EQ(r.pc, PC + 0x12);
	r.flags |= ZF;
	CHECK_EQ(RUN(&r, 0xe1, 0x10), 0); /* loope, ZF set: taken */
	CHECK_EQ(r.pc, PC + 0x12);
	CHECK_EQ(r.gpr[RCX], 2);
}

/* ---- lea, nops ---- */

TEST(lea_rip_writes_the_address)
{
	struct np_regs r = regs();

	CHECK_EQ(run_at((const uint8_t[]){0x4c, 0x8d, 0x3d, 0xf9, 0xff, 0xff, 0xff}, 7,
			0x7f0000401000ull, &r),
		 0); /* lea -0x7(%rip),%r15 */
	CHECK_EQ(r.gpr[R15], 0x7f0000401000ull);
	CHECK_EQ(r.pc, 0x7f0000401007ull);
}

TEST(lea_rip_into_a_32_bit_register_zero_extends)
{
	struct np_regs r = regs();

	CHECK_EQ(run_at((const uint8_t[]){0x8d, 0x05, 0x00, 0x01, 0x00, 0x00}, 6,
			0x7f0000401000ull, &r),
		 0); /* lea 0x100(%rip),%eax */
	CHECK_EQ(r.gpr[0], 0x00401106ull);
}

TEST(every_nop_form_and_endbr64_only_advance_pc)
{
	for (size_t i = 0; i < x86_nvectors; i++) {
		const struct x86_vec *v = &x86_vectors[i];
		struct np_regs r = regs(), before;

		if (!(v->flags & NP_INSN_PADDING) && strcmp(v->text, "endbr64") != 0)
			continue;
		if (v->cls != NP_INSN_SIMULATED)
			continue; /* int3 */
		before = r;
		CHECK_EQ(run_at(v->b, v->len, PC, &r), 0);
		CHECK_EQ(r.pc, PC + v->len);
		r.pc = before.pc = 0;
		CHECK(memcmp(&r, &before, sizeof(r)) == 0);
	}
}

/* ---- add/sub $imm,%rsp with flags ---- */

TEST(sub_rsp_sets_the_flags_of_the_subtraction)
{
	struct np_regs r = regs();

	r.gpr[RSP] = 0x10;
	CHECK_EQ(RUN(&r, 0x48, 0x83, 0xec, 0x18), 0); /* sub $0x18,%rsp */
	CHECK_EQ(r.gpr[RSP], (uint64_t)-8);
	CHECK_EQ(r.flags & ARITH, CF | AF | SF); /* 0xf8: five ones, odd: no PF */
	CHECK_EQ(r.pc, PC + 4);
	r.gpr[RSP] = 0x18;
	CHECK_EQ(RUN(&r, 0x48, 0x83, 0xec, 0x18), 0);
	CHECK_EQ(r.flags & ARITH, ZF | PF);
}

TEST(add_rsp_sets_the_flags_of_the_addition)
{
	struct np_regs r = regs();

	r.gpr[RSP] = 0x7ffffffffffffff8ull;
	CHECK_EQ(RUN(&r, 0x48, 0x83, 0xc4, 0x08), 0); /* add $0x8,%rsp */
	CHECK_EQ(r.gpr[RSP], 0x8000000000000000ull);
	CHECK_EQ(r.flags & ARITH, OF | SF | AF | PF);
}

#if defined(__x86_64__)
static uint64_t hw_flags(bool sub, uint64_t a, uint64_t b)
{
	uint64_t fl;

	if (sub)
		__asm__ volatile("sub %2,%1\n\tlea -128(%%rsp),%%rsp\n\tpushfq\n\tpopq %0\n\t"
				 "lea 128(%%rsp),%%rsp"
				 : "=r"(fl), "+r"(a)
				 : "r"(b)
				 : "cc");
	else
		__asm__ volatile("add %2,%1\n\tlea -128(%%rsp),%%rsp\n\tpushfq\n\tpopq %0\n\t"
				 "lea 128(%%rsp),%%rsp"
				 : "=r"(fl), "+r"(a)
				 : "r"(b)
				 : "cc");
	return fl & ARITH;
}
#endif

TEST(add_and_sub_rsp_flags_match_the_cpu)
{
#if defined(__x86_64__)
	static const uint64_t rsp[] = {0, 1, 0x8, 0x10, 0xff, 0x7fffffffffffffffull,
				       0x8000000000000000ull, 0x8000000000000007ull,
				       0xfffffffffffffff8ull, 0x7ffc12345678ull};
	static const uint8_t imm[] = {0x00, 0x01, 0x08, 0x18, 0x7f};

	for (size_t i = 0; i < sizeof(rsp) / sizeof(rsp[0]); i++) {
		for (size_t j = 0; j < sizeof(imm); j++) {
			struct np_regs r = regs();

			r.gpr[RSP] = rsp[i];
			CHECK_EQ(RUN(&r, 0x48, 0x83, 0xec, imm[j]), 0);
			CHECK_EQ(r.flags & ARITH, hw_flags(true, rsp[i], imm[j]));
			r.gpr[RSP] = rsp[i];
			CHECK_EQ(RUN(&r, 0x48, 0x83, 0xc4, imm[j]), 0);
			CHECK_EQ(r.flags & ARITH, hw_flags(false, rsp[i], imm[j]));
			CHECK_EQ(r.flags & ~(uint64_t)ARITH, 0x202);
		}
	}
#else
	printf("# skip: needs an x86-64 host\n");
#endif
}

/* ---- errors ---- */

TEST(faulting_stack_access_is_efault_and_changes_nothing)
{
	struct np_regs r = regs(), before;

	r.gpr[RSP] = 0x1000; /* outside the fake memory */
	before = r;
	CHECK_EQ(RUN(&r, 0x55), -EFAULT);
	CHECK_EQ(RUN(&r, 0x5d), -EFAULT);
	CHECK_EQ(RUN(&r, 0xc3), -EFAULT);
	CHECK_EQ(RUN(&r, 0xe8, 0, 0, 0, 0), -EFAULT);
	CHECK_EQ(RUN(&r, 0xff, 0xd0), -EFAULT);
	r.pc = before.pc;
	CHECK(memcmp(&r, &before, sizeof(r)) == 0);
}

TEST(out_of_line_instruction_is_not_simulated)
{
	const uint8_t b[] = {0x48, 0x01, 0xd0}; /* add %rdx,%rax */
	struct np_mem mem = fake_mem_ops(&stack);
	struct np_regs r = regs();
	struct np_insn in;

	CHECK_EQ(ISA->decode(b, sizeof(b), PC, &in), 0);
	CHECK_EQ(ISA->simulate(&in, &r, &mem), -EOPNOTSUPP);
}

TEST(every_simulated_vector_simulates)
{
	for (size_t i = 0; i < x86_nvectors; i++) {
		struct np_regs r = regs();

		r.gpr[0] = r.gpr[11] = 0x402000; /* indirect targets */
		fake_put64(&stack, SP, 0x401234); /* for ret */
		if (x86_vectors[i].cls == NP_INSN_SIMULATED)
			CHECK_EQ(run_at(x86_vectors[i].b, x86_vectors[i].len, PC, &r), 0);
	}
}

TEST_MAIN()

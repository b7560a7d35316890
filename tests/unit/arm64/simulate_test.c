/* SPDX-License-Identifier: MIT */
/*
 * Simulation: each SIMULATED form performs the architecture's effect on a
 * register file and a fake memory, including the corner cases (xzr,
 * 32-bit forms, blr x30, faults that must leave the registers as they
 * were), and the conditions agree with the C comparisons they implement.
 */
#include <errno.h>

#include "a64_test.h"

#define STACK 0x7ffff000ull

static struct np_insn decoded(uint32_t w, uint64_t pc)
{
	uint8_t b[4];
	struct np_insn in;

	a64_le(b, w);
	CHECK_EQ(ISA->decode(b, 4, pc, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED);
	return in;
}

static int run(uint32_t w, struct np_regs *r, struct fake_mem *m)
{
	struct np_insn in = decoded(w, PC);
	struct np_mem mem = fake_mem_ops(m);

	r->pc = PC;
	return ISA->simulate(&in, r, &mem);
}

TEST(stp_x29_x30_pre_index_pushes_the_frame_record)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	fake_mem_init(&m, STACK - 2048);
	r.gpr[31] = STACK;
	r.gpr[29] = 0x1111;
	r.gpr[30] = 0x2222;
	CHECK_EQ(run(0xa9bf7bfd, &r, &m), 0); /* stp x29, x30, [sp, #-16]! */
	CHECK_EQ(r.gpr[31], STACK - 16);
	CHECK_EQ(fake_get64(&m, STACK - 16), 0x1111);
	CHECK_EQ(fake_get64(&m, STACK - 8), 0x2222);
	CHECK_EQ(r.pc, PC + 4);
}

TEST(stp_w_pre_index_stores_32_bit_halves)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	fake_mem_init(&m, STACK - 2048);
	r.gpr[31] = STACK;
	r.gpr[0] = 0xaaaaaaaa11111111ull;
	r.gpr[1] = 0xbbbbbbbb22222222ull;
	CHECK_EQ(run(0x29bf07e0, &r, &m), 0); /* stp w0, w1, [sp, #-8]! */
	CHECK_EQ(r.gpr[31], STACK - 8);
	CHECK_EQ(fake_get64(&m, STACK - 8), 0x2222222211111111ull);
}

TEST(stp_of_xzr_stores_zeros_not_sp)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	fake_mem_init(&m, STACK - 2048);
	fake_put64(&m, STACK - 16, ~0ull);
	r.gpr[31] = STACK;
	CHECK_EQ(run(0xa9bf7fff, &r, &m), 0); /* stp xzr, xzr, [sp, #-16]! */
	CHECK_EQ(fake_get64(&m, STACK - 16), 0);
}

TEST(stp_that_faults_changes_no_register)
{
	struct np_regs r = {0}, before;
	static struct fake_mem m;

	fake_mem_init(&m, STACK + 4096); /* the stack is not mapped */
	r.gpr[31] = STACK;
	before = r;
	before.pc = PC;
	CHECK_EQ(run(0xa9bf7bfd, &r, &m), -EFAULT);
	CHECK(memcmp(&r, &before, sizeof(r)) == 0);
}

TEST(b_and_bl_go_to_the_target_and_bl_links)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	CHECK_EQ(run(0x14000004, &r, &m), 0);
	CHECK_EQ(r.pc, PC + 0x10);
	CHECK_EQ(r.gpr[30], 0);
	CHECK_EQ(run(0x97fffc00, &r, &m), 0); /* bl 0x400000 */
	CHECK_EQ(r.pc, 0x400000);
	CHECK_EQ(r.gpr[30], PC + 4);
}

TEST(ret_br_blr_use_the_register_and_blr_x30_reads_it_first)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	r.gpr[30] = 0x5000;
	CHECK_EQ(run(0xd65f03c0, &r, &m), 0); /* ret */
	CHECK_EQ(r.pc, 0x5000);
	r.gpr[16] = 0x6000;
	CHECK_EQ(run(0xd61f0200, &r, &m), 0); /* br x16 */
	CHECK_EQ(r.pc, 0x6000);
	CHECK_EQ(run(0xd63f03c0, &r, &m), 0); /* blr x30 */
	CHECK_EQ(r.pc, 0x5000);
	CHECK_EQ(r.gpr[30], PC + 4);
}

/* NZCV of `cmp a, b` (subs xzr, a, b), computed as the manual defines it. */
static uint64_t cmp_flags(uint64_t a, uint64_t b)
{
	uint64_t d = a - b;
	uint64_t f = 0;

	f |= (d >> 63) ? 1ull << 31 : 0;
	f |= d == 0 ? 1ull << 30 : 0;
	f |= a >= b ? 1ull << 29 : 0;                           /* no borrow */
	f |= ((a ^ b) & (a ^ d)) >> 63 ? 1ull << 28 : 0;      /* signed overflow */
	return f;
}

TEST(b_cond_agrees_with_c_comparisons_after_cmp)
{
	static const uint64_t vals[] = {0, 1, 2, 0x7fffffffffffffffull, 0x8000000000000000ull,
					~0ull, 42};
	struct np_regs r = {0};
	static struct fake_mem m;

	for (size_t i = 0; i < 7; i++)
		for (size_t j = 0; j < 7; j++) {
			uint64_t a = vals[i], b = vals[j];
			int64_t sa = (int64_t)a, sb = (int64_t)b;
			bool want[16] = {a == b, a != b, a >= b, a < b, (int64_t)(a - b) < 0,
					 (int64_t)(a - b) >= 0, false, false, a > b, a <= b,
					 sa >= sb, sa < sb, sa > sb, sa <= sb, true, true};
			bool v = ((a ^ b) & (a ^ (a - b))) >> 63;

			want[6] = v;
			want[7] = !v;
			for (unsigned c = 0; c < 16; c++) {
				r.flags = cmp_flags(a, b);
				CHECK_EQ(run(0x54000080u | c, &r, &m), 0); /* b.<c> .+0x10 */
				CHECK_EQ(r.pc, want[c] ? PC + 0x10 : PC + 4);
			}
		}
}

TEST(cbz_32_bit_tests_only_the_low_word)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	r.gpr[0] = 0x100000000ull;
	CHECK_EQ(run(0x34000080, &r, &m), 0); /* cbz w0 */
	CHECK_EQ(r.pc, PC + 0x10);
	CHECK_EQ(run(0xb5000080, &r, &m), 0); /* cbnz x0 */
	CHECK_EQ(r.pc, PC + 0x10);
	r.gpr[0] = 0;
	CHECK_EQ(run(0xb5000080, &r, &m), 0);
	CHECK_EQ(r.pc, PC + 4);
}

TEST(tbz_and_tbnz_test_the_named_bit)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	r.gpr[1] = 1ull << 33;
	CHECK_EQ(run(0xb7080081, &r, &m), 0); /* tbnz x1, #33 */
	CHECK_EQ(r.pc, PC + 0x10);
	CHECK_EQ(run(0x36180081, &r, &m), 0); /* tbz w1, #3 */
	CHECK_EQ(r.pc, PC + 0x10);
	r.gpr[1] = 8;
	CHECK_EQ(run(0x36180081, &r, &m), 0);
	CHECK_EQ(r.pc, PC + 4);
}

TEST(adr_and_adrp_write_the_address)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	CHECK_EQ(run(0x70000000, &r, &m), 0); /* adr x0, .+3 */
	CHECK_EQ(r.gpr[0], PC + 3);
	CHECK_EQ(run(0xb0000001, &r, &m), 0); /* adrp x1, +1 page */
	CHECK_EQ(r.gpr[1], PC + 0x1000);
	CHECK_EQ(r.pc, PC + 4);
}

TEST(ldr_literal_loads_with_the_form_width_and_sign)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	fake_mem_init(&m, PC);
	fake_put64(&m, PC + 0x10, 0x80000000fffffffeull);
	CHECK_EQ(run(0x58000080, &r, &m), 0); /* ldr x0 */
	CHECK_EQ(r.gpr[0], 0x80000000fffffffeull);
	CHECK_EQ(run(0x18000080, &r, &m), 0); /* ldr w0 */
	CHECK_EQ(r.gpr[0], 0xfffffffeull);
	CHECK_EQ(run(0x98000080, &r, &m), 0); /* ldrsw x0 */
	CHECK_EQ(r.gpr[0], (uint64_t)-2);
}

TEST(ldr_literal_that_faults_changes_no_register)
{
	struct np_regs r = {0};
	static struct fake_mem m;

	fake_mem_init(&m, 0x10000000);
	r.gpr[0] = 7;
	CHECK_EQ(run(0x58000080, &r, &m), -EFAULT);
	CHECK_EQ(r.gpr[0], 7);
	CHECK_EQ(r.pc, PC);
}

TEST(nop_and_prfm_only_advance_pc)
{
	struct np_regs r = {0}, before = {0};
	static struct fake_mem m;

	before.pc = PC + 4;
	CHECK_EQ(run(0xd503201f, &r, &m), 0);
	CHECK(memcmp(&r, &before, sizeof(r)) == 0);
	CHECK_EQ(run(0xd8000080, &r, &m), 0);
	CHECK(memcmp(&r, &before, sizeof(r)) == 0);
}

TEST(an_instruction_that_is_not_simulated_is_eopnotsupp)
{
	uint8_t b[4];
	struct np_insn in;
	struct np_regs r = {0};
	static struct fake_mem m;
	struct np_mem mem = fake_mem_ops(&m);

	a64_le(b, 0x910003fd); /* mov x29, sp */
	CHECK_EQ(ISA->decode(b, 4, PC, &in), 0);
	CHECK_EQ(ISA->simulate(&in, &r, &mem), -EOPNOTSUPP);
}

TEST_MAIN()

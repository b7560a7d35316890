/* SPDX-License-Identifier: MIT */
/*
 * Simulation: each control-flow form and auipc performed on a register
 * file, compressed forms included, with the link value pc + len.
 */
#include <errno.h>

#include "rv_test.h"

#define A0 10
#define A1 11
#define A5 15
#define RA 1
#define T0 5

static struct np_regs regs_at(uint64_t pc)
{
	struct np_regs r;

	memset(&r, 0, sizeof(r));
	for (int i = 1; i < NP_NGPR; i++)
		r.gpr[i] = 0x1000 + (uint64_t)i;
	r.pc = pc;
	return r;
}

static int sim(const uint8_t *b, size_t n, struct np_regs *r)
{
	struct np_insn in;
	struct np_mem mem = {NULL, NULL, NULL};

	CHECK_EQ(ISA->decode(b, n, r->pc, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED);
	return ISA->simulate(&in, r, &mem);
}

TEST(jal_links_and_jumps)
{
	const uint8_t b[] = {0xef, 0x00, 0x00, 0x10}; /* jal .+0x100 */
	struct np_regs r = regs_at(PC);

	CHECK_EQ(sim(b, 4, &r), 0);
	CHECK_EQ(r.pc, PC + 0x100);
	CHECK_EQ(r.gpr[RA], PC + 4);
}

TEST(jal_through_t0_links_t0_for_millicode)
{
	const uint8_t b[] = {0xef, 0x02, 0x10, 0x00}; /* jal t0,.+0x800 */
	struct np_regs r = regs_at(PC);

	CHECK_EQ(sim(b, 4, &r), 0);
	CHECK_EQ(r.pc, PC + 0x800);
	CHECK_EQ(r.gpr[T0], PC + 4);
	CHECK_EQ(r.gpr[RA], 0x1000 + RA);
}

TEST(compressed_j_jumps_back_without_linking)
{
	const uint8_t b[] = {0x01, 0xb0}; /* c.j .-0x800 */
	struct np_regs r = regs_at(PC), before = r;

	CHECK_EQ(sim(b, 2, &r), 0);
	CHECK_EQ(r.pc, PC - 0x800);
	CHECK(memcmp(r.gpr, before.gpr, sizeof(r.gpr)) == 0);
}

TEST(ret_returns_to_ra_clearing_bit_zero)
{
	const uint8_t b[] = {0x82, 0x80}; /* ret (c.jr ra) */
	struct np_regs r = regs_at(PC);

	r.gpr[RA] = 0x20001;
	CHECK_EQ(sim(b, 2, &r), 0);
	CHECK_EQ(r.pc, 0x20000);
}

TEST(compressed_jalr_links_pc_plus_two)
{
	const uint8_t b[] = {0x82, 0x97}; /* c.jalr a5 */
	struct np_regs r = regs_at(PC);

	r.gpr[A5] = 0x30000;
	CHECK_EQ(sim(b, 2, &r), 0);
	CHECK_EQ(r.pc, 0x30000);
	CHECK_EQ(r.gpr[RA], PC + 2);
}

TEST(jalr_reads_its_base_before_writing_the_link)
{
	const uint8_t b[] = {0xe7, 0x80, 0x00, 0x00}; /* jalr ra,0(ra) */
	struct np_regs r = regs_at(PC);

	r.gpr[RA] = 0x40000;
	CHECK_EQ(sim(b, 4, &r), 0);
	CHECK_EQ(r.pc, 0x40000);
	CHECK_EQ(r.gpr[RA], PC + 4);
}

TEST(auipc_writes_pc_plus_its_immediate)
{
	const uint8_t b[] = {0x17, 0xf3, 0xff, 0xff}; /* auipc t1,0xfffff */
	struct np_regs r = regs_at(PC);

	CHECK_EQ(sim(b, 4, &r), 0);
	CHECK_EQ(r.gpr[6], PC - 0x1000);
	CHECK_EQ(r.pc, PC + 4);
}

struct branch_case {
	uint8_t b[4];
	size_t n;
	uint64_t a0, a1;
	bool taken;
	uint64_t target;
};

TEST(every_branch_condition_taken_and_not_taken)
{
	static const struct branch_case cases[] = {
		{{0x63, 0x00, 0xb5, 0x04}, 4, 5, 5, true, PC + 0x40},          /* beq a0,a1 */
		{{0x63, 0x00, 0xb5, 0x04}, 4, 5, 6, false, PC + 0x40},
		{{0x63, 0x10, 0xb5, 0x04}, 4, 5, 6, true, PC + 0x40},          /* bne a0,a1 */
		{{0x63, 0x10, 0xb5, 0x04}, 4, 5, 5, false, PC + 0x40},
		{{0xe3, 0x4f, 0xb5, 0x7e}, 4, (uint64_t)-1, 0, true, PC + 0xffe}, /* blt: signed */
		{{0xe3, 0x4f, 0xb5, 0x7e}, 4, 0, (uint64_t)-1, false, PC + 0xffe},
		{{0x63, 0x58, 0xa0, 0x00}, 4, 0, 0, true, PC + 0x10},          /* blez a0 */
		{{0x63, 0x58, 0xa0, 0x00}, 4, 1, 0, false, PC + 0x10},
		{{0x63, 0x60, 0xb5, 0x80}, 4, 0, (uint64_t)-1, true, PC - 0x1000}, /* bltu a0,a1 */
		{{0x63, 0x60, 0xb5, 0x80}, 4, (uint64_t)-1, 0, false, PC - 0x1000},
		{{0x63, 0x72, 0xb5, 0x00}, 4, (uint64_t)-1, 0, true, PC + 4},  /* bgeu a0,a1 */
		{{0x63, 0x72, 0xb5, 0x00}, 4, 0, 1, false, PC + 4},
		{{0x21, 0xc1}, 2, 0, 0, true, PC + 0x40},                      /* c.beqz a0 */
		{{0x21, 0xc1}, 2, 1, 0, false, PC + 0x40},
		{{0x65, 0xfd}, 2, 1, 0, true, PC - 8},                         /* c.bnez a0 */
		{{0x65, 0xfd}, 2, 0, 0, false, PC - 8},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct branch_case *c = &cases[i];
		struct np_regs r = regs_at(PC);

		r.gpr[A0] = c->a0;
		r.gpr[A1] = c->a1;
		CHECK_EQ(sim(c->b, c->n, &r), 0);
		if (r.pc != (c->taken ? c->target : PC + c->n))
			fprintf(stderr, "case %zu\n", i);
		CHECK_EQ(r.pc, c->taken ? c->target : PC + c->n);
	}
}

TEST(writes_to_x0_are_dropped)
{
	const uint8_t b[] = {0x17, 0x10, 0x00, 0x00}; /* auipc zero,0x1 */
	struct np_regs r = regs_at(PC);

	CHECK_EQ(sim(b, 4, &r), 0);
	CHECK_EQ(r.gpr[0], 0);
}

TEST(out_of_line_instructions_are_not_simulated)
{
	const uint8_t b[] = {0x13, 0x05, 0x50, 0x00}; /* li a0,5 */
	struct np_insn in;
	struct np_regs r = regs_at(PC);
	struct np_mem mem = {NULL, NULL, NULL};

	CHECK_EQ(ISA->decode(b, 4, PC, &in), 0);
	CHECK_EQ(ISA->simulate(&in, &r, &mem), -EOPNOTSUPP);
}

TEST_MAIN()

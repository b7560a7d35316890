/* SPDX-License-Identifier: MIT */
/* Branch targets of a whole function, and the indirect jumps it cannot see through. */
#include "a64_test.h"

struct found {
	uint64_t v[32]; /* branch targets, and addresses adr forms */
	size_t n;
	size_t nformed;
};

static void on_target(void *cookie, uint64_t from, uint64_t t)
{
	struct found *f = cookie;

	(void)from;
	if (f->n < 32)
		f->v[f->n++] = t;
}

/* adr's address may be a target too: a switch base, a label (the
 * planner keeps those inside the function) */
static void on_formed(void *cookie, uint64_t from, uint64_t addr)
{
	struct found *f = cookie;

	f->nformed++;
	on_target(cookie, from, addr);
}

static int targets(const uint32_t *w, size_t n, struct found *f)
{
	uint8_t b[256];
	static struct fake_mem m;
	struct np_mem mem = fake_mem_ops(&m);

	for (size_t i = 0; i < n; i++)
		a64_le(b + 4 * i, w[i]);
	memset(f, 0, sizeof(*f));
	struct np_branch_sink sink = {on_target, on_formed, NULL, f};

	return ISA->branch_targets(b, 4 * n, PC, &mem, &sink);
}

TEST(direct_branches_report_their_targets_calls_included)
{
	const uint32_t fn[] = {
		0xb4000060, /* 0: cbz x0, 0xc */
		0x94000400, /* 4: bl 0x1004 */
		0x54ffffc1, /* 8: b.ne 0x0 */
		0x36080040, /* c: tbz w0, #1, 0x14 */
		0xd65f03c0, /* 10: ret */
		0xd65f03c0, /* 14: ret */
	};
	struct found f;

	CHECK_EQ(targets(fn, 6, &f), 0);
	CHECK_EQ(f.n, 4);
	CHECK_EQ(f.v[0], PC + 0xc);
	CHECK_EQ(f.v[1], PC + 0x1004);
	CHECK_EQ(f.v[2], PC);
	CHECK_EQ(f.v[3], PC + 0x14);
}

/* gcc's switch: adr x1, base; ldrb w0, [x2, w0, uxtw]; add x0, x1, w0, sxtb #2; br x0 */
TEST(a_switch_reports_its_adr_base_and_counts_the_br_unresolved)
{
	const uint32_t fn[] = {0x10000081, 0x38604840, 0x8b208820, 0xd61f0000,
			       0xd65f03c0, 0xd65f03c0};
	struct found f;

	CHECK_EQ(targets(fn, 6, &f), 1);
	CHECK_EQ(f.n, 1);
	CHECK_EQ(f.v[0], PC + 0x10);
}

TEST(adr_of_data_outside_the_function_is_formed_not_branched_to)
{
	const uint32_t fn[] = {0x10080000, 0xd65f03c0}; /* adr x0, .+0x10000; ret */
	struct found f;

	CHECK_EQ(targets(fn, 2, &f), 0);
	CHECK_EQ(f.nformed, 1);
	CHECK_EQ(f.v[0], PC + 0x10000);
}

TEST(calls_and_returns_through_registers_are_not_unresolved)
{
	const uint32_t fn[] = {0xd63f0100, 0xd65f03c0, 0xd65f0bff}; /* blr x8; ret; retaa */
	struct found f;

	CHECK_EQ(targets(fn, 3, &f), 0);
}

TEST(a_run_of_undecodable_words_counts_once)
{
	const uint32_t fn[] = {0xd65f03c0, 0x02000000, 0x06000000, 0xd503201f, 0x02000000};
	struct found f;

	CHECK_EQ(targets(fn, 5, &f), 2);
}

TEST_MAIN()

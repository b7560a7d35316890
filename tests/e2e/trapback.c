/* SPDX-License-Identifier: MIT */
/*
 * TRAP where the out-of-line copy cannot jump back (riscv64): with every
 * page within a jal's reach (+-1 MiB) of the probed code taken and no
 * register free after the instruction, the copy ends with a breakpoint
 * whose SIGTRAP sends the thread back (region.c, trap.c). Before, such a
 * probe was refused ("no out-of-line slot within reach and no register
 * known to be free to jump back with"): in Debian's riscv64 python3 (a
 * non-PIE program with 6 MB of text) about 800 function entries were.
 * Results stay right, every hit is counted once (the breakpoint after the
 * copy is no hit), alone and in a batch, under forced TRAP and AUTO, and
 * after a detach the function runs as before.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

extern uint64_t tb_far(const uint64_t *p);
extern uint8_t tb_far_lui[], tb_far_load[], tb_far_add[];

#define MIB (1ull << 20)
#define REACH (MIB + MIB / 4) /* a little more than jal's, and a chunk */
#define CALLS 1000
#define NS 3

static uint8_t *const sites[NS] = {tb_far_lui, tb_far_load, tb_far_add};
static struct e2e_counter counts[NS];

static uint64_t want(uint64_t x)
{
	return x + 0x12345 + 19;
}

static void run_and_count(void)
{
	memset(counts, 0, sizeof(counts));
	for (int i = 0; i < NS; i++)
		counts[i].addr = (uintptr_t)sites[i];
	for (uint64_t x = 0; x < CALLS; x++)
		CHECK_EQ(tb_far(&x), want(x));
}

static void check_counts(struct np_probe *const *p)
{
	for (int i = 0; i < NS; i++) {
		CHECK_EQ(counts[i].hits, CALLS);
		CHECK_EQ(counts[i].bad_pc, 0);
		CHECK_EQ(np_probe_hits(p[i]), CALLS);
	}
}

static void reserve_once(void)
{
	static int done;
	if (!done++)
		CHECK_EQ(e2e_reserve_around((uintptr_t)tb_far, REACH), 0);
}

static void attach_each(enum np_strategy s, struct np_probe **p)
{
	e2e_log_capture();
	for (int i = 0; i < NS; i++) {
		struct np_probe_opts o = e2e_opts(e2e_count, &counts[i], s);
		p[i] = np_probe_attach(sites[i], &o);
		if (!p[i])
			fprintf(stderr, "# site %d: %s\n", i, e2e_log_state.last);
		CHECK(p[i] != NULL);
	}
}

TEST(forced_trap_with_no_way_back_traps_back)
{
	struct np_probe *p[NS];
	reserve_once();
	attach_each(NP_STRATEGY_TRAP, p);
	if (!p[0] || !p[1] || !p[2])
		return;
	for (int i = 0; i < NS; i++)
		CHECK_EQ(np_probe_strategy(p[i]), NP_STRATEGY_TRAP);
	run_and_count();
	check_counts(p);
	for (int i = 0; i < NS; i++)
		CHECK_EQ(e2e_detach_free(p[i]), 0);
	for (uint64_t x = 0; x < 10; x++)
		CHECK_EQ(tb_far(&x), want(x));
}

TEST(auto_falls_back_to_such_a_trap)
{
	struct np_probe *p[NS];
	reserve_once();
	attach_each(NP_STRATEGY_AUTO, p);
	if (!p[0] || !p[1] || !p[2])
		return;
	run_and_count();
	check_counts(p);
	for (int i = 0; i < NS; i++)
		CHECK_EQ(e2e_detach_free(p[i]), 0);
}

TEST(a_batch_traps_back_too)
{
	struct np_probe *p[NS];
	struct np_probe_opts o[NS];
	const struct np_probe_opts *op[NS];
	void *addrs[NS];
	int errs[NS];
	reserve_once();
	for (int i = 0; i < NS; i++) {
		o[i] = e2e_opts(e2e_count, &counts[i], NP_STRATEGY_TRAP);
		op[i] = &o[i];
		addrs[i] = sites[i];
	}
	CHECK_EQ(np_probe_attach_many(&NP_PROBE_MANY_OPTS(.cnt = NS, .addrs = addrs, .opts = op,
							   .probes = p, .errs = errs)),
		 NS);
	run_and_count();
	check_counts(p);
	CHECK_EQ(np_probe_detach_many(p, NS), 0);
	for (int i = 0; i < NS; i++)
		np_probe_free(p[i]);
	for (uint64_t x = 0; x < 10; x++)
		CHECK_EQ(tb_far(&x), want(x));
}

TEST_MAIN()

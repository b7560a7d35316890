/* SPDX-License-Identifier: MIT */
/*
 * The long JUMP form on arm64: with every page within a b's reach
 * (+-128 MiB) of the probed code taken, AUTO still gives JUMP, patched as
 * adrp; add; br through a register the free-register analysis found free
 * (x16 at a function entry), to a trampoline up to 2 GiB away, which
 * rebuilds the displaced cbz, adr and bl through scratch registers and
 * jumps back the same way. Hit counts are exact, results unchanged, and
 * detaching puts the original words back; alone and in a batch.
 *
 * In code mapped with BTI guards the long form cannot jump back (a br
 * must land on a bti there): such a site falls back to TRAP.
 *
 * The reservation is made before the first probe, so that no trampoline
 * memory exists near the code yet; the program's heap cannot grow by brk
 * afterwards either (malloc falls back to mmap).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "e2e.h"
#include "test.h"

typedef uint64_t fn_t(uint64_t);
extern fn_t far_entry, far_branch, far_call;
extern uint8_t far_branch_site[], far_call_site[];
extern fn_t pac_a_twice; /* libbtitarget (bti_arm64.S): guarded where BTI is */

#define MIB (1ull << 20)
#define REACH (130 * MIB) /* a little more than b's */
#define CALLS 1000

static uint64_t want_entry(uint64_t x) { return 3 * x + 7; }
static uint64_t want_branch(uint64_t x) { return x ? x + 100 : 1; }
static uint64_t want_call(uint64_t x) { return want_entry(x) + 1000; }

static bool is_long_jump(const uint8_t *site)
{
	uint32_t w[3];
	memcpy(w, site, sizeof(w));
	return (w[0] & 0x9f000000u) == 0x90000000u && /* adrp xN */
	       (w[1] & 0xffc00000u) == 0x91000000u && /* add xN, xN, #lo12 */
	       (w[2] & 0xfffffc1fu) == 0xd61f0000u && /* br xN */
	       (w[0] & 31) == (w[2] >> 5 & 31);
}

struct target {
	const char *name;
	uint8_t *site;
	fn_t *fn;
	uint64_t (*want)(uint64_t);
	uint64_t hits_per_call[3]; /* hits of the three probes per call of fn */
};

static const struct target targets[] = {
	{"far_entry", (uint8_t *)far_entry, far_entry, want_entry, {1, 0, 0}},
	{"far_branch", far_branch_site, far_branch, want_branch, {0, 1, 0}},
	{"far_call", far_call_site, far_call, want_call, {1, 0, 1}},
};
#define NT 3

static uint8_t saved[NT][12];
static struct e2e_counter counts[NT];

static void check_placed(struct np_probe *const *p)
{
	for (int i = 0; i < NT; i++) {
		CHECK(p[i] != NULL);
		if (!p[i])
			continue;
		CHECK_EQ(np_probe_strategy(p[i]), NP_STRATEGY_JUMP);
		if (!is_long_jump(targets[i].site))
			fprintf(stderr, "# %s: not the long form\n", targets[i].name);
		CHECK(is_long_jump(targets[i].site));
	}
}

/* Every function CALLS times, x = 0 .. CALLS-1 (far_branch's cbz both
 * ways): results as without probes, every probe hit exactly. */
static void run_and_count(void)
{
	memset(counts, 0, sizeof(counts));
	for (int i = 0; i < NT; i++)
		counts[i].addr = (uintptr_t)targets[i].site;
	for (int t = 0; t < NT; t++)
		for (uint64_t x = 0; x < CALLS; x++)
			CHECK_EQ(targets[t].fn(x), targets[t].want(x));
	for (int i = 0; i < NT; i++) {
		uint64_t want = 0;
		for (int t = 0; t < NT; t++)
			want += CALLS * targets[t].hits_per_call[i];
		CHECK_EQ(counts[i].hits, want);
		CHECK_EQ(counts[i].bad_pc, 0);
	}
}

static void detach_all(struct np_probe **p)
{
	for (int i = 0; i < NT; i++)
		if (p[i])
			CHECK_EQ(e2e_detach_free(p[i]), 0);
	for (int i = 0; i < NT; i++)
		CHECK(memcmp(targets[i].site, saved[i], 12) == 0);
	for (uint64_t x = 0; x < 10; x++)
		CHECK_EQ(far_call(x), want_call(x));
}

TEST(with_no_memory_in_b_reach_auto_takes_the_long_jump_form)
{
	struct np_probe *p[NT];
	for (int i = 0; i < NT; i++)
		memcpy(saved[i], targets[i].site, 12);
	CHECK_EQ(e2e_reserve_around((uintptr_t)far_entry, REACH), 0);
	for (int i = 0; i < NT; i++) {
		struct np_probe_opts o = e2e_opts(e2e_count, &counts[i], NP_STRATEGY_AUTO);
		p[i] = np_probe_attach(targets[i].site, &o);
	}
	check_placed(p);
	run_and_count();
	detach_all(p);
}

TEST(a_batch_takes_the_long_form_too)
{
	struct np_probe *p[NT];
	struct np_probe_opts o[NT];
	const struct np_probe_opts *op[NT];
	void *addrs[NT];
	int errs[NT];
	for (int i = 0; i < NT; i++) {
		o[i] = e2e_opts(e2e_count, &counts[i], NP_STRATEGY_JUMP);
		op[i] = &o[i];
		addrs[i] = targets[i].site;
	}
	CHECK_EQ(np_probe_attach_many(&NP_PROBE_MANY_OPTS(.cnt = NT, .addrs = addrs, .opts = op,
							   .probes = p, .errs = errs)),
		 NT);
	check_placed(p);
	run_and_count();
	CHECK_EQ(np_probe_detach_many(p, NT), 0);
	for (int i = 0; i < NT; i++) {
		np_probe_free(p[i]);
		p[i] = NULL;
	}
	detach_all(p);
}

#ifndef HWCAP2_BTI
#define HWCAP2_BTI (1 << 17)
#endif

/* pac_a_twice: paciasp; stp; mov; bl; ...: the entry probe goes after the
 * pad, where the long patch would displace stp, mov and bl. */
TEST(in_guarded_code_a_site_beyond_b_reach_falls_back_to_trap)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);
	bool guarded = getauxval(AT_HWCAP2) & HWCAP2_BTI;
	fn_t *volatile fn = pac_a_twice;

	CHECK_EQ(e2e_reserve_around((uintptr_t)pac_a_twice, REACH), 0);
	struct np_probe *p = np_probe_attach((void *)pac_a_twice, &o);
	CHECK(p != NULL);
	if (!p)
		return;
	/* where BTI is not enforced the library's pages are not guarded */
	CHECK_EQ(np_probe_strategy(p), guarded ? NP_STRATEGY_TRAP : NP_STRATEGY_JUMP);
	if (!guarded)
		CHECK(is_long_jump((uint8_t *)pac_a_twice + 4));
	for (uint64_t x = 0; x < 100; x++)
		CHECK_EQ(fn(x), 2 * (x + 1));
	CHECK_EQ(c.hits, 100);
	CHECK_EQ(e2e_detach_free(p), 0);
}

TEST_MAIN()

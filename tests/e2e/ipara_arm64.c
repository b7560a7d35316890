/* SPDX-License-Identifier: MIT */
/*
 * A far probe inside a function whose caller keeps values in caller-saved
 * registers across the call, in code GCC compiled with -fipa-ra
 * (ipara_target.c): with every page within a b's reach (+-128 MiB) taken,
 * a JUMP is the long form adrp+add+br through a register the
 * free-register analysis finds free. At the site x16 and x17 hold the
 * callee's values, and by the calling convention alone x9..x15 would be
 * free; the caller keeps x9..x13 across the call. The analysis must see
 * that, or the caller's result comes out wrong. AUTO may take TRAP.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

uint64_t ipa_caller(const uint64_t *p);
extern uint8_t ipa_leaf_site[];

#define MIB (1ull << 20)
#define REACH (130 * MIB) /* a little more than b's */
#define CALLS 1000
#define MIX(r, v) ((r) = ((r) ^ (v)) * 0x9e3779b97f4a7c15ull)

static uint64_t want(const uint64_t *p)
{
	uint64_t r = p[12] * 3 + p[12] + 7 + p[12];

	for (int i = 0; i < 12; i++)
		MIX(r, p[i]);
	return r;
}

/* adrp xN; add xN, xN, #lo12; br xN at site: N, else -1 */
static int long_form_register(const uint8_t *site)
{
	uint32_t w[3];
	memcpy(w, site, sizeof(w));
	if ((w[0] & 0x9f000000u) != 0x90000000u || (w[1] & 0xffc00000u) != 0x91000000u ||
	    (w[2] & 0xfffffc1fu) != 0xd61f0000u || (w[0] & 31) != (w[2] >> 5 & 31))
		return -1;
	return (int)(w[0] & 31);
}

TEST(a_far_probe_leaves_what_the_caller_keeps_across_the_call)
{
	struct e2e_counter count = {.addr = (uintptr_t)ipa_leaf_site};
	/* the word before the site, as an address the compiler cannot bound */
	const uint8_t *before = (const uint8_t *)((uintptr_t)ipa_leaf_site - 4);
	uint64_t p[13];
	uint8_t saved[16];

	memcpy(saved, before, sizeof(saved));
	CHECK_EQ(e2e_reserve_around((uintptr_t)ipa_leaf_site, REACH), 0);
	struct np_probe_opts o = e2e_opts(e2e_count, &count, NP_STRATEGY_AUTO);
	struct np_probe *pr = np_probe_attach(ipa_leaf_site, &o);
	CHECK(pr != NULL);
	if (!pr)
		return;
	/* the long form goes at the site or at the word before (plan.c) */
	int reg = long_form_register(ipa_leaf_site);
	if (reg < 0)
		reg = long_form_register(before);
	fprintf(stderr, "# %s, long form through x%d\n",
		np_probe_strategy(pr) == NP_STRATEGY_JUMP ? "JUMP" : "TRAP", reg);
	CHECK(reg < 0 || reg == 16 || reg == 17); /* x1..x13 are the caller's */
	for (uint64_t x = 0; x < CALLS; x++) {
		for (int i = 0; i < 13; i++)
			p[i] = x * 131 + (uint64_t)i * 0x1234567;
		CHECK_EQ(ipa_caller(p), want(p));
	}
	CHECK_EQ(count.hits, CALLS);
	CHECK_EQ(count.bad_pc, 0);
	CHECK_EQ(e2e_detach_free(pr), 0);
	CHECK(memcmp(before, saved, sizeof(saved)) == 0);
}

TEST_MAIN()

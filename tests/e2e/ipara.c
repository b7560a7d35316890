/* SPDX-License-Identifier: MIT */
/*
 * A far probe at the entry of a function whose caller keeps a value in a
 * caller-saved register across the call (-fipa-ra, ipara_riscv64.S): with
 * every page within a jal's reach (+-1 MiB) taken, the probe is the
 * auipc+jalr form through a register the free-register analysis finds
 * free. By the calling convention alone t1, t3..t6 are free at an entry,
 * and the first of them, t1, is what the caller keeps there: the analysis
 * must see that ipa_leaf's callers may rely on every register it does not
 * write (it writes t4), or the caller's sum comes out wrong.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

extern uint64_t ipa_caller(uint64_t x);
extern uint8_t ipa_leaf[];

#define MIB (1ull << 20)
#define REACH (MIB + MIB / 4) /* a little more than jal's, and a chunk */
#define CALLS 1000

static uint64_t want(uint64_t x)
{
	return 3 * x + 7 + x + 1;
}

/* auipc rd; jalr x0, lo(rd): the long JUMP form, through rd */
static int long_form_register(const uint8_t *site)
{
	uint32_t w[2];
	memcpy(w, site, sizeof(w));
	if ((w[0] & 0x7f) != 0x17 || (w[1] & 0x707f) != 0x67 || (w[1] >> 15 & 31) != (w[0] >> 7 & 31))
		return -1;
	return (int)(w[0] >> 7 & 31);
}

TEST(a_far_entry_probe_leaves_what_the_caller_keeps_across_the_call)
{
	struct e2e_counter count = {.addr = (uintptr_t)ipa_leaf};
	uint8_t saved[8];
	memcpy(saved, ipa_leaf, sizeof(saved));
	CHECK_EQ(e2e_reserve_around((uintptr_t)ipa_leaf, REACH), 0);
	struct np_probe_opts o = e2e_opts(e2e_count, &count, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach(ipa_leaf, &o);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_JUMP);
	int reg = long_form_register(ipa_leaf);
	fprintf(stderr, "# the long form goes through x%d\n", reg);
	CHECK_EQ(reg, 29); /* t4: the only register ipa_leaf's callers cannot keep */
	for (uint64_t x = 0; x < CALLS; x++)
		CHECK_EQ(ipa_caller(x), want(x));
	CHECK_EQ(count.hits, CALLS);
	CHECK_EQ(count.bad_pc, 0);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp(ipa_leaf, saved, sizeof(saved)) == 0);
	CHECK_EQ(ipa_caller(5), want(5));
}

extern uint64_t ipa_orphan(uint64_t x, uint64_t y);

TEST(a_far_entry_probe_of_a_function_only_pointers_reach_takes_the_long_form)
{
	/* by its bytes alone no register is free at its entry: a direct
	 * caller could keep any; no code of the module calls it directly,
	 * which the module's summary shows, asked for when the long form
	 * finds no register without it (region.c, place_new) */
	uint64_t (*volatile fn)(uint64_t, uint64_t) = ipa_orphan;
	struct e2e_counter count = {.addr = (uintptr_t)ipa_orphan};
	CHECK_EQ(e2e_reserve_around((uintptr_t)ipa_orphan, REACH), 0);
	struct np_probe_opts o = e2e_opts(e2e_count, &count, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach((void *)ipa_orphan, &o);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_JUMP);
	int reg = long_form_register((const uint8_t *)ipa_orphan);
	fprintf(stderr, "# the long form goes through x%d\n", reg);
	/* a caller-saved register it neither reads nor returns in: t0..t6,
	 * a2..a7 (dead at its returns, since only the convention reaches it) */
	CHECK((reg >= 5 && reg <= 7) || (reg >= 28 && reg <= 31) || (reg >= 12 && reg <= 17));
	for (uint64_t x = 0; x < CALLS; x++)
		CHECK_EQ(fn(x, 3 * x), 4 * x);
	CHECK_EQ(count.hits, CALLS);
	CHECK_EQ(e2e_detach_free(p), 0);
}

TEST_MAIN()

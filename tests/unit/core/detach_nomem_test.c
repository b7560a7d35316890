/* SPDX-License-Identifier: MIT */
/*
 * A detach that leaves other probes in a region rebuilds its trampoline
 * without the one that went, which takes trampoline memory near the
 * code. riscv64's jal reaches 1 MiB: a long attach/detach storm used it
 * all up (e2e-torture's batch storm under qemu, at its 611th batch), and
 * the detach failed with ENOMEM although nothing was wrong with the old
 * trampoline. Here every gap within the short jump's reach of torture's
 * t_short is reserved and what trampoline memory is left there is taken;
 * then the probes leave one at a time: every detach must succeed, the
 * probes that stay must count, those that went must not, and the code
 * must come back whole.
 */
#include <stdio.h>
#include <string.h>

#include "core/maps.h"
#include "../../e2e/e2e.h"
#include "host/host.h"
#include "host/layout.h"
#include "test.h"

extern uint64_t t_short(uint64_t); /* x + 1 (tests/e2e/torture_<isa>.S) */
extern uint64_t t_cmp(uint64_t, uint64_t); /* a < b, unsigned */

/* The second site of t_short's first region (none on arm64, where every
 * jump covers one instruction). */
#if defined(__x86_64__)
#define SECOND 1
#elif defined(__riscv)
#define SECOND 2
#else
#define SECOND 0
#endif
/* t_cmp's return: simulated under TRAP, no out-of-line copy needed */
#if defined(__riscv)
#define CMP_RET 4
#else
#define CMP_RET 8
#endif
#define CALLS 100

/* No trampoline memory left within reach of addr. */
static void use_up_trampoline_memory(uint64_t addr)
{
	uint64_t reach = np_plan_reach(np_host_isa, NP_JUMP_SHORT) + (1u << 20);
	CHECK_EQ(e2e_reserve_around(addr, reach), 0);
	np_maps_invalidate(); /* the engine's cached map predates them */
	unsigned taken = 0;
	for (size_t len = 4096; len >= 8; len /= 8)
		while (np_codemem_alloc(addr, len, np_plan_reach(np_host_isa, NP_JUMP_SHORT)))
			taken++;
	printf("# %u more allocations took what was left near 0x%llx\n", taken,
	       (unsigned long long)addr);
}

static void run(unsigned n)
{
	for (uint64_t i = 0; i < n; i++)
		CHECK_EQ(t_short(i), i + 1);
}

TEST(detaches_succeed_when_no_trampoline_memory_is_left_near_the_code)
{
	uint8_t pristine[16];
	struct e2e_counter c[3];
	memset(c, 0, sizeof(c));
	memcpy(pristine, (void *)t_short, sizeof(pristine));
	/* a and b at the entry, c at the region's second site */
	uint8_t *at[3] = {(uint8_t *)t_short, (uint8_t *)t_short, (uint8_t *)t_short + SECOND};
	struct np_probe_opts o[3];
	const struct np_probe_opts *op[3];
	struct np_probe *p[3] = {0};
	int errs[3];
	unsigned n = SECOND ? 3 : 2;
	for (unsigned k = 0; k < 3; k++) {
		o[k] = e2e_opts(e2e_count, &c[k], NP_STRATEGY_JUMP);
		op[k] = &o[k];
	}
	e2e_log_capture();
	CHECK_EQ(np_probe_attach_many(&NP_PROBE_MANY_OPTS(.cnt = n, .addrs = (void *const *)at,
							  .opts = op, .probes = p,
							  .errs = errs)),
		 (int)n);
	run(CALLS);
	for (unsigned k = 0; k < n; k++)
		CHECK_EQ(c[k].hits, CALLS);
	use_up_trampoline_memory((uint64_t)(uintptr_t)t_short);

	/* the entry keeps a: the region keeps its trampoline */
	CHECK_EQ(np_probe_detach(p[1]), 0);
	run(CALLS);
	CHECK_EQ(c[0].hits, 2 * CALLS);
	CHECK_EQ(c[1].hits, CALLS);
	if (SECOND) { /* the second site goes: the region keeps the entry */
		CHECK_EQ(c[2].hits, 2 * CALLS);
		CHECK_EQ(np_probe_detach(p[2]), 0);
		run(CALLS);
		CHECK_EQ(c[0].hits, 3 * CALLS);
		CHECK_EQ(c[2].hits, 2 * CALLS);
	}
	CHECK_EQ(np_probe_detach(p[0]), 0); /* the last: the code comes back */
	run(CALLS);
	CHECK(memcmp(pristine, (void *)t_short, sizeof(pristine)) == 0);
	for (unsigned k = 0; k < n; k++)
		np_probe_free(p[k]);
}

/* With no trampoline memory in reach, a TRAP on an instruction it
 * simulates still goes in, with no out-of-line copy at all; a hit while
 * it is being removed (its site gone, its breakpoint not yet) must run the
 * instruction, not jump to that copy's address, 0 (the riscv64 batch
 * storm lost threads there). The hit-during-removal itself is the storm's
 * to find; here the copy-less TRAP's life. */
TEST(a_simulated_trap_with_no_out_of_line_copy_counts_and_comes_out)
{
	uint8_t pristine[16], *at = (uint8_t *)t_cmp + CMP_RET;
	struct e2e_counter c = {0};
	memcpy(pristine, (void *)t_cmp, sizeof(pristine));
	use_up_trampoline_memory((uint64_t)(uintptr_t)t_cmp);
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_TRAP);
	struct np_probe *p = np_probe_attach(at, &o);
	CHECK(p != NULL);
	for (uint64_t i = 0; i < CALLS; i++)
		CHECK_EQ(t_cmp(i, 50), i < 50);
	CHECK_EQ(c.hits, CALLS);
	CHECK_EQ(np_probe_detach(p), 0);
	CHECK_EQ(t_cmp(1, 2), 1);
	CHECK_EQ(c.hits, CALLS);
	CHECK(memcmp(pristine, (void *)t_cmp, sizeof(pristine)) == 0);
	np_probe_free(p);
}

TEST_MAIN()

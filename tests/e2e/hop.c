/* SPDX-License-Identifier: MIT */
/*
 * JUMP by a jmp rel8 to a hop where a jmp rel32 does not fit
 * (src/plan/hop.c, docs/design.md "Hops"), on the functions of
 * hop_x86_64.S: glibc's memmove entry in small, whose +3 a neighbour
 * jumps to, and the layouts that must keep their TRAP.
 *
 * What is checked: the strategy and the bytes in the code while the probe
 * is there (eb rel8 at the site to the padding after the ret, e9 rel32
 * there) and after it left (the original bytes, both places); results and
 * exact hit counts, the function called directly and through the
 * neighbour that enters at +3 (no hit); no two probes on one hop, and no
 * probe on a hop's bytes; the reason of each TRAP; and a storm of attaches
 * and detaches while threads call the function both ways and check every
 * result, so that threads meet the jump, the hop and the breakpoints of
 * the protocol in every order.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "e2e.h"
#include "test.h"

typedef uint64_t h_fn(uint64_t a, uint64_t b);
extern uint8_t h_move[], h_pcpy[], h_neg[], h_neg_pcpy[], h_fall[], h_fall_pcpy[], h_tiny[],
	h_after[];

#define HOP_AT 13   /* the nop after h_move's ret */
#define SITE2_AT 18 /* h_move's sub */

static uint64_t call(const uint8_t *fn, uint64_t a, uint64_t b)
{
	return ((h_fn *)(uintptr_t)fn)(a, b);
}

static uint64_t move_want(uint64_t a, uint64_t b)
{
	return b >= 32 ? a + b : a - b;
}

static uint64_t fall_want(uint64_t a, uint64_t b)
{
	return b >= 32 ? a : a - b;
}

static uint64_t pcpy_want(uint64_t a, uint64_t b)
{
	return b == 0 ? a + 1 : move_want(a + 1, b);
}

static struct np_probe *attach(uint8_t *at, struct e2e_counter *c, enum np_strategy s)
{
	struct np_probe_opts o = e2e_opts(e2e_count, c, s);
	memset(c, 0, sizeof(*c));
	c->addr = (uint64_t)(uintptr_t)at;
	return np_probe_attach(at, &o);
}

/* Where the jmp rel8 at p goes, or 0 when p holds none. */
static uint8_t *rel8_target(const uint8_t *p)
{
	return p[0] == 0xeb ? (uint8_t *)(uintptr_t)(p + 2 + (int8_t)p[1]) : NULL;
}

TEST(the_layout_is_as_the_assembly_says)
{
	CHECK_EQ(h_move[0], 0x48); /* mov %rdi,%rax */
	CHECK_EQ(h_move[HOP_AT], 0x0f); /* nopl */
	CHECK_EQ(h_move[HOP_AT - 1], 0xc3); /* ret */
	CHECK_EQ(h_move[SITE2_AT], 0x48); /* sub %rsi,%rax */
	CHECK(h_tiny + 3 == h_after);
	for (uint64_t b = 0; b < 64; b += 7) {
		CHECK_EQ(call(h_move, 100, b), move_want(100, b));
		CHECK_EQ(call(h_pcpy, 100, b), pcpy_want(100, b));
		CHECK_EQ(call(h_neg, 100, b), move_want(100, b));
		CHECK_EQ(call(h_neg_pcpy, 100, b), move_want(101, b));
		CHECK_EQ(call(h_fall, 100, b), fall_want(100, b));
		CHECK_EQ(call(h_fall_pcpy, 100, b), fall_want(101, b));
	}
}

TEST(a_memmove_entry_jumps_to_a_hop_after_its_ret)
{
	uint8_t before[32];
	struct e2e_counter c;
	memcpy(before, h_move, sizeof(before));
	e2e_log_capture();
	struct np_probe *p = attach(h_move, &c, NP_STRATEGY_AUTO);
	CHECK(p != NULL);
	if (!p) {
		printf("# %s\n", e2e_log_state.last);
		return;
	}
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_JUMP);
	CHECK(rel8_target(h_move) == h_move + HOP_AT);
	CHECK_EQ(h_move[HOP_AT], 0xe9); /* jmp rel32 to the trampoline */
	CHECK(memcmp(h_move + 2, before + 2, HOP_AT - 2) == 0); /* +3 untouched */
	uint64_t direct = 0;
	for (uint64_t b = 0; b < 100; b++) {
		CHECK_EQ(call(h_move, 1000, b), move_want(1000, b));
		direct++;
		CHECK_EQ(call(h_pcpy, 1000, b), pcpy_want(1000, b)); /* enters at +3 */
	}
	CHECK_EQ(np_probe_hits(p), direct);
	CHECK_EQ(c.hits, direct);
	CHECK_EQ(c.bad_pc, 0);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp(h_move, before, sizeof(before)) == 0);
}

TEST(a_hop_serves_one_probe_and_takes_none_on_its_bytes)
{
	uint8_t before[32];
	struct e2e_counter c1, c2, c3;
	memcpy(before, h_move, sizeof(before));
	e2e_log_capture();
	struct np_probe *p1 = attach(h_move, &c1, NP_STRATEGY_AUTO);
	CHECK(p1 && np_probe_strategy(p1) == NP_STRATEGY_JUMP);
	/* +18 could use the same hop: it is taken, so a trap, with the reason */
	struct np_probe *p2 = attach(h_move + SITE2_AT, &c2, NP_STRATEGY_AUTO);
	CHECK(p2 && np_probe_strategy(p2) == NP_STRATEGY_TRAP);
	CHECK(strstr(e2e_log_state.last, "no hop: another probe holds the padding") != NULL);
	printf("# +18 beside +0: %s\n", e2e_log_state.last);
	/* the hop's own bytes take no probe */
	CHECK(attach(h_move + HOP_AT, &c3, NP_STRATEGY_TRAP) == NULL);
	CHECK(strstr(e2e_log_state.last, "lies in the hop of the JUMP probe") != NULL);
	for (uint64_t b = 0; b < 64; b++) {
		CHECK_EQ(call(h_move, 7, b), move_want(7, b));
		CHECK_EQ(call(h_pcpy, 7, b), pcpy_want(7, b));
	}
	CHECK_EQ(np_probe_hits(p1), 64);
	CHECK_EQ(np_probe_hits(p2), 32 + 31); /* b < 32 from h_move, b in 1..31 from h_pcpy */
	CHECK_EQ(e2e_detach_free(p1), 0);
	CHECK(p2 && e2e_detach_free(p2) == 0);
	CHECK(memcmp(h_move, before, sizeof(before)) == 0);
	/* the hop free again: +18 gets it */
	p2 = attach(h_move + SITE2_AT, &c2, NP_STRATEGY_AUTO);
	CHECK(p2 && np_probe_strategy(p2) == NP_STRATEGY_JUMP);
	CHECK(rel8_target(h_move + SITE2_AT) == h_move + HOP_AT);
	for (uint64_t b = 0; b < 64; b++)
		CHECK_EQ(call(h_move, 7, b), move_want(7, b));
	CHECK(p2 && np_probe_hits(p2) == 32);
	CHECK(p2 && e2e_detach_free(p2) == 0);
	CHECK(memcmp(h_move, before, sizeof(before)) == 0);
}

static uint64_t tiny_want(uint64_t a, uint64_t b)
{
	(void)a, (void)b;
	return 0;
}

/* Each layout keeps its TRAP, and says why no hop. */
static void traps_with(uint8_t *fn, h_fn *want, h_fn *pcpy, const char *why)
{
	struct e2e_counter c;
	e2e_log_capture();
	struct np_probe *p = attach(fn, &c, NP_STRATEGY_AUTO);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_TRAP);
	printf("# %s\n", e2e_log_state.last);
	CHECK(strstr(e2e_log_state.last, why) != NULL);
	for (uint64_t b = 0; b < 64; b++) {
		CHECK_EQ(call(fn, 5, b), want(5, b));
		if (pcpy)
			CHECK_EQ(pcpy(5, b), want(6, b));
	}
	CHECK_EQ(np_probe_hits(p), 64);
	CHECK_EQ(e2e_detach_free(p), 0);
}

TEST(padding_a_branch_lands_on_is_no_hop)
{
	traps_with(h_neg, move_want, (h_fn *)(uintptr_t)h_neg_pcpy,
		   "no hop: a branch lands in the padding");
}

TEST(padding_after_a_conditional_branch_is_no_hop)
{
	traps_with(h_fall, fall_want, (h_fn *)(uintptr_t)h_fall_pcpy,
		   "no hop: no dead padding in reach");
}

TEST(a_three_byte_function_followed_by_code_has_no_hop)
{
	traps_with(h_tiny, tiny_want, NULL, "before the 5 bytes a jump needs, and what follows is not "
				 "padding; no hop: no dead padding in reach");
	CHECK_EQ(call(h_after, 0, 0), 1);
}

/* ---- the storm -------------------------------------------------------- */

static volatile int storm_stop;
static uint64_t storm_wrong, storm_calls;

static void *storm_worker(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1, n = 0, wrong = 0;
	while (!storm_stop) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		uint64_t a = seed >> 8, b = seed & 63;
		wrong += call(h_move, a, b) != move_want(a, b);
		wrong += call(h_pcpy, a, b) != pcpy_want(a, b);
		n += 2;
	}
	__atomic_add_fetch(&storm_wrong, wrong, __ATOMIC_RELAXED);
	__atomic_add_fetch(&storm_calls, n, __ATOMIC_RELAXED);
	return NULL;
}

TEST(attach_and_detach_while_threads_call_it_both_ways)
{
	enum { WORKERS = 4 };
	const char *env = getenv("NP_HOP_CYCLES");
	unsigned cycles = env ? (unsigned)atoi(env) : 400, jumps = 0, failures = 0;
	uint8_t before[32];
	pthread_t w[WORKERS];
	memcpy(before, h_move, sizeof(before));
	storm_stop = 0;
	for (uintptr_t k = 0; k < WORKERS; k++)
		CHECK_EQ(pthread_create(&w[k], NULL, storm_worker, (void *)(k + 1)), 0);
	for (unsigned i = 0; i < cycles; i++) {
		struct e2e_counter c;
		/* now the entry, now the sub at +18: the hop changes hands */
		struct np_probe *p = attach(i & 1 ? h_move + SITE2_AT : h_move, &c,
					    NP_STRATEGY_AUTO);
		if (!p) {
			failures++;
			continue;
		}
		jumps += np_probe_strategy(p) == NP_STRATEGY_JUMP;
		nanosleep(&(struct timespec){0, 100000}, NULL);
		failures += np_probe_detach(p) != 0;
		failures += c.bad_pc != 0;
		failures += np_probe_hits(p) != c.hits;
		np_probe_free(p);
	}
	storm_stop = 1;
	for (int k = 0; k < WORKERS; k++)
		pthread_join(w[k], NULL);
	printf("# %u cycles, %u JUMP, %" PRIu64 " checked calls; last log: %s\n", cycles, jumps,
	       storm_calls, e2e_log_state.last);
	CHECK_EQ(storm_wrong, 0);
	CHECK_EQ(failures, 0);
	CHECK_EQ(jumps, cycles);
	CHECK(storm_calls > 0);
	CHECK(memcmp(h_move, before, sizeof(before)) == 0);
}

/* ---- a thread held at the hop when the probe goes ---------------------
 * A signal handler of the program's interrupts a thread exactly at the
 * hop's first byte (it took the jmp rel8, not yet the jmp rel32) and holds
 * it there while the probe is detached: its pc is in the signal frame,
 * where the engine may not change it. The site's code goes back; the hop
 * cannot (the thread would run the padding when the handler returns), so
 * it is left as a jump to the site, and the thread, let go, runs the
 * original code from the site. The hop stays taken: the second site,
 * whose only hop it was, traps. */
static uint8_t *volatile park_at;
static volatile int parked, park_release, park_stop;
static uint64_t park_wrong;

static void park_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig, (void)si;
	if (parked || (uint8_t *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP] != park_at)
		return;
	parked = 1;
	while (!park_release)
		__asm__ volatile("pause");
}

static void *park_worker(void *arg)
{
	uint64_t wrong = 0;
	(void)arg;
	for (uint64_t n = 0; !park_stop; n++) {
		uint64_t a = n * 7919, b = n & 63;
		wrong += call(h_move, a, b) != move_want(a, b);
	}
	park_wrong = wrong;
	return NULL;
}

TEST(a_thread_held_at_the_hop_when_the_probe_goes_runs_the_site)
{
	struct sigaction sa = {.sa_sigaction = park_handler, .sa_flags = SA_SIGINFO | SA_RESTART};
	struct e2e_counter c, c2;
	uint8_t before[32];
	pthread_t w;
	memcpy(before, h_move, sizeof(before));
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	e2e_log_capture();
	struct np_probe *p = attach(h_move, &c, NP_STRATEGY_AUTO);
	CHECK(p && np_probe_strategy(p) == NP_STRATEGY_JUMP);
	if (!p)
		return;
	park_at = h_move + HOP_AT;
	CHECK_EQ(pthread_create(&w, NULL, park_worker, NULL), 0);
	/* a signal lands at the hop once in some 10,000 to 50,000 here: up to 60 s */
	struct timespec t0, now;
	unsigned tries = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (now = t0; !parked && now.tv_sec - t0.tv_sec < 60; tries++) {
		pthread_kill(w, SIGUSR1);
		nanosleep(&(struct timespec){0, 5000}, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	}
	printf("# held at the hop after %u signals\n", tries);
	CHECK(parked);
	CHECK_EQ(np_probe_detach(p), 0);
	printf("# %s\n", e2e_log_state.last);
	if (parked) {
		CHECK(strstr(e2e_log_state.last, "a thread stays at the hop") != NULL);
		CHECK(memcmp(h_move, before, HOP_AT) == 0); /* the site is back */
		CHECK_EQ(h_move[HOP_AT], 0xe9);            /* the hop: jmp rel32 to the site */
		int32_t rel;
		memcpy(&rel, h_move + HOP_AT + 1, 4);
		CHECK(h_move + HOP_AT + 5 + rel == h_move);
		CHECK(memcmp(h_move + HOP_AT + 5, before + HOP_AT + 5, sizeof(before) - HOP_AT - 5) ==
		      0);
	}
	park_release = 1;
	nanosleep(&(struct timespec){0, 10000000}, NULL);
	park_stop = 1;
	pthread_join(w, NULL);
	CHECK_EQ(park_wrong, 0);
	for (uint64_t b = 0; b < 64; b++)
		CHECK_EQ(call(h_move, 3, b), move_want(3, b));
	np_probe_free(p);
	if (parked) {
		/* the hop left behind is nobody's to take */
		struct np_probe *p2 = attach(h_move + SITE2_AT, &c2, NP_STRATEGY_AUTO);
		CHECK(p2 && np_probe_strategy(p2) == NP_STRATEGY_TRAP);
		for (uint64_t b = 0; b < 64; b++)
			CHECK_EQ(call(h_move, 3, b), move_want(3, b));
		CHECK(p2 && np_probe_hits(p2) == 32);
		CHECK(p2 && e2e_detach_free(p2) == 0);
	}
	signal(SIGUSR1, SIG_DFL);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * SIGTRAPs that belong to the program. The program installs its own
 * SIGTRAP handler before the engine's (the engine keeps it and hands it
 * every SIGTRAP that is not a breakpoint of ours), then raises SIGTRAP,
 * has it sent by another thread, and on x86-64 executes an int3 of its
 * own, all while TRAP probes are live. Each reaches the program's handler
 * once, with the program's own siginfo, and execution goes on exactly
 * where it would have.
 *
 * The handler must be in place before the first attach of this process,
 * so this test has a binary of its own.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

static volatile int own_traps, bad_code;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	own_traps++;
	if (sig != SIGTRAP || (si->si_code != SI_TKILL && si->si_code != SI_USER &&
			       si->si_code != SI_KERNEL))
		bad_code++;
}

static E2E_NOIPA uint64_t probed(uint64_t x)
{
	return x * 7 + 3;
}

static void *send_trap(void *arg)
{
	pthread_kill(*(pthread_t *)arg, SIGTRAP);
	return NULL;
}

TEST(sigtraps_of_the_program_reach_its_handler_while_trap_probes_are_live)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	CHECK(sigaction(SIGTRAP, &sa, NULL) == 0);

	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_TRAP);
	struct np_probe *p = np_probe_attach((void *)probed, &o);
	CHECK(p != NULL);
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_TRAP);

	uint64_t sum = 0;
	int want = 0;
	for (uint64_t i = 0; i < 10; i++) {
		sum += probed(i);
		raise(SIGTRAP); /* from this thread: its pc is after a syscall */
		want++;
	}
	pthread_t self = pthread_self(), t;
	CHECK(pthread_create(&t, NULL, send_trap, &self) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	want++;
#if defined(__x86_64__)
	__asm__ volatile("int3"); /* a breakpoint of the program's own */
	want++;
#endif
	sum += probed(10);
	CHECK_EQ(sum, 7 * 55 + 3 * 11);
	CHECK_EQ(c.hits, 11);
	CHECK_EQ(own_traps, want);
	CHECK_EQ(bad_code, 0);
	CHECK(e2e_detach_free(p) == 0);
}

TEST_MAIN()

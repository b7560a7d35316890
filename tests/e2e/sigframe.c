/* SPDX-License-Identifier: MIT */
/*
 * A thread in a signal handler of the program's, which interrupted it
 * strictly inside the bytes a jump would cover, goes back there when its
 * handler returns: no jump may go in while it is in that handler. The
 * engine finds the handler's signal frame above the thread's stack
 * pointer (stack_scan.c: the frame's pc inside the bytes, uc_link 0, and the
 * interrupted stack pointer just above it, or the frame on the alternate
 * stack its uc_stack names). So a forced JUMP is refused with EAGAIN and
 * changes nothing, AUTO falls back to TRAP (its breakpoint covers the
 * site alone), and the thread goes on right: with the handler on the
 * thread's own stack, and on an alternate stack, where the interrupted
 * stack pointer lies anywhere. The first case meets the jump queued in a
 * batch (probe.c, placement_failed); the second, after the first left
 * retired trampolines that jump back inside the bytes, the jump written
 * with every thread stopped (region.c, place_new). (Copies of such an address
 * that are no signal frame's pc are not waited for: torture.c,
 * a_jump_goes_in_over_a_site_whose_handler_is_running.)
 *
 * x86-64 and riscv64: an arm64 jump is one instruction, so nothing lies
 * strictly inside it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "e2e.h"
#include "test.h"

extern uint8_t t_sig_spin[];
typedef uint64_t spin_fn(const volatile int *flag);

#if defined(__x86_64__)
#define SITE 0 /* a jump over [0, 6): the mov, the test and the je */
#define END 6
#define UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#elif defined(__riscv)
#define SITE 2 /* a jal over [2, 6): the c.bnez and the c.mv */
#define END 6
#define UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.__gregs[0])
#endif

#ifndef SS_AUTODISARM /* the kernel's (4.7), not in every libc's headers */
#define SS_AUTODISARM (1u << 31)
#endif
#define ALT_STACK_SIZE (64 * 1024)
#define MAX_TRIES 100000

static volatile int flag, release, held;
static volatile unsigned answered;

/* Stays in the handler while the loop it interrupted is strictly inside
 * the jump's bytes; returns at once elsewhere (the test signals again). */
static void hold_if_inside(int sig, siginfo_t *si, void *ucv)
{
	uintptr_t pc = UC_PC((ucontext_t *)ucv);
	bool inside = pc > (uintptr_t)t_sig_spin + SITE && pc < (uintptr_t)t_sig_spin + END;
	(void)sig;
	(void)si;
	if (inside)
		__atomic_store_n(&held, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&answered, 1, __ATOMIC_SEQ_CST);
	while (inside && !__atomic_load_n(&release, __ATOMIC_SEQ_CST))
		sched_yield();
}

struct spinner {
	bool alt_stack;
	int alt_flags; /* what sigaltstack took: SS_AUTODISARM or 0 */
	uint64_t result;
};

/* Set up an alternate stack (SS_AUTODISARM where the system has it: the
 * handler then sees none, only its frame records it). */
static int take_alt_stack(struct spinner *s, stack_t *old)
{
	stack_t alt = {.ss_sp = malloc(ALT_STACK_SIZE), .ss_size = ALT_STACK_SIZE};
	alt.ss_flags = (int)SS_AUTODISARM;
	if (sigaltstack(&alt, old) != 0) {
		alt.ss_flags = 0;
		if (sigaltstack(&alt, old) != 0)
			return -1;
	}
	s->alt_flags = alt.ss_flags;
	return 0;
}

static void *spin(void *arg)
{
	struct spinner *s = arg;
	stack_t old, cur;
	if (s->alt_stack && take_alt_stack(s, &old) != 0)
		return NULL;
	s->result = ((spin_fn *)(void *)t_sig_spin)(&flag);
	if (s->alt_stack) { /* the sanitizers unmap what is set at exit */
		sigaltstack(&old, &cur);
		free(cur.ss_sp);
	}
	return s;
}

/* Signal the spinner until it is held where the jump would go. */
static bool hold_inside(pthread_t t)
{
	for (int tries = 0; tries < MAX_TRIES; tries++) {
		unsigned before = __atomic_load_n(&answered, __ATOMIC_SEQ_CST);
		CHECK_EQ(pthread_kill(t, SIGUSR1), 0);
		while (__atomic_load_n(&answered, __ATOMIC_SEQ_CST) == before)
			sched_yield();
		if (__atomic_load_n(&held, __ATOMIC_SEQ_CST))
			return true;
	}
	return false;
}

static void held_inside_the_bytes_keeps_the_jump_out(bool alt_stack)
{
	struct sigaction sa = {.sa_sigaction = hold_if_inside,
			       .sa_flags = SA_SIGINFO | SA_RESTART | (alt_stack ? SA_ONSTACK : 0)};
	struct spinner s = {.alt_stack = alt_stack};
	struct e2e_counter c = {.addr = (uintptr_t)t_sig_spin + SITE};
	struct np_probe_opts jump = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	struct np_probe_opts autos = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);
	uint8_t pristine[END];
	pthread_t t;
	void *ok;

	memcpy(pristine, t_sig_spin, sizeof pristine);
	flag = release = held = 0;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(pthread_create(&t, NULL, spin, &s), 0);
	CHECK(hold_inside(t));

	errno = 0;
	CHECK(np_probe_attach(t_sig_spin + SITE, &jump) == NULL);
	CHECK_EQ(errno, EAGAIN);
	CHECK(memcmp(pristine, t_sig_spin, sizeof pristine) == 0);
	struct np_probe *p = np_probe_attach(t_sig_spin + SITE, &autos);
	CHECK(p != NULL);
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_TRAP);

	__atomic_store_n(&release, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&flag, 41, __ATOMIC_SEQ_CST);
	CHECK_EQ(pthread_join(t, &ok), 0);
	CHECK(ok == &s);
	CHECK_EQ(s.result, 42);
	printf("# alternate stack: %s; %" PRIu64 " hits\n",
	       !alt_stack ? "no" : s.alt_flags ? "SS_AUTODISARM" : "yes", c.hits);
	CHECK(c.hits > 0);
	CHECK_EQ(c.bad_pc, 0);
	CHECK_EQ(np_probe_hits(p), c.hits);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp(pristine, t_sig_spin, sizeof pristine) == 0);
	signal(SIGUSR1, SIG_DFL);
}

TEST(a_handler_that_interrupted_the_bytes_keeps_the_jump_out)
{
	held_inside_the_bytes_keeps_the_jump_out(false);
}

TEST(the_same_on_an_alternate_stack)
{
	held_inside_the_bytes_keeps_the_jump_out(true);
}

TEST_MAIN()

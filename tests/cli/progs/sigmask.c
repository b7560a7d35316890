/* SPDX-License-Identifier: MIT */
/* A program that does, with signals, what servers and runtimes do, and
 * that a breakpoint must survive:
 *   - block every signal in main and in a worker thread (which inherits
 *     the mask), and call work() there; read the mask back: SIGTRAP shows
 *     as blocked, as it asked;
 *   - call work() from a SIGUSR1 handler installed with a full sa_mask;
 *   - install a SIGTRAP handler of its own after start (sigaction, then
 *     signal()), and raise SIGTRAP, and on x86-64 execute an int3 of its
 *     own, expecting its handler to see each.
 * Output depends only on the argument (calls per thread). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"

static volatile sig_atomic_t traps, usr1;
static long worker_sum;

NOINLINE long work(long i)
{
	return i * 3 + 1;
}

static void on_trap(int sig)
{
	traps++;
}

static void on_usr1(int sig)
{
	usr1 += (int)work(usr1);
}

static void *worker(void *arg)
{
	long n = *(long *)arg;
	for (long i = 0; i < n; i++)
		worker_sum += work(i);
	return NULL;
}

static int trap_blocked(void)
{
	sigset_t cur;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	return sigismember(&cur, SIGTRAP);
}

static void own_traps(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	raise(SIGTRAP);
	signal(SIGTRAP, on_trap);
	raise(SIGTRAP);
#if defined(__x86_64__)
	__asm__ volatile("int3");
#else
	raise(SIGTRAP);
#endif
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	printf("blocked: SIGTRAP %d\n", trap_blocked());

	pthread_t t;
	if (pthread_create(&t, NULL, worker, &n) || pthread_join(t, NULL))
		return 1;
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += work(i);
	printf("work: main %ld, worker %ld\n", sum, worker_sum);
	pthread_sigmask(SIG_UNBLOCK, &all, NULL);
	printf("unblocked: SIGTRAP %d\n", trap_blocked());

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigfillset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	printf("usr1: %d\n", (int)usr1);

	own_traps();
	printf("own traps: %d\n", (int)traps);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The program the script tests (test_scripts.py) run under nanoprobe and
 * under bpftrace: every call, argument and return value depends only on
 * the command line, so two runs see the same hits. Built with frame
 * pointers, so that both tools walk the same stacks.
 *
 *   scripted [ROUNDS] [THREADS]
 *
 * Per round: size() with a spread of values (hist, lhist, stats), name()
 * with strings, a recursion of depth 1..5 for stacks, a function with
 * eight arguments (the last two on the stack: sarg0, sarg1), and a
 * function returning its argument squared (retval). THREADS threads run
 * the rounds in turn, one after another, so the order is fixed too.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"

NOINLINE long size(long v)
{
	return v + 1;
}

NOINLINE int name(const char *s, int n)
{
	return (int)strlen(s) + n;
}

NOINLINE long leaf(long depth)
{
	return depth * 2;
}

NOINLINE long descend(long depth)
{
	if (depth <= 1)
		return leaf(depth);
	return descend(depth - 1) + 1;
}

NOINLINE long eight(long a, long b, long c, long d, long e, long f, long g, long h)
{
	return a + b + c + d + e + f + g + h;
}

NOINLINE long square(long v)
{
	return v * v;
}

NOINLINE long negative(long v)
{
	return -v;
}

/* A pointer the probes may read (str, buf, deref) and one they cannot. */
NOINLINE int bad_pointer(const char *p)
{
	return p == NULL;
}

static const char *const names[] = {"ada", "grace", "linus", "barbara", "ken"};
static int rounds = 10;

/*
 * bpftrace reads strings with page faults disabled, so its first str() of
 * a name on a page not yet touched reads "" (seen on clang's ASan build,
 * whose layout puts the names on a page of their own). Touching them
 * first gives both tools the same strings to read.
 */
static size_t touch_names(void)
{
	size_t n = 0;
	for (int i = 0; i < 5; i++)
		n += strlen(*(const char *const volatile *)&names[i]);
	return n;
}

static long round_of(long r)
{
	long acc = 0;
	static const long sizes[] = {0, 1, 2, 3, 7, 8, 100, 1000, 4096, 5000, 65536, 1 << 20};
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
		acc += size(sizes[i] + r);
	for (int i = 0; i < 5; i++)
		acc += name(names[(i + r) % 5], i);
	for (long d = 1; d <= 5; d++)
		acc += descend(d);
	acc += eight(r, 2, 3, 4, 5, 6, 70 + r, 80);
	acc += square(r) + negative(r * 3);
	acc += bad_pointer((const char *)(uintptr_t)0x10);
	return acc;
}

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static int turn;

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	long acc = 0;
	pthread_mutex_lock(&turn_lock);
	while (turn != me)
		pthread_cond_wait(&turn_cond, &turn_lock);
	for (int r = 0; r < rounds; r++)
		acc += round_of(r);
	turn++;
	pthread_cond_broadcast(&turn_cond);
	pthread_mutex_unlock(&turn_lock);
	return (void *)(intptr_t)acc;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 10;
	int nthreads = argc > 2 ? atoi(argv[2]) : 0;
	long total = 0;
	if (touch_names() == 0)
		return 2;
	if (nthreads <= 0) {
		for (int r = 0; r < rounds; r++)
			total += round_of(r);
	} else {
		pthread_t t[64];
		nthreads = nthreads > 64 ? 64 : nthreads;
		for (int i = 0; i < nthreads; i++)
			pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
		for (int i = 0; i < nthreads; i++) {
			void *ret;
			pthread_join(t[i], &ret);
			total += (long)(intptr_t)ret;
		}
	}
	printf("scripted: rounds=%d total=%ld\n", rounds, total);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * What one read of the hit paths' clock costs (src/core/clock.c), side by
 * side in one run: np_clock_ns on the calibrated counter (where the
 * kernel vouches for it), np_clock_ns on the vDSO (as NANOPROBE_CLOCK=vdso
 * makes it), the bare counter read it is built on, and (x86-64) the
 * ordered read the vDSO makes of the same counter. ns of thread cpu
 * time per read (a busy machine's waits for a cpu left out), the median
 * of 7 batches, and each row's ratio to the vDSO's.
 *
 *   np-clock-bench [-n READS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "host/host.h" /* NP_HOST_COUNTER */
#include "core/nolibc.h"

#define BATCHES 7

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static volatile uint64_t sink;

static uint64_t counter_read(void)
{
	return NP_HOST_COUNTER();
}

#if defined(__x86_64__)
/* The ordered read the vDSO makes (lfence; rdtsc), which np_clock_ns does
 * without (src/core/clock.c, "Ordering"). */
static uint64_t counter_read_ordered(void)
{
	__builtin_ia32_lfence();
	return NP_HOST_COUNTER();
}
#endif

/* Median ns per read of fn over n reads. */
static double per_read(uint64_t (*fn)(void), long n)
{
	double t[BATCHES];
	for (int b = 0; b < BATCHES; b++) {
		double t0 = cpu_ns();
		for (long i = 0; i < n; i++)
			sink += fn();
		t[b] = (cpu_ns() - t0) / (double)n;
	}
	qsort(t, BATCHES, sizeof(*t), cmp);
	return t[BATCHES / 2];
}

int main(int argc, char **argv)
{
	long n = 2000000;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atol(argv[++i]);
	np_nolibc_init();
	struct np_clock_info info;
	np_clock_begin(false);
	np_clock_settle();
	double vdso = per_read(np_clock_ns, n);
	np_clock_begin(true);
	np_clock_settle();
	np_clock_describe(&info);
	printf("%-36s %7.1f ns/read  1.00\n", "np_clock_ns, vdso", vdso);
	if (!info.counter) {
		printf("np_clock_ns, counter: none here (%s)\n", info.why);
		return 0;
	}
	double counter = per_read(np_clock_ns, n), bare = per_read(counter_read, n);
	printf("%-36s %7.1f ns/read  %.2f  (%.1f MHz)\n", "np_clock_ns, counter", counter,
	       counter / vdso, (double)info.hz / 1e6);
	printf("%-36s %7.1f ns/read  %.2f\n", "the counter alone (rdtsc)", bare, bare / vdso);
#if defined(__x86_64__)
	double ordered = per_read(counter_read_ordered, n);
	printf("%-36s %7.1f ns/read  %.2f\n", "the counter ordered (lfence; rdtsc)", ordered,
	       ordered / vdso);
#endif
	np_clock_end();
	return 0;
}

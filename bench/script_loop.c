/* SPDX-License-Identifier: MIT */
/*
 * The loop docs/performance.md's script costs are measured on: N calls of
 * work(i), timed with the thread's CPU clock (a busy machine's waiting is
 * not counted), nanoseconds per call on stdout. Built with frame pointers
 * (bench/meson.build), five frames deep at work(): ustack(5) walks five.
 *   script-loop N [usdt]
 * With usdt, the loop calls work_usdt(i) instead: the same, with a USDT
 * probe bench:work (arg0 = i) in it where <sys/sdt.h> exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#endif
#endif

/* gcc's noipa keeps each call a call; clang has no noipa, and optnone
 * would slow the loop being measured, so clang gets noinline alone. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline, used))
#else
#define NOINLINE __attribute__((noinline, noipa, used))
#endif

NOINLINE long work(long i)
{
	return i * 3 + 1;
}

NOINLINE long work_usdt(long i)
{
#if defined(STAP_PROBE1)
	STAP_PROBE1(bench, work, i);
#endif
	return i * 3 + 1;
}

static int usdt; /* the loop calls work_usdt */

static long run(long n)
{
	long sum = 0;
	if (usdt)
		for (long i = 0; i < n; i++)
			sum += work_usdt(i);
	else
		for (long i = 0; i < n; i++)
			sum += work(i);
	return sum;
}

NOINLINE long level3(long n) { return run(n) + 1; }
NOINLINE long level2(long n) { return level3(n) + 1; }
NOINLINE long level1(long n) { return level2(n) + 1; }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	usdt = argc > 2 && !strcmp(argv[2], "usdt");
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	long sum = level1(n);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	printf("%.2f ns/call (sum %ld)\n", ns / (double)n, sum);
	return 0;
}

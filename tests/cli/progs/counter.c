/* SPDX-License-Identifier: MIT */
/* A single-threaded program with calls the CLI tests can count exactly:
 * work() N times, greet() once per name, and a bad pointer given to
 * greet_ptr() so that a string fetch meets a fault. Output depends only on
 * the arguments. With NP_COUNTER_TIME set, it also says on stderr how long
 * its loop of work() calls took (the benchmark's measure). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "progs.h"

NOINLINE long work(long i)
{
	return i * 3 + 1;
}

NOINLINE int greet(const char *name, int times)
{
	int n = 0;
	for (const char *p = name; *p; p++)
		n += *p;
	return n * times;
}

/* Never reads its argument: the probe's fetch is the only reader. */
NOINLINE int greet_ptr(const char *name)
{
	return name == NULL;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, sum = 0;
	static const char *const names[] = {"ada", "grace", "linus"};
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (long i = 0; i < n; i++)
		sum += work(i);
	/* for bench/cli-overhead.sh: the loop's own time, without start-up,
	 * and the cpu time it took (what a busy machine inflates less) */
	uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), t1 = now_ns(CLOCK_MONOTONIC);
	if (getenv("NP_COUNTER_TIME"))
		fprintf(stderr, "loop_ns=%llu loop_cpu_ns=%llu\n", (unsigned long long)(t1 - t0),
			(unsigned long long)(c1 - c0));
	for (int i = 0; i < 3; i++)
		sum += greet(names[i], i + 1);
	sum += greet_ptr((const char *)(uintptr_t)0x10);
	printf("counter: n=%ld sum=%ld\n", n, sum);
	return 0;
}

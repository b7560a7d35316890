/* SPDX-License-Identifier: MIT */
/*
 * Variables the watch tests can count exactly: THREADS threads each call
 * bump() PER_THREAD times (a store to `total`), the main thread reads it
 * with peek() READS times and calls tick() TICKS times, and reset() stores
 * to `flag` once (and main to spare1 and spare2). With --wait it first says "ready" (an idle thread
 * already running) and starts only when a line arrives on stdin, so that
 * a test can attach with -p in between; it then says "done" and waits for
 * the end of its input. Output depends only on the arguments.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"

long total;
int flag;
long spare1, spare2; /* more variables to hold debug registers with */
static long per_thread = 1000;

NOINLINE void bump(long by)
{
	__atomic_fetch_add(&total, by, __ATOMIC_RELAXED);
}

NOINLINE long peek(void)
{
	return __atomic_load_n(&total, __ATOMIC_RELAXED);
}

NOINLINE long tick(long v)
{
	return v * 2 + 1;
}

NOINLINE void reset(int v)
{
	flag = v;
}

static void *worker(void *arg)
{
	for (long i = 0; i < per_thread; i++)
		bump(1);
	return arg;
}

static void *idle(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "--wait");
	int a = wait ? 2 : 1;
	int nthreads = argc > a ? atoi(argv[a]) : 3;
	per_thread = argc > a + 1 ? atol(argv[a + 1]) : per_thread;
	long reads = argc > a + 2 ? atol(argv[a + 2]) : 5, ticks = 7, seen = 0, t = 0;
	char line[64];
	if (nthreads > 64)
		nthreads = 64;
	if (wait) {
		pthread_t th;
		pthread_create(&th, NULL, idle, NULL);
		pthread_join(th, NULL);
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	pthread_t th[64];
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (long i = 0; i < reads; i++)
		seen += peek();
	for (long i = 0; i < ticks; i++)
		t += tick(i);
	reset(1);
	spare1 = spare2 = 0;
	printf("watched: total=%ld seen=%ld ticks=%ld flag=%d\n", total, seen, t, flag);
	if (wait) {
		printf("done\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin))
			;
	}
	return 0;
}

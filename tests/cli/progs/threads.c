/* SPDX-License-Identifier: MIT */
/* THREADS threads each call tick() PER_THREAD times. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

static long per_thread = 10000;

NOINLINE long tick(long v)
{
	return v ^ (v << 1);
}

static void *worker(void *arg)
{
	long acc = 0;
	for (long i = 0; i < per_thread; i++)
		acc += tick(i + (long)(intptr_t)arg);
	return (void *)(intptr_t)acc;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	per_thread = argc > 2 ? atol(argv[2]) : per_thread;
	pthread_t t[1024];
	long total = 0;
	if (nthreads > 1024)
		nthreads = 1024;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < nthreads; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)(intptr_t)r;
	}
	printf("threads: %d x %ld total=%ld\n", nthreads, per_thread, total);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* A server whose threads block every signal, as jemalloc's background
 * threads and many servers' workers do: a breakpoint they meet is fatal
 * unless SIGTRAP is unblocked for them. One line in, one answer out:
 *   "w V"  the worker, made at start with every signal blocked, answers
 *          work(V)
 *   "t V"  a new thread, made now with every signal blocked around
 *          pthread_create (jemalloc's way), answers work(V) and stays,
 *          waiting, for the test to read its mask
 * Prints "ready" first, and a summary at the end of input. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "progs.h"

static int to_worker[2], from_worker[2], park[2];

NOINLINE long work(long v)
{
	return v * 7 + 2;
}

static void *worker(void *arg)
{
	long v;
	(void)arg;
	while (read(to_worker[0], &v, sizeof(v)) == sizeof(v)) {
		v = work(v);
		if (write(from_worker[1], &v, sizeof(v)) != sizeof(v))
			break;
	}
	return NULL;
}

static void *one_shot(void *arg)
{
	long v = work(*(long *)arg);
	char c;
	if (write(from_worker[1], &v, sizeof(v)) != sizeof(v))
		abort();
	if (read(park[0], &c, 1) < 0) /* stays until the end */
		abort();
	return NULL;
}

/* pthread_create with every signal blocked, then the caller's mask back. */
static pthread_t deaf_thread(void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	pthread_t t;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, fn, arg))
		abort();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return t;
}

int main(void)
{
	static long args[64];
	pthread_t shots[64];
	char line[64];
	long n = 0, sum = 0, v;
	int nshots = 0;

	if (pipe(to_worker) || pipe(from_worker) || pipe(park))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	deaf_thread(worker, NULL);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		v = atol(line + 1);
		if (line[0] == 't' && nshots < 64) {
			args[nshots] = v;
			shots[nshots] = deaf_thread(one_shot, &args[nshots]);
			nshots++;
		} else if (write(to_worker[1], &v, sizeof(v)) != sizeof(v)) {
			return 1;
		}
		if (read(from_worker[0], &v, sizeof(v)) != sizeof(v))
			return 1;
		sum += v;
		printf("ok %ld\n", v);
		n++;
	}
	close(park[1]);
	for (int i = 0; i < nshots; i++)
		pthread_join(shots[i], NULL);
	printf("deaf_threads: %ld answers, sum %ld\n", n, sum);
	return 0;
}

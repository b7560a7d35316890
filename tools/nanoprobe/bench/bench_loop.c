/* SPDX-License-Identifier: MIT */
/*
 * Workers call the target in batches and publish their call count after
 * each batch; the main thread only sleeps and reads the counts, so a row
 * with one thread keeps one CPU busy. Calls are counted exactly (every
 * batch a worker starts it finishes) because the test compares them with
 * the hits every backend counted. Compiled at -O2 whatever the build type.
 */
#include "bench_loop.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

_Thread_local uint64_t bench_tls_hits;

void np_bench_target_nop(void);
void np_bench_target_push(void);
void np_bench_target_ret(void);
void np_bench_target_nop5(void);

const struct bench_target bench_targets[] = {
	{"nop", np_bench_target_nop},
	{"push", np_bench_target_push},
	{"ret", np_bench_target_ret},
	{"nop5", np_bench_target_nop5},
};
const unsigned bench_ntargets = sizeof(bench_targets) / sizeof(*bench_targets);

enum { BATCH = 64, SAMPLES = 5, MAX_THREADS = 64 };

struct worker {
	pthread_t th;
	pid_t tid;
	unsigned cpu;
	_Atomic uint64_t calls;
	uint64_t hits;
	struct shared *sh;
};

struct shared {
	void (*fn)(void);
	atomic_int state; /* 0 wait, 1 run, 2 stop */
	atomic_uint ready;
};

static void pin(unsigned cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(n > 0 ? cpu % (unsigned)n : 0, &set);
	sched_setaffinity(0, sizeof(set), &set); /* a hint: fine if refused */
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	pin(w->cpu);
	w->tid = gettid();
	atomic_fetch_add(&sh->ready, 1);
	while (atomic_load(&sh->state) == 0)
		sched_yield();
	void (*fn)(void) = sh->fn;
	uint64_t calls = 0;
	while (atomic_load_explicit(&sh->state, memory_order_relaxed) == 1) {
		for (int i = 0; i < BATCH; i++)
			fn();
		calls += BATCH;
		atomic_store_explicit(&w->calls, calls, memory_order_relaxed);
	}
	w->hits = bench_tls_hits;
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t total_calls(struct worker *w, unsigned n)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += atomic_load_explicit(&w[i].calls, memory_order_relaxed);
	return sum;
}

/* The calls counted after an interval, which lasts until one more batch
 * was counted (at most PROGRESS_WAITS intervals more): a slow path (a
 * trap per hit, on a loaded machine) may take longer than an interval for
 * one BATCH, and a rate of 0 would say that no call returned. */
enum { PROGRESS_WAITS = 100 };
static uint64_t calls_after(struct worker *w, unsigned n, double interval, uint64_t c0)
{
	sleep_s(interval);
	uint64_t c1 = total_calls(w, n);
	for (int k = 0; c1 == c0 && k < PROGRESS_WAITS; k++) {
		sleep_s(interval);
		c1 = total_calls(w, n);
	}
	return c1;
}

/* Rates over SAMPLES intervals after one warm-up interval. */
static void sample(struct worker *w, unsigned n, double interval, struct loop_result *out)
{
	double rate[SAMPLES], sum = 0, var = 0;
	sleep_s(interval);
	uint64_t c0 = total_calls(w, n);
	double t0 = now_s();
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t c1 = calls_after(w, n, interval, c0);
		double t1 = now_s();
		rate[i] = (double)(c1 - c0) / (t1 - t0) / 1e6;
		sum += rate[i];
		c0 = c1, t0 = t1;
	}
	out->mps = sum / SAMPLES;
	for (int i = 0; i < SAMPLES; i++)
		var += (rate[i] - out->mps) * (rate[i] - out->mps);
	out->mps_stddev = sqrt(var / (SAMPLES - 1));
}

static int start_workers(struct worker *w, unsigned n, struct shared *sh)
{
	for (unsigned i = 0; i < n; i++) {
		w[i] = (struct worker){.cpu = i, .sh = sh};
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			atomic_store(&sh->state, 2);
			for (unsigned k = 0; k < i; k++)
				pthread_join(w[k].th, NULL);
			return -EAGAIN;
		}
	}
	while (atomic_load(&sh->ready) < n)
		sched_yield();
	return 0;
}

int bench_loop(const struct loop_run *r, struct loop_result *out)
{
	unsigned n = r->threads < 1 ? 1 : r->threads > MAX_THREADS ? MAX_THREADS : r->threads;
	struct worker w[MAX_THREADS];
	struct shared sh = {.fn = r->fn};
	pid_t tids[MAX_THREADS];
	int rc = start_workers(w, n, &sh);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++)
		tids[i] = w[i].tid;
	rc = r->attach ? r->attach(r->cookie, tids, n) : 0;
	atomic_store(&sh.state, rc ? 2 : 1);
	if (!rc)
		sample(w, n, r->seconds / SAMPLES, out);
	atomic_store(&sh.state, 2);
	out->calls = out->tls_hits = 0;
	for (unsigned i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		out->calls += atomic_load(&w[i].calls);
		out->tls_hits += w[i].hits;
	}
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * The trigger loop of `nanoprobe bench`, as the kernel's selftest bench
 * runs it: N threads call one target function as fast as they can, the
 * rate is sampled at regular intervals after a warm-up, and the row is the
 * mean and standard deviation of those samples.
 */
#ifndef NP_CLI_BENCH_LOOP_H
#define NP_CLI_BENCH_LOOP_H
#include <stdint.h>
#include <sys/types.h>

/* Bumped by in-process probe handlers (nanoprobe's backends) on the thread
 * that hit the probe: a per-thread count costs no shared cache line. */
extern _Thread_local uint64_t bench_tls_hits;

struct bench_target {
	const char *name; /* "nop", "push", "ret", "nop5" */
	void (*fn)(void);
};
extern const struct bench_target bench_targets[];
extern const unsigned bench_ntargets;

struct loop_run {
	void (*fn)(void);
	unsigned threads;
	double seconds; /* measured time, after a warm-up of a fifth of it */
	/* Called once every worker exists and before any calls: place the
	 * probe (tids: the workers' thread ids). 0, or -errno to give up. */
	int (*attach)(void *cookie, const pid_t *tids, unsigned n);
	void *cookie;
};

struct loop_result {
	double mps, mps_stddev; /* millions of calls per second, all threads */
	uint64_t calls;         /* calls made, all threads, first to last */
	uint64_t tls_hits;      /* bench_tls_hits summed over the workers */
};

/* 0, or what attach returned. */
int bench_loop(const struct loop_run *r, struct loop_result *out);
#endif

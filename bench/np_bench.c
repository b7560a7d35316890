/* SPDX-License-Identifier: MIT */
/*
 * ns per hit for each strategy, measured side by side in one run:
 * an unprobed call, a JUMP entry probe, a TRAP probe, return probes and a
 * mid-function probe, on the kernel selftest trigger targets. Each row is
 * the median of several timed batches; "+ns" is the cost over the same
 * loop without a probe.
 *
 *   np-bench [-j] [-n CALLS]
 */
#include <nanoprobe/nanoprobe.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void np_bench_nop(void);
void np_bench_push(void);
void np_bench_ret(void);
void np_bench_nop5(void);
long np_bench_mid(long);
extern char np_bench_mid_site[];

static uint64_t counter;

static void count(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(*(uint64_t *)data)++;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define BATCHES 7

/* Median ns per call of fn over n calls. */
static double time_calls(void *fnp, long n)
{
	double t[BATCHES];
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();
		if (fnp == (void *)np_bench_mid) {
			for (long i = 0; i < n; i++)
				np_bench_mid(i);
		} else {
			void (*fn)(void) = (void (*)(void))fnp;
			for (long i = 0; i < n; i++)
				fn();
		}
		t[b] = (now_ns() - t0) / (double)n;
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp);
	return t[BATCHES / 2];
}

struct row {
	const char *target;
	void *fn;
	void *site;
	const char *kind; /* "none", "entry", "return" */
	enum np_strategy strategy;
	unsigned flags;
};

static int json;
static double base_ns[8];

static void run(const struct row *r, int idx, long n)
{
	struct np_probe_opts o = NP_PROBE_OPTS(.data = &counter, .strategy = r->strategy,
					       .flags = r->flags, .name = r->target);
	struct np_probe *p = NULL;
	const char *how = "none";
	if (strcmp(r->kind, "entry") == 0)
		o.on_entry = count;
	else if (strcmp(r->kind, "return") == 0)
		o.on_return = count;
	if (o.on_entry || o.on_return) {
		p = np_probe_attach(r->site, &o);
		if (!p) {
			printf("%-10s %-7s %-5s  refused: %s\n", r->target, r->kind,
			       np_strategy_name(r->strategy), strerror(errno));
			return;
		}
		how = np_strategy_name(np_probe_strategy(p));
	}
	long calls = r->strategy == NP_STRATEGY_TRAP ? n / 200 : n;
	double ns = time_calls(r->fn, calls);
	if (!p)
		base_ns[idx] = ns;
	double extra = ns - base_ns[idx];
	const char *mode = !p ? "-" : r->flags & NP_PROBE_ARGS_ONLY ? "args-only" :
				      r->flags & NP_PROBE_NO_FPU ? "no-fpu" : "default";
	if (json)
		printf("{\"target\":\"%s\",\"probe\":\"%s\",\"strategy\":\"%s\",\"save\":\"%s\","
		       "\"ns_per_call\":%.2f,\"ns_per_hit\":%.2f}\n",
		       r->target, r->kind, how, mode, ns, p ? extra : 0.0);
	else if (p)
		printf("%-6s %-7s %-5s %-10s %9.2f ns/call  %+9.2f ns/hit\n", r->target, r->kind, how,
		       mode, ns, extra);
	else
		printf("%-6s %-7s %-5s %-10s %9.2f ns/call\n", r->target, "none", "-", "-", ns);
	if (p) {
		np_probe_detach(p);
		np_probe_free(p);
	}
}

/* Control-path cost: attach then detach one probe, single-threaded. */
static void attach_cost(int rounds)
{
	struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = count, .data = &counter);
	double t0 = now_ns();
	for (int i = 0; i < rounds; i++) {
		struct np_probe *p = np_probe_attach((void *)np_bench_nop5, &o);
		if (!p)
			return;
		np_probe_free(p);
	}
	double us = (now_ns() - t0) / rounds / 1000.0;
	if (json)
		printf("{\"bench\":\"attach+detach\",\"us_per_pair\":%.1f}\n", us);
	else
		printf("attach+detach (jump, 1 thread): %.1f us per pair\n", us);
}

int main(int argc, char **argv)
{
	long n = 20 * 1000 * 1000;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-j") == 0)
			json = 1;
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = atol(argv[++i]);
	}
	struct {
		const char *name;
		void *fn, *site;
	} targets[] = {
		{"nop", (void *)np_bench_nop, (void *)np_bench_nop},
		{"push", (void *)np_bench_push, (void *)np_bench_push},
		{"ret", (void *)np_bench_ret, (void *)np_bench_ret},
		{"nop5", (void *)np_bench_nop5, (void *)np_bench_nop5},
		{"mid", (void *)np_bench_mid, (void *)np_bench_mid_site},
	};
	for (int t = 0; t < 5; t++) {
		bool mid = t == 4;
		struct row rows[] = {
			{targets[t].name, targets[t].fn, targets[t].site, "none", 0, 0},
			{targets[t].name, targets[t].fn, targets[t].site, "entry", NP_STRATEGY_JUMP,
			 NP_PROBE_NO_FPU | NP_PROBE_ARGS_ONLY},
			{targets[t].name, targets[t].fn, targets[t].site, "entry", NP_STRATEGY_JUMP, 0},
			{targets[t].name, targets[t].fn, targets[t].site, "entry", NP_STRATEGY_TRAP, 0},
			{targets[t].name, targets[t].fn, targets[t].site, "return", NP_STRATEGY_JUMP,
			 NP_PROBE_NO_FPU},
		};
		for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]) - (mid ? 1 : 0); i++)
			run(&rows[i], t, n);
	}
	attach_cost(1000);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The attach-cost rows of `nanoprobe bench`: place a counting probe on
 * each of the first 1,000 (then 10,000) functions of a generated set linked
 * into this executable (gen-bench-funcs.py), call each function once, then
 * remove every probe; time the attaching and the removing, for nanoprobe
 * (AUTO, all in one np_probe_attach_many) and for the kernel's uprobes (one
 * uprobe_multi link).
 * The one call per function checks that every probe was really in place:
 * hits must equal the number of functions.
 */
#include <errno.h>
#include <limits.h>
#include <nanoprobe/nanoprobe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_kernel.h"
#include "bench_loop.h"

extern long (*const np_bench_funcs[])(long);
extern const unsigned np_bench_nfuncs;

static double clock_ms(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wall and process CPU time at one moment. */
struct stamp {
	double wall, cpu;
};

static struct stamp stamp(void)
{
	return (struct stamp){clock_ms(CLOCK_MONOTONIC), clock_ms(CLOCK_PROCESS_CPUTIME_ID)};
}

/* attach: t0 to t1; detach: t2 to t3. */
static void set_times(struct bench_row *r, struct stamp t0, struct stamp t1, struct stamp t2,
		      struct stamp t3)
{
	r->attach_ms = t1.wall - t0.wall, r->detach_ms = t3.wall - t2.wall;
	r->attach_cpu_ms = t1.cpu - t0.cpu, r->detach_cpu_ms = t3.cpu - t2.cpu;
}

static void count_hit(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
	bench_tls_hits++;
}

static void call_all(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		np_bench_funcs[i]((long)i);
}

/* All n in one np_probe_attach_many call, removed with one
 * np_probe_detach_many: the engine's counterpart of uprobe_multi. */
static void engine_row(unsigned n, struct bench_row *r)
{
	struct np_probe **p = calloc(n, sizeof(*p));
	void **addrs = calloc(n, sizeof(*addrs));
	const struct np_probe_opts **opts = calloc(n, sizeof(*opts));
	int *errs = calloc(n, sizeof(*errs));
	struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = count_hit,
					       .flags = NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU);
	if (!p || !addrs || !opts || !errs) {
		snprintf(r->skipped, sizeof(r->skipped), "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		addrs[i] = (void *)np_bench_funcs[i], opts[i] = &o;
	struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(.cnt = n, .addrs = addrs, .opts = opts,
							  .probes = p, .errs = errs);
	struct stamp t0 = stamp();
	int placed = np_probe_attach_many(&mo);
	struct stamp t1 = stamp();
	for (unsigned i = 0; placed >= 0 && (unsigned)placed < n && i < n; i++)
		if (!p[i]) {
			snprintf(r->skipped, sizeof(r->skipped), "probe %u of %u refused: %s", i + 1,
				 n, strerror(errs[i]));
			break;
		}
	if (placed < 0)
		snprintf(r->skipped, sizeof(r->skipped), "attach: %s", strerror(errno));
	uint64_t before = bench_tls_hits;
	call_all(n);
	r->hits = bench_tls_hits - before;
	struct stamp t2 = stamp();
	np_probe_detach_many(p, n);
	set_times(r, t0, t1, t2, stamp());
	for (unsigned i = 0; i < n; i++)
		np_probe_free(p[i]);
out:
	free(p), free(addrs), free(opts), free(errs);
}

/* One uprobe_multi link for all n: one perf event per probe would cost a
 * grace period each to remove (about 110 ms here: 1,000 took 112 s). */
static void kernel_row(unsigned n, struct kcount *k, struct bench_row *r)
{
	char path[PATH_MAX];
	uint64_t *off = calloc(n, sizeof(*off));
	if (!off) {
		snprintf(r->skipped, sizeof(r->skipped), "out of memory");
		return;
	}
	/* file offsets before the clock starts: the generated functions share
	 * one mapping, so one lookup gives them all */
	uint64_t off0;
	if (self_addr_to_file((const void *)np_bench_funcs[0], path, sizeof(path), &off0))
		snprintf(r->skipped, sizeof(r->skipped), "the functions are in no file");
	for (unsigned i = 0; i < n; i++)
		off[i] = off0 + ((uintptr_t)np_bench_funcs[i] - (uintptr_t)np_bench_funcs[0]);
	struct stamp t0 = stamp();
	if (!r->skipped[0])
		kcount_attach_multi(k, path, off, n, false, getpid(), r->skipped, sizeof(r->skipped));
	struct stamp t1 = stamp();
	call_all(n);
	r->hits = kcount_read(k);
	struct stamp t2 = stamp();
	kcount_detach_all(k);
	set_times(r, t0, t1, t2, stamp());
	free(off);
}

static void attach_rows(const struct bench_opts *o, unsigned n, struct kcount *k,
			const char *kernel_why)
{
	double kernel_rate = 0;
	for (int b = BK_KERNEL; b < BK_COUNT; b++) {
		if (!bench_own_backend(o, b) || b == BK_TRAP || b == BK_WATCH)
			continue;
		struct bench_row r = {.kind = ROW_ATTACH, .backend = b, .cpus = 1, .probes = n,
				      .calls = n};
		snprintf(r.bench, sizeof(r.bench), "attach-%u", n);
		if (b == BK_KERNEL && kernel_why[0])
			snprintf(r.skipped, sizeof(r.skipped), "%s", kernel_why);
		else if (b == BK_KERNEL)
			kernel_row(n, k, &r);
		else
			engine_row(n, &r);
		if (!r.skipped[0]) {
			r.probes_per_sec = n / ((r.attach_ms + r.detach_ms) / 1e3);
			if (b == BK_KERNEL)
				kernel_rate = r.probes_per_sec;
			else if (kernel_rate > 0)
				r.vs_kernel = r.probes_per_sec / kernel_rate;
		}
		bench_emit(o, &r);
	}
}

int bench_attach(const struct bench_opts *o)
{
	static const unsigned sizes[] = {1000, 10000};
	struct kcount k = {.map_fd = -1, .prog_fd = -1};
	char kernel_why[256] = "";
	bool opened = false;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		char name[32];
		snprintf(name, sizeof(name), "attach-%u", sizes[i]);
		if (!bench_selected(o, name) || sizes[i] > np_bench_nfuncs)
			continue;
		if (!opened && o->backend[BK_KERNEL])
			kcount_open(&k, kernel_why, sizeof(kernel_why));
		opened = true;
		attach_rows(o, sizes[i], &k, kernel_why);
	}
	kcount_close(&k);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The hit rows of `nanoprobe bench`: the kernel selftest's trigger bench
 * (uprobe-nop, uprobe-push, uprobe-ret, uprobe-nop5 and their uretprobe
 * rows) with four backends side by side in one run: no probe, the kernel's
 * uprobe counted by BPF, nanoprobe forced to TRAP, and nanoprobe's own
 * choice (AUTO, a JUMP on every target here). The targets live in this
 * executable, so the kernel's uprobe goes on /proc/self/exe's file at the
 * target's offset, for this process only.
 *
 * Every probe only counts, as the BPF program does: nanoprobe's handler
 * bumps a per-thread counter and is attached with NP_PROBE_ARGS_ONLY |
 * NP_PROBE_NO_FPU, the register contract of a BPF program at an entry.
 */
#include <errno.h>
#include <limits.h>
#include <nanoprobe/nanoprobe.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_kernel.h"
#include "bench_loop.h"

struct hit_run {
	const struct bench_target *t;
	bool ret;
	enum bench_backend backend;
	struct kcount *k;
	struct np_probe *probe;
	char *why;
	size_t whylen;
};

static void count_hit(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
	bench_tls_hits++;
}

/* One event on the first worker: the kernel filters a task-bound uprobe
 * event by the task's mm, not the task, so it counts every thread of this
 * process (one event per worker counted every hit once per worker). */
static int attach_kernel(struct hit_run *h, const pid_t *tids, unsigned n)
{
	char path[PATH_MAX];
	uint64_t off;
	(void)n;
	if (self_addr_to_file((const void *)h->t->fn, path, sizeof(path), &off)) {
		snprintf(h->why, h->whylen, "target %s is in no mapped file", h->t->name);
		return -ENOENT;
	}
	return kcount_attach(h->k, path, off, h->ret, tids[0], h->why, h->whylen);
}

static int attach_engine(struct hit_run *h)
{
	struct np_probe_opts o = NP_PROBE_OPTS(
		.strategy = h->backend == BK_TRAP ? NP_STRATEGY_TRAP : NP_STRATEGY_AUTO,
		.flags = NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU, .name = h->t->name);
	if (h->ret)
		o.on_return = count_hit;
	else
		o.on_entry = count_hit;
	h->probe = np_probe_attach((void *)h->t->fn, &o);
	if (!h->probe) {
		int err = errno;
		snprintf(h->why, h->whylen, "nanoprobe refused the probe: %s", strerror(err));
		return -err;
	}
	return 0;
}

static int attach(void *cookie, const pid_t *tids, unsigned n)
{
	struct hit_run *h = cookie;
	switch (h->backend) {
	case BK_KERNEL: return attach_kernel(h, tids, n);
	case BK_TRAP:
	case BK_JUMP: return attach_engine(h);
	default: return 0;
	}
}

static void run_row(const struct bench_opts *o, struct hit_run *h, unsigned cpus,
		    struct bench_row *r)
{
	struct loop_run lr = {.fn = h->t->fn, .threads = cpus, .seconds = o->seconds,
			      .attach = attach, .cookie = h};
	struct loop_result res = {0};
	h->why = r->skipped, h->whylen = sizeof(r->skipped);
	if (bench_loop(&lr, &res) == 0) {
		r->mps = res.mps, r->mps_stddev = res.mps_stddev, r->calls = res.calls;
		r->ns_per_hit = res.mps > 0 ? cpus * 1e3 / res.mps : 0;
		r->hits = h->backend == BK_KERNEL ? kcount_read(h->k) : res.tls_hits;
		if (h->backend == BK_KERNEL)
			r->missed = kcount_missed(h->k);
		else if (h->probe)
			r->missed = np_probe_missed(h->probe);
	} else if (!r->skipped[0]) {
		snprintf(r->skipped, sizeof(r->skipped), "the loop could not start");
	}
	if (h->probe) {
		r->strategy = np_strategy_name(np_probe_strategy(h->probe));
		np_probe_free(h->probe);
		h->probe = NULL;
	}
	if (h->backend == BK_KERNEL)
		kcount_detach_all(h->k);
}

/* One bench (target, entry or return) at one thread count: every backend. */
static void run_group(const struct bench_opts *o, const struct bench_target *t, bool ret,
		      unsigned cpus, struct kcount *k, const char *kernel_why)
{
	double kernel_mps = 0;
	for (int b = 0; b < BK_COUNT; b++) {
		if (!bench_own_backend(o, b) || b == BK_WATCH)
			continue;
		struct bench_row r = {.kind = ROW_HITS, .backend = b, .cpus = cpus};
		snprintf(r.bench, sizeof(r.bench), "%s-%s", ret ? "uretprobe" : "uprobe", t->name);
		struct hit_run h = {.t = t, .ret = ret, .backend = b, .k = k};
		if (b == BK_KERNEL && kernel_why[0])
			snprintf(r.skipped, sizeof(r.skipped), "%s", kernel_why);
		else
			run_row(o, &h, cpus, &r);
		if (b == BK_KERNEL && !r.skipped[0])
			kernel_mps = r.mps;
		if (b != BK_KERNEL && kernel_mps > 0)
			r.vs_kernel = r.mps / kernel_mps;
		bench_emit(o, &r);
	}
}

static bool any_selected(const struct bench_opts *o)
{
	char name[32];
	for (unsigned i = 0; i < bench_ntargets; i++)
		for (int ret = 0; ret < 2; ret++) {
			snprintf(name, sizeof(name), "%s-%s", ret ? "uretprobe" : "uprobe",
				 bench_targets[i].name);
			if (bench_selected(o, name))
				return true;
		}
	return false;
}

int bench_hits(const struct bench_opts *o)
{
	if (!any_selected(o))
		return 0;
	struct kcount k = {.map_fd = -1, .prog_fd = -1};
	char kernel_why[256] = "";
	if (o->backend[BK_KERNEL])
		kcount_open(&k, kernel_why, sizeof(kernel_why));
	unsigned counts[2] = {1, 2}, ncounts = 2;
	if (o->threads)
		counts[0] = o->threads, ncounts = 1;
	for (unsigned c = 0; c < ncounts; c++)
		for (unsigned i = 0; i < bench_ntargets; i++)
			for (int ret = 0; ret < 2; ret++) {
				char name[32];
				snprintf(name, sizeof(name), "%s-%s", ret ? "uretprobe" : "uprobe",
					 bench_targets[i].name);
				if (bench_selected(o, name))
					run_group(o, &bench_targets[i], ret, counts[c], &k, kernel_why);
			}
	kcount_close(&k);
	return 0;
}

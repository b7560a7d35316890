/* SPDX-License-Identifier: MIT */
/*
 * The real-program rows of `nanoprobe bench`: a program (bench_workloads.c)
 * unprobed and under each tool that counts its probes' hits
 * (bench_tools.c: nanoprobe, kernel uprobes with the bench's BPF counter,
 * bpftrace, Frida), RUNS runs of each, interleaved, the median of each;
 * and in every run, what each tool counted checked against what nanoprobe
 * counted, probe by probe where the tool tells them apart.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_kernel.h"
#include "bench_tools.h"
#include "bench_workloads.h"

#define RUNS 3 /* of each backend, interleaved; the rows give the median */

static const enum bench_backend order[] = {BK_NONE, BK_JUMP, BK_KERNEL, BK_BPFTRACE, BK_FRIDA};
#define NB (sizeof(order) / sizeof(*order))
#define JUMP_AT 1 /* order[JUMP_AT] == BK_JUMP: the counts the others are checked against */

struct program {
	struct workload w;
	/* per backend (index into order) and run; value[.][.][1]: redis GET */
	double value[NB][RUNS][2], start[NB][RUNS], stop[NB][RUNS];
	int done[NB];                 /* runs that measured */
	char why[NB][256];            /* why a backend could not run */
	struct tool_counts last[NB];  /* this run's counts */
	char check[NB][160];          /* the hits against nanoprobe's */
	size_t placed[NB];
};

/* --- one run ------------------------------------------------------------- */

/* What tool c counted against nanoprobe's ref, in words (struct bench_row). */
static void check_hits(const struct tool_counts *ref, const struct tool_counts *c,
		       const struct prog_spec *p, char *out, size_t len)
{
	size_t n = p->n;
	if (!c->per) { /* a total only: comparable when nanoprobe placed them all */
		if (ref->placed == n && c->total == ref->total)
			snprintf(out, len, "equal");
		else
			snprintf(out, len, "differ: %llu hits, nanoprobe %llu",
				 (unsigned long long)c->total, (unsigned long long)ref->total);
		return;
	}
	size_t both = 0, differ = 0, first = 0;
	uint64_t mine = 0, theirs = 0;
	for (size_t i = 0; i < n; i++)
		if (c->state[i] == PT_PLACED && ref->state[i] == PT_PLACED) {
			both++;
			if (c->per[i] != ref->per[i] && !differ++)
				first = i;
			mine += c->per[i], theirs += ref->per[i];
		}
	if (differ)
		snprintf(out, len, "differ at %zu of %zu probes: %llu hits, nanoprobe %llu (%s%s: "
			 "%llu, nanoprobe %llu)", differ, both, (unsigned long long)mine,
			 (unsigned long long)theirs, p->pts[first].name,
			 p->pts[first].ret ? "%return" : "", (unsigned long long)c->per[first],
			 (unsigned long long)ref->per[first]);
	else if (both == n)
		snprintf(out, len, "equal");
	else /* Frida: the rest it refused, or hooked where their first jump goes */
		snprintf(out, len, "equal on the %zu probes placed where asked (%zu followed a "
			 "jump elsewhere, %zu refused)", both, c->redirected, c->refused);
}

/* "start=S end=E elapsed=X" from the program: its own times. */
static bool parse_times(const char *out, double *start, double *end, double *elapsed)
{
	const char *s = out ? strstr(out, "start=") : NULL;
	return s && sscanf(s, "start=%lf end=%lf elapsed=%lf", start, end, elapsed) == 3 &&
	       *elapsed > 0;
}

static void run_once(const struct bench_opts *o, struct program *pg, unsigned bi, int run,
		     struct kcount *k)
{
	char *why = pg->why[bi];
	struct tool_run t;
	double begin = 0, end = 0, ended, v[2] = {0, 0};
	struct workload *w = &pg->w;
	bool redis = !strcmp(w->metric, "rps");
	if (redis && redis_next_port(w))
		return (void)snprintf(why, 256, "cannot write %.200s", w->conf);
	int rc = tool_start(o, order[bi], &w->spec, k, &t, why, 256);
	if (rc && t.pid <= 0)
		return;
	if (!rc && redis) {
		long requests = (long)(o->seconds * 50000) + 1000;
		if (redis_ready(w->port, &t)) {
			begin = realtime_now();
			if (!redis_benchmark(w->port, requests, v))
				snprintf(why, 256, "redis-benchmark failed");
		} else {
			snprintf(why, 256, "redis-server did not answer");
		}
		end = realtime_now();
		if (!redis_send(w->port, "SHUTDOWN NOSAVE\r\n"))
			kill(t.pid, SIGTERM);
	}
	char *out = tool_finish(&t, &ended, why, 256);
	if (!redis && !parse_times(out, &begin, &end, &v[0]) && !why[0])
		snprintf(why, 256, "%s printed no times", w->spec.argv[0]);
	free(out);
	tool_counts_free(&pg->last[bi]);
	if (!why[0])
		tool_counts(&t, &w->spec, &pg->last[bi], why, 256);
	if (order[bi] == BK_KERNEL)
		kcount_detach_all(k);
	if (why[0])
		return;
	if (order[bi] != BK_NONE && bi != JUMP_AT && pg->done[JUMP_AT] == run + 1 &&
	    (!pg->check[bi][0] || !strncmp(pg->check[bi], "equal", 5)))
		check_hits(&pg->last[JUMP_AT], &pg->last[bi], &w->spec, pg->check[bi],
			   sizeof(pg->check[bi]));
	pg->placed[bi] = pg->last[bi].placed;
	memcpy(pg->value[bi][run], v, sizeof(v));
	pg->start[bi][run] = begin - t.launched;
	pg->stop[bi][run] = ended - end;
	pg->done[bi]++;
}

/* --- rows ---------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of the n figures at v with stride `step`. */
static double median(const double *v, int n, size_t step)
{
	double s[RUNS];
	for (int i = 0; i < n; i++)
		s[i] = v[i * step];
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n == 0 ? 0 : n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void emit_rows(const struct bench_opts *o, struct program *pg)
{
	bool rps = !strcmp(pg->w.metric, "rps");
	for (int r = 0; r < 2 && pg->w.rows[r]; r++) {
		double none = pg->done[0] ? median(&pg->value[0][0][r], pg->done[0], 2) : 0;
		for (unsigned bi = 0; bi < NB; bi++) {
			if (!o->backend[order[bi]] || !bench_selected(o, pg->w.rows[r]))
				continue;
			struct bench_row row = {.kind = ROW_PROGRAM, .backend = order[bi], .cpus = 1,
						.metric = pg->w.metric, .probes = (unsigned)pg->w.spec.n,
						.hits = pg->last[bi].total,
						.missed = pg->last[bi].missed,
						.placed = (unsigned)pg->placed[bi]};
			snprintf(row.bench, sizeof(row.bench), "%s", pg->w.rows[r]);
			if (!pg->done[bi])
				snprintf(row.skipped, sizeof(row.skipped), "%s",
					 pg->why[bi][0] ? pg->why[bi] : "did not run");
			int n = pg->done[bi];
			row.value = median(&pg->value[bi][0][r], n, 2);
			row.start_s = median(pg->start[bi], n, 1);
			row.stop_s = median(pg->stop[bi], n, 1);
			for (int i = 0, at = 0; i < n && at < (int)sizeof(row.runs); i++)
				at += snprintf(row.runs + at, sizeof(row.runs) - (size_t)at, "%s%.*f",
					       i ? " " : "", rps ? 0 : 3, pg->value[bi][i][r]);
			row.has_overhead = bi && none > 0 && row.value > 0;
			if (row.has_overhead)
				row.overhead_pct = rps ? (1 - row.value / none) * 100
						       : (row.value / none - 1) * 100;
			snprintf(row.hits_check, sizeof(row.hits_check), "%s%s%s%s", pg->check[bi],
				 n && pg->why[bi][0] ? (pg->check[bi][0] ? "; " : "") : "",
				 n && pg->why[bi][0] ? "a later run failed: " : "",
				 n ? pg->why[bi] : "");
			bench_emit(o, &row);
		}
	}
}

/* A program's rows: every backend RUNS times, interleaved. */
static void program_rows(const struct bench_opts *o, struct program *pg, enum workload_kind kind,
			 struct kcount *k, const char *kernel_why)
{
	char why[256] = "";
	workload_make(o, kind, &pg->w, why, sizeof(why));
	for (unsigned bi = 0; bi < NB; bi++)
		if (!o->backend[order[bi]])
			continue;
		else if (why[0])
			snprintf(pg->why[bi], sizeof(pg->why[bi]), "%s", why);
		else if (order[bi] == BK_KERNEL)
			snprintf(pg->why[bi], sizeof(pg->why[bi]), "%s", kernel_why);
		else
			tool_available(o, order[bi], pg->why[bi], sizeof(pg->why[bi]));
	for (int run = 0; run < RUNS; run++)
		for (unsigned bi = 0; bi < NB; bi++)
			if (o->backend[order[bi]] && !pg->why[bi][0])
				run_once(o, pg, bi, run, k);
	emit_rows(o, pg);
	for (unsigned bi = 0; bi < NB; bi++)
		tool_counts_free(&pg->last[bi]);
	workload_free(&pg->w);
}

int bench_programs(const struct bench_opts *o)
{
	static const enum workload_kind kinds[] = {WL_PYTHON, WL_SQLITE, WL_REDIS};
	bool want[] = {bench_selected(o, "python3-json"), bench_selected(o, "sqlite3"),
		       bench_selected(o, "redis-set") || bench_selected(o, "redis-get")};
	if (!want[0] && !want[1] && !want[2])
		return 0;
	struct kcount k = {.map_fd = -1, .prog_fd = -1};
	char kernel_why[256] = "";
	if (o->backend[BK_KERNEL])
		kcount_open(&k, kernel_why, sizeof(kernel_why));
	static struct program pg; /* large: not on the stack */
	for (unsigned i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
		if (want[i]) {
			pg = (struct program){0};
			program_rows(o, &pg, kinds[i], &k, kernel_why);
		}
	kcount_close(&k);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe latency: time from entry to return of each call, as a
 * power-of-two histogram per function in the look of bpftrace's hist()
 * (one for all of them with --merge). The entry's timestamp travels with
 * the call (np_ctx_call_data); the return adds the difference to the
 * probe's histogram in the calling thread's own ring; we sum the threads'
 * at the end, or at each -i interval (the difference since the last).
 *
 *   @usecs[checkout]:
 *   [16, 32)             12 |@@@@@@@@@@@@@@@@                                    |
 *   [32, 64)             39 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "output/quote.h"
#include "output/stamp.h"
#include "session/session.h"

#define BAR 52

struct unit {
	const char *name;
	unsigned ns;
};
static const struct unit units[] = {{"nsecs", 1}, {"usecs", 1000}, {"msecs", 1000000}};

enum { OPT_MERGE = 2100 };

struct latency {
	const struct unit *unit;
	bool merge, json, many_files, intervals;
	unsigned top;
	FILE *out;
	const struct probe_set *set;
	struct np_hist *last; /* per probe, at the previous interval */
};

/* One report's histogram: a probe's, or all of them merged. */
struct lrow {
	const struct rprobe *p; /* NULL: merged */
	struct np_hist h;
};

/* 1024 -> "1K", as bpftrace labels its buckets. */
static void human(uint64_t v, char *buf, size_t len)
{
	static const char suffix[] = " KMGTPE";
	unsigned i = 0;
	while (v >= 1024 && v % 1024 == 0 && i < 6) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%llu%c" : "%llu", (unsigned long long)v, suffix[i]);
}

static void bucket_label(unsigned b, char *buf, size_t len)
{
	char lo[16], hi[16];
	if (b < 2) {
		snprintf(buf, len, "[%u]", b);
		return;
	}
	human(1ull << (b - 1), lo, sizeof(lo));
	human(b < 64 ? 1ull << b : 0, hi, sizeof(hi));
	snprintf(buf, len, "[%s, %s)", lo, hi);
}

/* The probe as count names it: func, func+0x3, func%return; with several
 * files, file:func. */
static const char *probe_name(const struct latency *l, const struct rprobe *p, char *buf,
			      size_t len)
{
	const char *base = strrchr(p->m.path, '/');
	char offs[32] = "";
	if (p->m.func_vaddr && p->m.vaddr != p->m.func_vaddr)
		snprintf(offs, sizeof(offs), "+0x%llx",
			 (unsigned long long)(p->m.vaddr - p->m.func_vaddr));
	snprintf(buf, len, "%s%s%s%s", l->many_files ? (base ? base + 1 : p->m.path) : "",
		 l->many_files ? ":" : "", p->func[0] ? p->func : p->event, offs);
	return buf;
}

/* A time in the unit: whole nanoseconds, else two decimals (a call of
 * 400 ns is not "0 usecs"). */
static void put_time(FILE *f, uint64_t ns, const struct unit *u)
{
	if (u->ns == 1)
		fprintf(f, "%llu", (unsigned long long)ns);
	else
		fprintf(f, "%.2f", (double)ns / u->ns);
}

static double average(const struct np_hist *h, const struct unit *u)
{
	return h->count ? (double)h->sum / (double)h->count / u->ns : 0;
}

static void print_text(const struct latency *l, const struct lrow *r)
{
	const struct np_hist *h = &r->h;
	FILE *out = l->out;
	char name[SPEC_SYM_MAX + 600];
	int first = -1, last = -1;
	uint64_t top = 0;
	for (int b = 0; b < NP_HIST_BUCKETS; b++)
		if (h->bucket[b]) {
			first = first < 0 ? b : first;
			last = b;
			top = h->bucket[b] > top ? h->bucket[b] : top;
		}
	if (r->p)
		fprintf(out, "@%s[%s]:\n", l->unit->name, probe_name(l, r->p, name, sizeof(name)));
	else
		fprintf(out, "@%s:\n", l->unit->name);
	for (int b = first; b >= 0 && b <= last; b++) {
		char label[48], bar[BAR + 1];
		size_t n = (size_t)(h->bucket[b] * BAR / top);
		memset(bar, '@', n);
		memset(bar + n, ' ', BAR - n);
		bar[BAR] = 0;
		bucket_label((unsigned)b, label, sizeof(label));
		fprintf(out, "%-20s %8llu |%s|\n", label, (unsigned long long)h->bucket[b], bar);
	}
	if (!h->count)
		fprintf(out, "(no calls)\n");
	fprintf(out, "\ncount %llu, average %.2f %s", (unsigned long long)h->count,
		average(h, l->unit), l->unit->name);
	/* the threads' minimum and maximum are since the start: not an interval's */
	if (!l->intervals) {
		fputs(", min ", out);
		put_time(out, h->min, l->unit);
		fprintf(out, " %s, max ", l->unit->name);
		put_time(out, h->max, l->unit);
		fprintf(out, " %s", l->unit->name);
	}
	fputs(", total ", out);
	put_time(out, h->sum, l->unit);
	fprintf(out, " %s\n", l->unit->name);
}

/* bpftrace -f json: {"type": "hist", "data": {"@usecs": [{"min":..,"max":..,"count":..}]}},
 * with the probe it is of (none when merged) and the interval's time. */
static void json_head(const struct latency *l, const struct lrow *r, const char *type,
		      const char *stamp)
{
	char name[SPEC_SYM_MAX + 600];
	fprintf(l->out, "{\"type\":\"%s\"", type);
	if (r->p) {
		fputs(",\"probe\":", l->out);
		quote_json(l->out, probe_name(l, r->p, name, sizeof(name)));
		fputs(",\"func\":", l->out);
		quote_json(l->out, r->p->func[0] ? r->p->func : r->p->event);
		fputs(",\"path\":", l->out);
		quote_json(l->out, r->p->m.path);
	}
	if (stamp)
		fprintf(l->out, ",\"time\":\"%s\"", stamp);
	fprintf(l->out, ",\"clock\":\"%s\"", session_clock_name());
}

static void print_json(const struct latency *l, const struct lrow *r, const char *stamp)
{
	const struct np_hist *h = &r->h;
	const struct unit *u = l->unit;
	bool any = false;
	json_head(l, r, "hist", stamp);
	fprintf(l->out, ",\"data\":{\"@%s\":[", u->name);
	for (unsigned b = 0; b < NP_HIST_BUCKETS; b++) {
		if (!h->bucket[b])
			continue;
		uint64_t lo = b < 2 ? b : 1ull << (b - 1), hi = b < 2 ? b : (1ull << b) - 1;
		fprintf(l->out, "%s{\"min\":%llu,\"max\":%llu,\"count\":%llu}", any ? "," : "",
			(unsigned long long)lo, (unsigned long long)hi,
			(unsigned long long)h->bucket[b]);
		any = true;
	}
	fputs("]}}\n", l->out);
	json_head(l, r, "stats", stamp);
	fprintf(l->out, ",\"data\":{\"unit\":\"%s\",\"count\":%llu,\"average\":%.3f", u->name,
		(unsigned long long)h->count, average(h, u));
	if (!l->intervals)
		fprintf(l->out, ",\"min\":%llu,\"max\":%llu", (unsigned long long)(h->min / u->ns),
			(unsigned long long)(h->max / u->ns));
	fprintf(l->out, ",\"total\":%llu}}\n", (unsigned long long)(h->sum / u->ns));
}

static int by_total(const void *a, const void *b)
{
	const struct lrow *x = a, *y = b;
	if (x->h.sum != y->h.sum)
		return x->h.sum < y->h.sum ? -1 : 1; /* the most time last, as count's busiest */
	return strcmp(x->p->event, y->p->event);
}

static void hist_add(struct np_hist *to, const struct np_hist *h)
{
	if (!h->count)
		return;
	if (!to->count || h->min < to->min)
		to->min = h->min;
	if (h->max > to->max)
		to->max = h->max;
	to->count += h->count;
	to->sum += h->sum;
	for (unsigned i = 0; i < NP_HIST_BUCKETS; i++)
		to->bucket[i] += h->bucket[i];
}

/* Since the previous interval: buckets, count and sum subtract; the
 * minimum and maximum do not (they are not printed for intervals). */
static void hist_since(struct np_hist *h, struct np_hist *last)
{
	struct np_hist now = *h;
	h->count -= last->count;
	h->sum -= last->sum;
	for (unsigned i = 0; i < NP_HIST_BUCKETS; i++)
		h->bucket[i] -= last->bucket[i];
	*last = now;
}

static void report(struct latency *l, const struct totals *t, const char *stamp)
{
	size_t n = l->set->n, shown = 0;
	struct lrow *rows = calloc(n + 1, sizeof(*rows));
	if (!rows || !t->hists)
		return free(rows);
	for (size_t i = 0; i < n; i++) {
		rows[i].p = &l->set->p[i];
		rows[i].h = t->hists[i];
		if (l->last)
			hist_since(&rows[i].h, &l->last[i]);
	}
	if (l->merge || n == 1) { /* one histogram, as before there was a choice */
		struct lrow all = {NULL, {0}};
		for (size_t i = 0; i < n; i++)
			hist_add(&all.h, &rows[i].h);
		all.p = n == 1 && !l->merge ? rows[0].p : NULL;
		rows[0] = all;
		n = shown = 1;
	} else {
		qsort(rows, n, sizeof(*rows), by_total);
		for (size_t i = 0; i < n; i++) /* text: a function never called is left out */
			shown += rows[i].h.count != 0 || l->json;
		shown = l->top && l->top < shown ? l->top : shown;
	}
	if (stamp && !l->json)
		fprintf(l->out, "\n[%s]\n", stamp);
	for (size_t i = n - shown; i < n; i++) {
		if (l->json) {
			print_json(l, &rows[i], stamp);
			continue;
		}
		if (i > n - shown)
			fputc('\n', l->out);
		if (n == 1 && rows[i].p) /* a single function: @usecs:, as bpftrace's own */
			rows[i].p = NULL;
		print_text(l, &rows[i]);
	}
	free(rows);
	fflush(l->out);
}

static void on_interval(const struct totals *t, void *cookie)
{
	char stamp[32];
	stamp_now(stamp, sizeof(stamp));
	report(cookie, t, stamp);
}

static int latency_option(int opt, const char *arg, struct session_opts *o, void *cookie)
{
	struct latency *l = cookie;
	if (opt == 'u')
		l->unit = &units[1];
	else if (opt == 'm')
		l->unit = &units[2];
	else if (opt == OPT_MERGE)
		l->merge = true;
	else
		return -1;
	o->hist_unit = l->unit->ns;
	return 0;
}

static bool several_files(const struct probe_set *set)
{
	for (size_t i = 1; i < set->n; i++)
		if (set->p[i].m.ino != set->p[0].m.ino || set->p[i].m.dev != set->p[0].m.dev)
			return true;
	return false;
}

static int latency_prepare(struct session_opts *o, struct probe_set *set, void *cookie)
{
	struct latency *l = cookie;
	l->set = set;
	l->out = o->out;
	l->json = o->json;
	l->top = o->top;
	l->intervals = o->interval > 0;
	l->many_files = several_files(set);
	if (l->intervals && !(l->last = calloc(set->n ? set->n : 1, sizeof(*l->last))))
		return 1;
	return 0;
}

static void latency_results(const struct session_opts *o, const struct totals *t, void *cookie)
{
	if (o->interval > 0)
		on_interval(t, cookie); /* the last interval, up to the end */
	else
		report(cookie, t, NULL);
}

static void latency_cleanup(void *cookie)
{
	free(((struct latency *)cookie)->last);
}

static const struct cli_opt latency_own[] = {
	{'u', "microseconds", NULL, "histograms in microseconds (default: nanoseconds)"},
	{'m', "milliseconds", NULL, "histograms in milliseconds"},
	{OPT_MERGE, "merge", NULL, "one histogram for every probe, not one each"},
	{'i', "interval", "SECONDS", "print (and restart) the histograms every SECONDS"},
	{'n', "top", "N", "only the N functions that took the most time"},
	{0},
};
static const struct cli_opt *const latency_opts[] = {
	session_opts_common, session_opts_strategy, session_opts_follow, latency_own, NULL};

int cmd_latency(int argc, char **argv)
{
	static const struct verb verb = {
		.name = "latency", .action = NP_ACT_LATENCY, .banner = true, .clock = true,
		.follows = true,
		.opts = latency_opts,
		.option = latency_option, .prepare = latency_prepare, .on_interval = on_interval,
		.results = latency_results, .cleanup = latency_cleanup,
	};
	struct latency l = {.unit = &units[0]};
	return session_verb_main(&verb, &l, argc, argv);
}

const struct cli_verb verb_latency = {
	"latency", cmd_latency, "latency [OPTIONS] SPEC... {-p PID | -- CMD [ARGS...]}",
	"entry-to-return time per function, as power-of-two histograms",
	"SPEC: [PATH:]FUNCTION-OR-GLOB, e.g. checkout or 'c:mem*'\n", latency_opts,
};

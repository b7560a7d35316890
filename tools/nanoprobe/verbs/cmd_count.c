/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe count: calls per function, like bcc's funccount. Each hit is
 * one increment in the calling thread's own counter; nothing else crosses
 * from the program to us until the end (or each -i interval).
 *
 *   FUNC                                        COUNT
 *   free                                          120
 *   malloc                                        123
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "output/quote.h"
#include "output/stamp.h"
#include "session/session.h"

struct count {
	const struct probe_set *set;
	uint64_t *last, *last_missed; /* totals at the previous interval */
	FILE *out;
	bool json, many_files;
	unsigned top;
};

struct row {
	const struct rprobe *p;
	uint64_t n, missed;
};

static int by_count(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1; /* funccount: the busiest last */
	return strcmp(x->p->event, y->p->event);
}

static const char *func_name(const struct rprobe *p)
{
	return p->func[0] ? p->func : p->event;
}

/* What the row counts: the function, or "func+0x3" for a probe inside it
 * and "func%return" for its returns, so that several probes on one
 * function stay apart. */
static const char *probe_name(const struct rprobe *p, char *buf, size_t len)
{
	char offs[32] = "";
	if (p->m.func_vaddr && p->m.vaddr != p->m.func_vaddr)
		snprintf(offs, sizeof(offs), "+0x%llx",
			 (unsigned long long)(p->m.vaddr - p->m.func_vaddr));
	snprintf(buf, len, "%s%s%s", func_name(p), offs, p->m.is_return ? "%return" : "");
	return buf;
}

/* Text: the probe, prefixed with its file when several files are probed. */
static const char *label(const struct count *c, const struct rprobe *p, char *buf, size_t len)
{
	char name[SPEC_SYM_MAX + 48];
	probe_name(p, name, sizeof(name));
	if (!c->many_files) {
		snprintf(buf, len, "%s", name);
		return buf;
	}
	const char *base = strrchr(p->m.path, '/');
	snprintf(buf, len, "%s:%s", base ? base + 1 : p->m.path, name);
	return buf;
}

static void print_json(const struct count *c, const struct row *rows, size_t n,
		       const char *stamp)
{
	char buf[1024];
	fprintf(c->out, "{\"type\":\"counts\",");
	if (stamp)
		fprintf(c->out, "\"time\":\"%s\",", stamp);
	fprintf(c->out, "\"counts\":[");
	for (size_t i = 0; i < n; i++) {
		fprintf(c->out, "%s{\"func\":", i ? "," : "");
		quote_json(c->out, func_name(rows[i].p));
		fprintf(c->out, ",\"probe\":");
		quote_json(c->out, probe_name(rows[i].p, buf, sizeof(buf)));
		fprintf(c->out, ",\"path\":");
		quote_json(c->out, rows[i].p->m.path);
		/* placed: false for a probe refused or whose file never loaded,
		 * whose count of 0 says nothing */
		fprintf(c->out, ",\"addr\":\"0x%llx\",\"count\":%llu,\"missed\":%llu,"
				"\"placed\":%s}",
			(unsigned long long)rows[i].p->addr, (unsigned long long)rows[i].n,
			(unsigned long long)rows[i].missed, rows[i].p->state == 1 ? "true" : "false");
	}
	fprintf(c->out, "]}\n");
}

/* The name column as wide as its longest name: the counts stay in line. */
static void print_text(const struct count *c, const struct row *rows, size_t n)
{
	char buf[1024];
	int w = 36;
	for (size_t i = 0; i < n; i++)
		if (rows[i].n && (int)strlen(label(c, rows[i].p, buf, sizeof(buf))) > w)
			w = (int)strlen(buf);
	fprintf(c->out, "%-*s %12s\n", w, "FUNC", "COUNT");
	for (size_t i = 0; i < n; i++)
		if (rows[i].n)
			fprintf(c->out, "%-*s %12llu\n", w, label(c, rows[i].p, buf, sizeof(buf)),
				(unsigned long long)rows[i].n);
}

static void print_rows(const struct count *c, struct row *rows, size_t n, const char *stamp)
{
	qsort(rows, n, sizeof(*rows), by_count);
	size_t shown = n;
	if (c->top) { /* -n: the busiest, still in the same order */
		size_t busy = 0;
		for (size_t i = 0; i < n; i++)
			busy += rows[i].n != 0 || c->json;
		shown = busy < c->top ? busy : c->top;
	}
	if (c->json)
		print_json(c, rows + n - shown, shown, stamp);
	else
		print_text(c, rows + n - shown, shown);
}

/* Counts since the last print (all of them the first time). */
static void print_counts(struct count *c, const struct totals *t, const char *stamp)
{
	struct row *rows = calloc(c->set->n ? c->set->n : 1, sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < c->set->n; i++) {
		uint64_t missed = t->missed_by_probe ? t->missed_by_probe[i] : 0;
		rows[i].p = &c->set->p[i];
		rows[i].n = t->counts[i] - c->last[i];
		rows[i].missed = missed - c->last_missed[i];
		c->last[i] = t->counts[i];
		c->last_missed[i] = missed;
	}
	print_rows(c, rows, c->set->n, stamp);
	free(rows);
	fflush(c->out);
}

static void on_interval(const struct totals *t, void *cookie)
{
	struct count *c = cookie;
	char stamp[32];
	stamp_now(stamp, sizeof(stamp));
	if (!c->json)
		fprintf(c->out, "\n[%s]\n", stamp);
	print_counts(c, t, stamp);
}

static bool several_files(const struct probe_set *set)
{
	for (size_t i = 1; i < set->n; i++)
		if (set->p[i].m.ino != set->p[0].m.ino || set->p[i].m.dev != set->p[0].m.dev)
			return true;
	return false;
}

static int count_prepare(struct session_opts *o, struct probe_set *set, void *cookie)
{
	struct count *c = cookie;
	c->set = set;
	c->json = o->json;
	c->out = o->out;
	c->top = o->top;
	c->many_files = several_files(set);
	c->last = calloc(set->n ? set->n : 1, sizeof(uint64_t));
	c->last_missed = calloc(set->n ? set->n : 1, sizeof(uint64_t));
	return c->last && c->last_missed ? 0 : 1;
}

static void count_results(const struct session_opts *o, const struct totals *t, void *cookie)
{
	if (o->interval > 0)
		on_interval(t, cookie); /* the last interval, up to the end */
	else
		print_counts(cookie, t, NULL);
}

static void count_cleanup(void *cookie)
{
	free(((struct count *)cookie)->last);
	free(((struct count *)cookie)->last_missed);
}

static const struct cli_opt count_own[] = {
	{'i', "interval", "SECONDS", "print (and restart) the counts every SECONDS"},
	{'n', "top", "N", "only the N busiest probes"},
	{0},
};
static const struct cli_opt *const count_opts[] = {
	session_opts_common, session_opts_strategy, session_opts_follow, count_own, NULL};

int cmd_count(int argc, char **argv)
{
	static const struct verb verb = {
		.name = "count", .action = NP_ACT_COUNT, .banner = true, .follows = true,
		.opts = count_opts,
		.prepare = count_prepare, .on_interval = on_interval,
		.results = count_results, .cleanup = count_cleanup,
	};
	struct count c = {0};
	return session_verb_main(&verb, &c, argc, argv);
}

const struct cli_verb verb_count = {
	"count", cmd_count, "count [OPTIONS] SPEC... {-p PID | -- CMD [ARGS...]}",
	"calls per probe, as bcc's funccount",
	"SPEC: [PATH:]SYMBOL-OR-GLOB, e.g. 'price_*' or 'c:mem*' (any probe spec works:\n"
	"      see nanoprobe trace --help)\n",
	count_opts,
};

/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe watch: who writes this variable? A hardware watchpoint on
 * every thread of the program (np_watch_attach in the agent), one line
 * per access, shaped like trace's, with the accessing instruction named,
 * then a summary per writer:
 *
 *      threads-4242    [001]  5321.120934: watch:total: (0x55f1c2a011d9) bump+0x19 old=41 new=42
 *   WATCH                  COUNT  BY                                THREADS
 *   total                   3000  bump+0x19                         4243 4244 4245
 *
 * The specs (watch_spec.c) are resolved and checked against what the
 * hardware can watch before the program is started or touched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "inject/inject.h"
#include "output/quote.h"
#include "output/stamp.h"
#include "session/session.h"
#include "symbols/symbolize.h"
#include "watch_spec.h"

#define MAX_TIDS 8 /* listed per writer; the rest are counted */

struct writer {
	uint32_t probe;
	uint64_t pc;
	bool exact;
	uint64_t count;
	uint64_t shown;  /* count at the previous -i report */
	int tids[MAX_TIDS], ntids;
	unsigned more_tids;
	char sym[320];
};

struct watch_cmd {
	const struct probe_set *set;
	FILE *out;
	bool json;
	unsigned top;            /* -n: writers per watch */
	uint64_t *last_hits;     /* -i: each watch's hits at the previous report */
	pid_t pid;
	char main_path[NP_PATH_MAX];
	struct symbolizer *names;
	struct writer *w;
	size_t n, cap, last;
};

/* --- specs --------------------------------------------------------------------- */

static int add_specs(const struct session_opts *o, char **argv, int first, struct probe_set *set,
		     void *cookie)
{
	struct watch_cmd *c = cookie;
	char err[1024];
	if (o->pid && np_inject_check_pid(o->pid, err, sizeof(err)))
		return fprintf(stderr, "nanoprobe watch: %s\n", err), 1;
	struct watch_spec *specs = calloc((size_t)(o->argend - first), sizeof(*specs));
	if (!specs)
		return 1;
	int rc = 0;
	for (int i = first; i < o->argend && !rc; i++)
		if (watch_spec_parse(argv[i], &specs[i - first], err, sizeof(err)))
			rc = 2;
	if (!rc && session_main_path(o, c->main_path, sizeof(c->main_path), err, sizeof(err)))
		rc = 1;
	for (int i = first; i < o->argend && !rc; i++)
		if (watch_spec_resolve(set, &specs[i - first], o->pid, c->main_path, err, sizeof(err)))
			rc = 1;
	free(specs);
	if (rc)
		fprintf(stderr, "nanoprobe watch: %s\n", err);
	return rc;
}

/* --- one line per access --------------------------------------------------------- */

static struct writer *writer_of(struct watch_cmd *c, const struct event *ev, bool exact)
{
	uint32_t id = ev->probe->m.id;
	if (c->last < c->n && c->w[c->last].probe == id && c->w[c->last].pc == ev->pc &&
	    c->w[c->last].exact == exact)
		return &c->w[c->last];
	for (size_t i = 0; i < c->n; i++)
		if (c->w[i].probe == id && c->w[i].pc == ev->pc && c->w[i].exact == exact)
			return &c->w[c->last = i];
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct writer *v = realloc(c->w, cap * sizeof(*v));
		if (!v)
			return NULL;
		c->w = v;
		c->cap = cap;
	}
	struct writer *w = &c->w[c->last = c->n++];
	memset(w, 0, sizeof(*w));
	w->probe = id;
	w->pc = ev->pc;
	w->exact = exact;
	symbolize(c->names, ev->pc, w->sym, sizeof(w->sym));
	return w;
}

static void note_tid(struct writer *w, int tid)
{
	for (int i = 0; i < w->ntids; i++)
		if (w->tids[i] == tid)
			return;
	if (w->ntids < MAX_TIDS)
		w->tids[w->ntids++] = tid;
	else
		w->more_tids++; /* an upper bound: those are not remembered */
}

static void values_text(FILE *f, const struct event *ev)
{
	const struct rprobe *p = ev->probe;
	if (!p->m.nargs)
		return;
	if (ev->fault_mask) {
		fputs(" value=(fault)", f);
		return;
	}
	if (p->m.watch_type == NP_WATCH_RW && !(ev->flags & NP_WATCH_HIT_CHANGED))
		fprintf(f, " value=%llu", (unsigned long long)ev->arg[1].num);
	else
		fprintf(f, " old=%llu new=%llu", (unsigned long long)ev->arg[0].num,
			(unsigned long long)ev->arg[1].num);
}

static void print_text(FILE *f, const struct event *ev, const char *comm, const struct writer *w)
{
	fprintf(f, "%16s-%-7d [%03u] %6llu.%06llu: watch:%s: (%s0x%llx) %s", comm, ev->tid, ev->cpu,
		(unsigned long long)(ev->ts / 1000000000u),
		(unsigned long long)(ev->ts % 1000000000u / 1000), ev->probe->event,
		w->exact ? "" : "after ", (unsigned long long)ev->pc, w->sym);
	values_text(f, ev);
	fputc('\n', f);
}

/* {"type":"access","data":{...}}: the object -j printed before every line
 * had a "type" (its own "type" is the watch's: w, rw, x) */
static void print_json(FILE *f, const struct event *ev, const char *comm, const struct writer *w)
{
	const struct rprobe *p = ev->probe;
	fputs("{\"type\":\"access\",\"data\":{\"task\":", f);
	quote_json(f, comm);
	fprintf(f, ",\"pid\":%d,\"tid\":%d,\"cpu\":%u,\"ts\":%llu.%06llu,\"group\":\"watch\","
		   "\"event\":", (int)session_pid(), ev->tid, ev->cpu,
		(unsigned long long)(ev->ts / 1000000000u),
		(unsigned long long)(ev->ts % 1000000000u / 1000));
	quote_json(f, p->event);
	fprintf(f, ",\"addr\":\"0x%llx\",\"type\":\"%s\",\"pc\":\"0x%llx\",\"exact\":%s,\"sym\":",
		(unsigned long long)p->addr, watch_type_name(p->m.watch_type),
		(unsigned long long)ev->pc, w->exact ? "true" : "false");
	quote_json(f, w->sym);
	if (p->m.nargs && ev->fault_mask)
		fputs(",\"old\":null,\"new\":null", f);
	else if (p->m.nargs)
		fprintf(f, ",\"old\":%llu,\"new\":%llu,\"changed\":%s",
			(unsigned long long)ev->arg[0].num, (unsigned long long)ev->arg[1].num,
			ev->flags & NP_WATCH_HIT_CHANGED ? "true" : "false");
	fputs("}}\n", f);
}

static void on_event(const struct event *ev, void *cookie)
{
	struct watch_cmd *c = cookie;
	const char *comm = session_comm(ev->tid, ev->comm);
	struct writer *w = writer_of(c, ev, ev->flags & NP_WATCH_HIT_PC_EXACT);
	if (!w)
		return;
	w->count++;
	note_tid(w, ev->tid);
	if (c->json)
		print_json(c->out, ev, comm, w);
	else
		print_text(c->out, ev, comm, w);
}

/* --- the summary ------------------------------------------------------------------- */

/* What a report shows of writer w: its accesses since the last report. */
static uint64_t fresh(const struct writer *w)
{
	return w->count - w->shown;
}

static int by_watch_then_count(const void *a, const void *b)
{
	const struct writer *x = a, *y = b;
	if (x->probe != y->probe)
		return x->probe < y->probe ? -1 : 1;
	return (fresh(x) < fresh(y)) - (fresh(x) > fresh(y));
}

/* Whether writer i is among the -n busiest of its watch (sorted). */
static bool in_top(const struct watch_cmd *c, size_t i)
{
	unsigned rank = 0;
	if (!c->top)
		return true;
	for (size_t k = 0; k < i; k++)
		rank += c->w[k].probe == c->w[i].probe && fresh(&c->w[k]);
	return rank < c->top;
}

static void by_text(const struct writer *w, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", w->exact ? "" : "after ", w->sym);
}

/* The columns as wide as their longest entry, so that they stay in line. */
static void summary_text(const struct watch_cmd *c, const uint64_t *hits)
{
	FILE *f = c->out;
	char by[400];
	int ww = 24, wb = 40;
	for (size_t p = 0; p < c->set->n; p++)
		if ((int)strlen(c->set->p[p].event) > ww)
			ww = (int)strlen(c->set->p[p].event);
	for (size_t i = 0; i < c->n; i++) {
		by_text(&c->w[i], by, sizeof(by));
		wb = (int)strlen(by) > wb ? (int)strlen(by) : wb;
	}
	fprintf(f, "\n%-*s %10s  %-*s %s\n", ww, "WATCH", "COUNT", wb, "BY", "THREADS");
	for (size_t p = 0; p < c->set->n; p++) {
		const struct rprobe *r = &c->set->p[p];
		bool any = false;
		for (size_t i = 0; i < c->n; i++) {
			const struct writer *w = &c->w[i];
			if (w->probe != p || !fresh(w) || !in_top(c, i))
				continue;
			any = true;
			by_text(w, by, sizeof(by));
			fprintf(f, "%-*s %10llu  %-*s ", ww, r->event, (unsigned long long)fresh(w),
				wb, by);
			for (int k = 0; k < w->ntids; k++)
				fprintf(f, "%s%d", k ? " " : "", w->tids[k]);
			if (w->more_tids)
				fprintf(f, " +%u", w->more_tids);
			fputc('\n', f);
		}
		if (!any)
			fprintf(f, "%-*s %10llu  %s\n", ww, r->event, (unsigned long long)hits[p],
				r->state == 1 ? "-" : "(not placed)");
	}
}

static void summary_json(const struct watch_cmd *c, const uint64_t *hits, const uint64_t *missed,
			 const char *stamp)
{
	FILE *f = c->out;
	bool first = true;
	fputs("{\"type\":\"summary\",", f);
	if (stamp)
		fprintf(f, "\"time\":\"%s\",", stamp);
	fputs("\"watches\":[", f);
	for (size_t p = 0; p < c->set->n; p++) {
		const struct rprobe *r = &c->set->p[p];
		fputs(p ? ",{\"watch\":" : "{\"watch\":", f);
		quote_json(f, r->event);
		fprintf(f, ",\"addr\":\"0x%llx\",\"len\":%u,\"type\":\"%s\",\"placed\":%s,"
			   "\"hits\":%llu,\"missed\":%llu}", (unsigned long long)r->addr,
			r->m.watch_len, watch_type_name(r->m.watch_type),
			r->state == 1 ? "true" : "false", (unsigned long long)hits[p],
			(unsigned long long)(missed ? missed[p] : 0));
	}
	fputs("],\"writers\":[", f);
	for (size_t i = 0; i < c->n; i++) {
		const struct writer *w = &c->w[i];
		if (!fresh(w) || !in_top(c, i))
			continue;
		fputs(first ? "{\"watch\":" : ",{\"watch\":", f);
		first = false;
		quote_json(f, c->set->p[w->probe].event);
		fprintf(f, ",\"pc\":\"0x%llx\",\"exact\":%s,\"sym\":", (unsigned long long)w->pc,
			w->exact ? "true" : "false");
		quote_json(f, w->sym);
		fprintf(f, ",\"count\":%llu,\"tids\":[", (unsigned long long)fresh(w));
		for (int k = 0; k < w->ntids; k++)
			fprintf(f, "%s%d", k ? "," : "", w->tids[k]);
		fprintf(f, "],\"more_tids\":%u}", w->more_tids);
	}
	fputs("]}\n", f);
}

/* A summary: of the whole session, or (-i) of the interval since the last. */
static void summary(struct watch_cmd *c, const struct totals *t, const char *stamp)
{
	uint64_t *hits = calloc(c->set->n + 1, sizeof(*hits));
	if (!hits)
		return;
	for (size_t p = 0; p < c->set->n; p++) {
		hits[p] = t->counts[p] - (c->last_hits ? c->last_hits[p] : 0);
		if (c->last_hits)
			c->last_hits[p] = t->counts[p];
	}
	qsort(c->w, c->n, sizeof(*c->w), by_watch_then_count);
	c->last = c->n;
	if (stamp && !c->json)
		fprintf(c->out, "\n[%s]", stamp);
	if (c->json)
		summary_json(c, hits, c->last_hits ? NULL : t->missed_by_probe, stamp);
	else
		summary_text(c, hits);
	for (size_t i = 0; i < c->n; i++)
		c->w[i].shown = c->w[i].count;
	free(hits);
	fflush(c->out);
}

static void on_interval(const struct totals *t, void *cookie)
{
	char stamp[32];
	stamp_now(stamp, sizeof(stamp));
	summary(cookie, t, stamp);
}

static void results(const struct session_opts *o, const struct totals *t, void *cookie)
{
	if (o->interval > 0)
		on_interval(t, cookie); /* the last interval, up to the end */
	else
		summary(cookie, t, NULL);
}

/* --- the verb ------------------------------------------------------------------------ */

static int prepare(struct session_opts *o, struct probe_set *set, void *cookie)
{
	struct watch_cmd *c = cookie;
	c->set = set;
	c->out = o->out;
	c->json = o->json;
	c->top = o->top;
	c->pid = o->pid;
	if (o->interval > 0 && !(c->last_hits = calloc(set->n + 1, sizeof(uint64_t))))
		return 1;
	if (!o->json) {
		fprintf(stderr, "Watching");
		for (size_t i = 0; i < set->n; i++)
			if (set->p[i].m.watch_type == NP_WATCH_EXEC)
				fprintf(stderr, "%s %s (x)", i ? "," : "", set->p[i].event);
			else
				fprintf(stderr, "%s %s (%u bytes, %s)", i ? "," : "",
					set->p[i].event, set->p[i].m.watch_len,
					watch_type_name(set->p[i].m.watch_type));
		fprintf(stderr, "... Hit Ctrl-C to end.\n");
	}
	return 0;
}

/* The names need the process's mappings: read while it is there (a
 * program started with -- may be gone, its maps with it, by the time its
 * last events are read). */
static void on_ready(void *cookie)
{
	struct watch_cmd *c = cookie;
	if (!c->names)
		c->names = symbolizer_new(session_pid(), c->main_path);
	if (c->names)
		symbolizer_refresh(c->names);
}

static void on_event_named(const struct event *ev, void *cookie)
{
	struct watch_cmd *c = cookie;
	if (!c->names)
		on_ready(cookie);
	if (c->names)
		on_event(ev, cookie);
}

static void cleanup(void *cookie)
{
	struct watch_cmd *c = cookie;
	symbolizer_free(c->names);
	free(c->w);
	free(c->last_hits);
}

static const struct cli_opt watch_own[] = {
	{'i', "interval", "SECONDS", "print the summary of each interval of SECONDS"},
	{'n', "top", "N", "in a summary, only the N busiest writers of each watch"},
	{0},
};
static const struct cli_opt *const watch_opts[] = {session_opts_common, watch_own, NULL};

int cmd_watch(int argc, char **argv)
{
	static const struct verb verb = {
		.name = "watch", .action = NP_ACT_WATCH, .opts = watch_opts, .add_specs = add_specs,
		.prepare = prepare, .on_event = on_event_named, .on_interval = on_interval,
		.results = results, .on_ready = on_ready, .cleanup = cleanup,
	};
	struct watch_cmd c = {0};
	return session_verb_main(&verb, &c, argc, argv);
}

const struct cli_verb verb_watch = {
	"watch", cmd_watch, "watch [OPTIONS] SPEC... {-p PID | -- CMD [ARGS...]}",
	"every access to a variable (hardware watchpoints): who, where, values",
	"SPEC: [PATH:]SYMBOL[+OFFS][:LEN][:w|rw|x]   a variable (a function, for x)\n"
	"      0xADDR[:LEN][:w|rw|x]                 an address in the process\n",
	watch_opts,
};

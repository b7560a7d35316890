/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe count: calls per function, like bcc's funccount. Each hit is
 * one increment in the calling thread's own counter; nothing else crosses
 * from the program to us until the end (or each -i interval).
 *
 *   FUNC                                    COUNT
 *   free                                      120
 *   malloc                                    123
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "quote.h"
#include "session.h"

struct count {
	const struct probe_set *set;
	uint64_t *last; /* totals at the previous interval */
	bool json, many_files;
};

struct row {
	const struct rprobe *p;
	uint64_t n;
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

/* Text: the name, prefixed with its file when several files are probed. */
static const char *label(const struct count *c, const struct rprobe *p, char *buf, size_t len)
{
	const char *name = func_name(p);
	if (!c->many_files)
		return name;
	const char *base = strrchr(p->m.path, '/');
	snprintf(buf, len, "%s:%s", base ? base + 1 : p->m.path, name);
	return buf;
}

static void print_rows(const struct count *c, struct row *rows, size_t n, const char *stamp)
{
	char buf[1024];
	qsort(rows, n, sizeof(*rows), by_count);
	if (c->json) {
		printf("{");
		if (stamp)
			printf("\"time\":\"%s\",", stamp);
		printf("\"counts\":[");
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"func\":", i ? "," : "");
			quote_json(stdout, func_name(rows[i].p));
			printf(",\"path\":");
			quote_json(stdout, rows[i].p->m.path);
			printf(",\"addr\":\"0x%llx\",\"count\":%llu}",
			       (unsigned long long)rows[i].p->addr, (unsigned long long)rows[i].n);
		}
		printf("]}\n");
		return;
	}
	printf("%-36s %12s\n", "FUNC", "COUNT");
	for (size_t i = 0; i < n; i++)
		if (rows[i].n)
			printf("%-36s %12llu\n", label(c, rows[i].p, buf, sizeof(buf)),
			       (unsigned long long)rows[i].n);
}

/* Counts since the last print (all of them the first time). */
static void print_counts(struct count *c, const uint64_t *now, const char *stamp)
{
	struct row *rows = calloc(c->set->n ? c->set->n : 1, sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < c->set->n; i++) {
		rows[i].p = &c->set->p[i];
		rows[i].n = now[i] - c->last[i];
		c->last[i] = now[i];
	}
	print_rows(c, rows, c->set->n, stamp);
	free(rows);
	fflush(stdout);
}

static void on_interval(const struct totals *t, void *cookie)
{
	struct count *c = cookie;
	time_t now = time(NULL);
	char stamp[16];
	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
	if (!c->json)
		printf("\n[%s]\n", stamp);
	print_counts(c, t->counts, stamp);
}

static bool several_files(const struct probe_set *set)
{
	for (size_t i = 1; i < set->n; i++)
		if (set->p[i].m.ino != set->p[0].m.ino || set->p[i].m.dev != set->p[0].m.dev)
			return true;
	return false;
}

static int count_option(int opt, const char *arg, struct session_opts *o, void *cookie)
{
	char *end;
	if (opt != 'i')
		return -1;
	o->interval = strtod(arg, &end);
	if (*end || o->interval <= 0) {
		fprintf(stderr, "nanoprobe count: -i wants a number of seconds > 0, not '%s'\n", arg);
		return -1;
	}
	return 0;
}

static int count_prepare(struct session_opts *o, struct probe_set *set, void *cookie)
{
	struct count *c = cookie;
	c->set = set;
	c->json = o->json;
	c->many_files = several_files(set);
	c->last = calloc(set->n ? set->n : 1, sizeof(uint64_t));
	return c->last ? 0 : 1;
}

static void count_results(const struct session_opts *o, const struct totals *t, void *cookie)
{
	if (o->interval > 0)
		on_interval(t, cookie); /* the last interval, up to the end */
	else
		print_counts(cookie, t->counts, NULL);
}

static void count_cleanup(void *cookie)
{
	free(((struct count *)cookie)->last);
}

int cmd_count(int argc, char **argv)
{
	static const struct verb verb = {
		.name = "count", .action = NP_ACT_COUNT, .banner = true, .short_opts = "i:",
		.option = count_option, .prepare = count_prepare, .on_interval = on_interval,
		.results = count_results, .cleanup = count_cleanup,
	};
	struct count c = {0};
	return session_verb_main(&verb, &c, argc, argv);
}

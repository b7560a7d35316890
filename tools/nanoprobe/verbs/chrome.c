/* SPDX-License-Identifier: MIT */
#include "chrome.h"

#include "output/output.h"
#include "output/quote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 4096

struct chrome {
	FILE *f;
	unsigned long long events;
	unsigned nthreads;
	struct {
		int tid;
		char comm[20];
	} threads[MAX_THREADS];
};

struct chrome *chrome_open(const char *path)
{
	char name[4200];
	struct chrome *c = calloc(1, sizeof(*c));
	snprintf(name, sizeof(name), "--export-trace %s", path);
	if (c && !(c->f = output_open(path, name))) {
		int err = errno;
		free(c);
		errno = err;
		return NULL;
	}
	if (c)
		fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", c->f);
	return c;
}

static void remember_thread(struct chrome *c, int tid, const char *comm)
{
	for (unsigned i = 0; i < c->nthreads; i++)
		if (c->threads[i].tid == tid)
			return;
	if (c->nthreads == MAX_THREADS)
		return;
	c->threads[c->nthreads].tid = tid;
	snprintf(c->threads[c->nthreads++].comm, sizeof(c->threads[0].comm), "%s", comm);
}

/* Microseconds with the nanoseconds kept, as trace-event timestamps are. */
static void put_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

void chrome_event(struct chrome *c, const struct event *ev, const char *comm)
{
	const struct rprobe *p = ev->probe;
	bool span = p->m.is_return && ev->entry_ts && ev->entry_ts <= ev->ts;
	remember_thread(c, ev->tid, comm);
	fputs(c->events++ ? ",\n{\"name\":" : "{\"name\":", c->f);
	quote_json(c->f, p->func[0] ? p->func : p->event);
	fputs(",\"cat\":", c->f);
	quote_json(c->f, p->group);
	fprintf(c->f, ",\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":", span ? "X" : "i",
		(int)session_pid(), ev->tid);
	put_us(c->f, span ? ev->entry_ts : ev->ts);
	if (span) {
		fputs(",\"dur\":", c->f);
		put_us(c->f, ev->ts - ev->entry_ts);
	} else {
		fputs(",\"s\":\"t\"", c->f);
	}
	fputs(",\"args\":{\"event\":", c->f);
	quote_json(c->f, p->event);
	for (unsigned i = 0; i < p->m.nargs; i++) {
		fputc(',', c->f);
		quote_json(c->f, p->m.args[i].name);
		fputc(':', c->f);
		trace_value(c->f, ev, i, true);
	}
	fputs("}}", c->f);
}

void chrome_close(struct chrome *c, pid_t pid)
{
	for (unsigned i = 0; i < c->nthreads; i++) {
		fprintf(c->f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
			      "\"args\":{\"name\":",
			c->events++ ? ",\n" : "", (int)pid, c->threads[i].tid);
		quote_json(c->f, c->threads[i].comm);
		fputs("}}", c->f);
	}
	fputs("\n]}\n", c->f);
	output_close(c->f); /* an error is reported with the others (output.h) */
	free(c);
}

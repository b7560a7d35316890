/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe trace: one line per hit, as the kernel's trace buffer prints
 * uprobe events, or JSON lines (-j), optionally a Chrome trace file.
 *
 *          demo-4242    [001]  1234.567890: probe_demo:parse: (0x401136) len=12
 *          demo-4242    [001]  1234.567912: probe_demo:parse__return: (0x4011a0 <- 0x401136) arg1=0x0
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chrome.h"
#include "commands.h"
#include "quote.h"
#include "session.h"

struct trace {
	FILE *out;
	bool json;
	struct chrome *chrome;
	uint64_t events;
};

enum { OPT_EXPORT = 2000 };

/* A value as the kernel prints its type; (fault) / null when unreadable. */
void trace_value(FILE *f, const struct event *ev, unsigned i, bool json)
{
	const struct np_fetch *a = &ev->probe->m.args[i];
	if (ev->fault_mask & (1u << i))
		fputs(json ? "null" : "(fault)", f);
	else if (a->type == NP_FT_STRING)
		quote_bytes(f, ev->arg[i].str, ev->arg[i].len, json);
	else if (a->type == NP_FT_U)
		fprintf(f, "%llu", (unsigned long long)ev->arg[i].num);
	else if (a->type == NP_FT_S)
		fprintf(f, "%lld", (long long)ev->arg[i].num);
	else
		fprintf(f, json ? "\"0x%llx\"" : "0x%llx", (unsigned long long)ev->arg[i].num);
}

/* "args":{"name":value,...} */
static void args_json(FILE *f, const struct event *ev)
{
	const struct rprobe *p = ev->probe;
	fputs("\"args\":{", f);
	for (unsigned i = 0; i < p->m.nargs; i++) {
		fputs(i ? "," : "", f);
		quote_json(f, p->m.args[i].name);
		fputc(':', f);
		trace_value(f, ev, i, true);
	}
	fputc('}', f);
}

static void print_text(FILE *f, const struct event *ev, const char *comm)
{
	const struct rprobe *p = ev->probe;
	fprintf(f, "%16s-%-7d [%03u] %6llu.%06llu: %s:%s: ", comm, ev->tid, ev->cpu,
		(unsigned long long)(ev->ts / 1000000000u),
		(unsigned long long)(ev->ts % 1000000000u / 1000), p->group, p->event);
	if (p->m.is_return)
		fprintf(f, "(0x%llx <- 0x%llx)", (unsigned long long)ev->pc,
			(unsigned long long)ev->func);
	else
		fprintf(f, "(0x%llx)", (unsigned long long)ev->pc);
	for (unsigned i = 0; i < p->m.nargs; i++) {
		fprintf(f, " %s=", p->m.args[i].name);
		trace_value(f, ev, i, false);
	}
	fputc('\n', f);
}

static void print_json(FILE *f, const struct event *ev, const char *comm)
{
	const struct rprobe *p = ev->probe;
	fputs("{\"task\":", f);
	quote_json(f, comm);
	fprintf(f, ",\"pid\":%d,\"tid\":%d,\"cpu\":%u,\"ts\":%llu.%06llu,\"group\":",
		(int)session_pid(), ev->tid, ev->cpu, (unsigned long long)(ev->ts / 1000000000u),
		(unsigned long long)(ev->ts % 1000000000u / 1000));
	quote_json(f, p->group);
	fputs(",\"event\":", f);
	quote_json(f, p->event);
	fputc(',', f);
	if (p->m.is_return)
		fprintf(f, "\"ret\":\"0x%llx\",\"func\":\"0x%llx\",", (unsigned long long)ev->pc,
			(unsigned long long)ev->func);
	else
		fprintf(f, "\"addr\":\"0x%llx\",", (unsigned long long)ev->pc);
	args_json(f, ev);
	fputs("}\n", f);
}

static void on_event(const struct event *ev, void *cookie)
{
	struct trace *t = cookie;
	const char *comm = session_comm(ev->tid, ev->comm);
	t->events++;
	if (t->json)
		print_json(t->out, ev, comm);
	else
		print_text(t->out, ev, comm);
	if (t->chrome)
		chrome_event(t->chrome, ev, comm);
}

struct trace_args {
	const char *out_path, *export_path;
};

static int trace_option(int opt, const char *arg, void *cookie)
{
	struct trace_args *a = cookie;
	if (opt == 'o')
		a->out_path = arg;
	else if (opt == OPT_EXPORT)
		a->export_path = arg;
	else
		return -1;
	return 0;
}

static int open_outputs(struct trace *tr, const struct trace_args *a)
{
	tr->out = a->out_path ? fopen(a->out_path, "w") : stdout;
	if (!tr->out) {
		perror(a->out_path);
		return 1;
	}
	if (a->export_path && !(tr->chrome = chrome_open(a->export_path))) {
		perror(a->export_path);
		return 1;
	}
	return 0;
}

int cmd_trace(int argc, char **argv)
{
	static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
					       {"export-trace", required_argument, NULL, OPT_EXPORT},
					       {0}};
	struct session_opts o = {.verb = "trace"};
	struct trace_args a = {0};
	struct trace tr = {0};
	struct probe_set set = {0};
	struct spec *specs = NULL;
	struct totals t;
	int first = session_parse_opts(argc, argv, &o, "o:", longs, trace_option, &a);
	if (first < 0)
		return 2;
	int rc = session_add_specs(&o, argv, first, NP_ACT_EVENT, &set, &specs);
	if (!rc)
		rc = open_outputs(&tr, &a);
	tr.json = o.json;
	if (!rc && !(rc = session_run(&o, &set, &(struct session_ops){on_event, NULL, &tr}, &t))) {
		session_report(&o, &set, &t);
		totals_free(&t);
	}
	if (tr.chrome)
		chrome_close(tr.chrome, session_pid());
	if (tr.out && tr.out != stdout)
		fclose(tr.out);
	fflush(stdout);
	session_finish(&o);
	probe_set_free(&set);
	free(specs);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe trace: one line per hit, as the kernel's trace buffer prints
 * uprobe events, or JSON lines (-j), optionally a Chrome trace file.
 *
 *          demo-4242    [001]  1234.567890: probe_demo:parse: (0x401136) len=12
 *          demo-4242    [001]  1234.567912: probe_demo:parse__return: (0x4011a0 <- 0x401136) arg1=0x0
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chrome.h"
#include "commands.h"
#include "output/quote.h"
#include "session/session.h"

struct trace {
	const char *export_path; /* --export-trace */
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
	fputs("{\"type\":\"event\",\"task\":", f);
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
	fprintf(f, ",\"clock\":\"%s\"}\n", session_clock_name());
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

static int trace_option(int opt, const char *arg, struct session_opts *o, void *cookie)
{
	struct trace *t = cookie;
	if (opt == OPT_EXPORT)
		t->export_path = arg;
	else
		return -1;
	return 0;
}

static int trace_prepare(struct session_opts *o, struct probe_set *set, void *cookie)
{
	struct trace *t = cookie;
	t->json = o->json;
	t->out = o->out;
	if (t->export_path && !(t->chrome = chrome_open(t->export_path))) {
		cli_error("--export-trace %s: %s", t->export_path, strerror(errno));
		return 1;
	}
	return 0;
}

static void trace_cleanup(void *cookie)
{
	struct trace *t = cookie;
	if (t->chrome)
		chrome_close(t->chrome, session_pid());
}

static const struct cli_opt trace_own[] = {
	{OPT_EXPORT, "export-trace", "FILE.json", "also a Chrome trace-event file (Perfetto)"},
	{0},
};
static const struct cli_opt *const trace_opts[] = {
	session_opts_common, session_opts_strategy, session_opts_follow, trace_own, NULL};

int cmd_trace(int argc, char **argv)
{
	static const struct verb verb = {
		.name = "trace", .action = NP_ACT_EVENT, .clock = true, .follows = true,
		.opts = trace_opts,
		.option = trace_option, .prepare = trace_prepare, .on_event = on_event,
		.cleanup = trace_cleanup,
	};
	struct trace t = {0};
	return session_verb_main(&verb, &t, argc, argv);
}

const struct cli_verb verb_trace = {
	"trace", cmd_trace, "trace [OPTIONS] SPEC... {-p PID | -- CMD [ARGS...]}",
	"every hit, as the kernel prints uprobe events (-j: a JSON line each)",
	"SPEC:     [p|r][:[GRP/]EVENT] [PATH:]SYMBOL[+OFFS][%return] [FETCHARG...]\n"
	"          [p|r][:[GRP/]EVENT] [PATH:]0xOFFSET [FETCHARG...]\n"
	"FETCHARG: [NAME=]FETCH[:TYPE]; FETCH: %REG $argN $retval $stack $stackN @ADDR\n"
	"          @SYMBOL[+|-OFFS] @+FILEOFFSET +|-OFFS(FETCH); TYPE: u8..u64 s8..s64\n"
	"          x8..x64 (the default: x64) string\n"
	"PATH:     a file, a program in $PATH, or a library: c, libc, libc.so.6, m...\n",
	trace_opts,
};

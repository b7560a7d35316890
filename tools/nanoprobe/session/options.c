/* SPDX-License-Identifier: MIT */
/*
 * The command line every session verb shares (-p, -d, -j, --strategy,
 * --buffer-kb, specs, then -- CMD), and the specs it names resolved before
 * anything is started or touched.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <nanoprobe/nanoprobe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "inject/inject.h"
#include "launch.h"
#include "output/output.h"
#include "session.h"
#include "symbols/symtab.h"

int session_main_path(const struct session_opts *o, char *out, size_t len, char *err,
		      size_t errlen)
{
	if (o->pid) {
		char link[64];
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)o->pid);
		ssize_t n = readlink(link, out, len - 1);
		if (n <= 0) {
			snprintf(err, errlen, "cannot read %s: %s", link, strerror(errno));
			return -errno;
		}
		out[n] = 0;
		return 0;
	}
	char note[1024];
	int rc = np_resolve_program(o->cmd[0], 0, out, len, note, sizeof(note), err, errlen);
	if (!rc && note[0])
		cli_error("%s", note);
	/* with an agent for another ISA, CMD is the emulator (qemu-user,
	 * often static): the guest's loader does the preloading */
	char agent[PATH_MAX], ignored[256];
	bool emulated = launch_agent_path(agent, sizeof(agent), ignored, sizeof(ignored)) == 0 &&
			launch_agent_foreign(agent);
	if (!rc && !emulated && launch_is_static(out)) {
		snprintf(err, errlen, "%s is statically linked: the agent needs the dynamic "
				      "loader to get in", out);
		rc = -ENOEXEC;
	}
	return rc;
}

/* --- the command line ------------------------------------------------------ */

enum { OPT_STRATEGY = 1000, OPT_BUFFER };

const struct cli_opt session_opts_common[] = {
	{'p', "pid", "PID", "attach to the running process PID (one process)"},
	{'d', "duration", "SECONDS", "stop after SECONDS (fractions allowed)"},
	{'j', "json", NULL, "JSON lines, each an object with a \"type\""},
	{'o', "output", "FILE", "the results to FILE, not stdout"},
	{OPT_BUFFER, "buffer-kb", "N", "event ring per thread in KiB: 4..65536, a power of 2"},
	{0},
};

const struct cli_opt session_opts_strategy[] = {
	{OPT_STRATEGY, "strategy", "S", "place every probe by S: auto, jump or trap"},
	{0},
};

const struct cli_opt session_opts_follow[] = {
	{SESSION_OPT_NO_FOLLOW, "no-follow", NULL,
	 "trace the process alone, not the processes it starts"},
	{0},
};

/* The longest -d or -i: a year, far beyond any session, and far within
 * what the loops' millisecond clocks hold (a uint64_t overflows at 1.8e16 s). */
#define SECONDS_MAX (365.0 * 24 * 3600)

int session_parse_seconds(const char *verb, const char *opt, const char *arg, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	/* the comparison is false for nan; inf and overflow (HUGE_VAL, ERANGE)
	 * are above the bound; underflow to 0 is below it */
	if (errno || end == arg || *end || !(v > 0 && v <= SECONDS_MAX)) {
		fprintf(stderr,
			"nanoprobe %s: %s wants a number of seconds > 0 and at most %.0f, not '%s'\n",
			verb, opt, SECONDS_MAX, arg);
		return -1;
	}
	*out = v;
	return 0;
}

/* -p PID, repeated or as a list (-p 1,2): every process a root of the
 * session's tree (tree.c), for the verbs that take several (run). */
int session_parse_pids(const char *arg, struct session_opts *o)
{
	char *copy = strdup(arg), *save = NULL;
	int rc = copy ? 0 : -1;
	for (char *w = copy ? strtok_r(copy, ",", &save) : NULL; w && !rc;
	     w = strtok_r(NULL, ",", &save)) {
		char *end;
		errno = 0;
		long v = strtol(w, &end, 10);
		if (errno || *end || v <= 0 || v > INT32_MAX) {
			cli_error("-p wants a process id, not '%s'", w);
			rc = -1;
		} else if (o->pid && o->pid != (pid_t)v && !o->many_pids) {
			cli_error("-p %d and %ld: one process per session for nanoprobe %s (run "
				  "takes several; or run one nanoprobe for each)",
				  (int)o->pid, v, o->verb);
			rc = -1;
		} else if (o->npids == SESSION_MAX_PIDS) {
			cli_error("-p: at most %d processes", SESSION_MAX_PIDS);
			rc = -1;
		} else {
			bool seen = false;
			for (size_t i = 0; i < o->npids; i++)
				seen |= o->pids[i] == (pid_t)v;
			if (!seen)
				o->pids[o->npids++] = (pid_t)v;
			o->pid = o->pids[0];
		}
	}
	if (!rc && !o->pid) {
		cli_error("-p wants a process id, not '%s'", arg);
		rc = -1;
	}
	free(copy);
	return rc;
}

static int parse_count(const char *opt, const char *arg, unsigned *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > 1000000) {
		cli_error("%s wants a number in 1..1000000, not '%s'", opt, arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int parse_common(int opt, const char *arg, struct session_opts *o)
{
	char *end;
	long v;
	switch (opt) {
	case 'p': return session_parse_pids(arg, o);
	case 'd': return session_parse_seconds(o->verb, "-d", arg, &o->duration);
	case 'i': return session_parse_seconds(o->verb, "-i", arg, &o->interval);
	case 'n': return parse_count("-n", arg, &o->top);
	case 'j': o->json = true; return 0;
	case SESSION_OPT_NO_FOLLOW: o->follow = false; return 0;
	case 'o': o->out_path = arg; return 0;
	case OPT_STRATEGY:
		for (unsigned s = NP_STRATEGY_AUTO; s <= NP_STRATEGY_TRAP; s++)
			if (!strcmp(arg, np_strategy_name(s)))
				return o->strategy = s, 0;
		fprintf(stderr, "nanoprobe %s: --strategy is auto, jump or trap, not '%s'\n",
			o->verb, arg);
		return -1;
	case OPT_BUFFER:
		v = strtol(arg, &end, 10);
		if (*end || v < 4 || v > 65536 || (v & (v - 1))) {
			fprintf(stderr, "nanoprobe %s: --buffer-kb wants a power of two in 4..65536\n",
				o->verb);
			return -1;
		}
		o->ring_kb = (unsigned)v;
		return 0;
	}
	return 1; /* not a common option */
}

static int split_command(int argc, char **argv, struct session_opts *o)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			o->cmd = i + 1 < argc ? argv + i + 1 : NULL;
			if (!o->cmd) {
				fprintf(stderr, "nanoprobe %s: nothing to run after --\n", o->verb);
				return -1;
			}
			return i;
		}
	return argc;
}

int session_parse_opts(int argc, char **argv, struct session_opts *o,
		       const struct cli_opt *const *opts,
		       int (*extra)(int opt, const char *arg, void *cookie), void *cookie)
{
	struct option longs[32];
	char shortopts[64];
	int end = split_command(argc, argv, o), opt;
	if (end < 0)
		return -1;
	if (cli_getopt_tables(opts, shortopts, sizeof(shortopts), longs, 32))
		return cli_error("internal: too many options"), -1;
	o->argend = end;
	optind = 1;
	/* options may follow the specs (not what follows --) */
	while ((opt = getopt_long(end, argv, shortopts, longs, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return cli_bad_option(opt, argv, opts), -1;
		int rc = parse_common(opt, optarg, o);
		if (rc > 0)
			rc = extra ? extra(opt, optarg, cookie) : -1;
		if (rc)
			return -1;
	}
	if (o->pid && o->cmd) {
		fprintf(stderr, "nanoprobe %s: give -p PID or -- CMD, not both\n", o->verb);
		return -1;
	}
	if (!o->pid && !o->cmd) {
		fprintf(stderr, "nanoprobe %s: say what to trace: -p PID or -- CMD ARGS...\n",
			o->verb);
		return -1;
	}
	return optind < end ? optind : (fprintf(stderr, "nanoprobe %s: no probe given\n", o->verb), -1);
}

int session_add_specs(const struct session_opts *o, char **argv, int first, unsigned action,
		      struct probe_set *set, struct spec **specs)
{
	char err[1024], main_path[NP_PATH_MAX];
	int n = o->argend - first;
	for (size_t i = 0; i < o->npids; i++)
		if (np_inject_check_pid(o->pids[i], err, sizeof(err)))
			return fprintf(stderr, "nanoprobe %s: %s\n", o->verb, err), 1;
	*specs = calloc((size_t)n, sizeof(**specs));
	if (!*specs)
		return 1;
	for (int i = 0; i < n; i++)
		if (spec_parse(argv[first + i], &(*specs)[i], err, sizeof(err)))
			return fprintf(stderr, "nanoprobe %s: %s\n", o->verb, err), 2;
	if (session_main_path(o, main_path, sizeof(main_path), err, sizeof(err)))
		return fprintf(stderr, "nanoprobe %s: %s\n", o->verb, err), 1;
	for (int i = 0; i < n; i++) {
		(*specs)[i].text = argv[first + i];
		size_t before = set->n;
		if (resolve_spec(set, &(*specs)[i], o->pid, main_path, action, err, sizeof(err)))
			return fprintf(stderr, "nanoprobe %s: %s\n", o->verb, err), 1;
		for (size_t k = before; k < set->n; k++)
			set->p[k].m.strategy = (uint8_t)o->strategy;
	}
	if (set->n >= NP_REC_PAD)
		return fprintf(stderr, "nanoprobe %s: %zu probes; at most %d\n", o->verb, set->n,
			       NP_REC_PAD - 1), 1;
	return 0;
}

struct verb_call {
	const struct verb *v;
	struct session_opts *o;
	void *cookie;
};

static int verb_option(int opt, const char *arg, void *cookie)
{
	struct verb_call *c = cookie;
	return c->v->option ? c->v->option(opt, arg, c->o, c->cookie) : -1;
}

static void banner(const struct session_opts *o, const struct probe_set *set, char **argv,
		   int first)
{
	fprintf(stderr, "Tracing %zu function%s for \"%s%s\"... Hit Ctrl-C to end.\n", set->n,
		set->n == 1 ? "" : "s", argv[first], o->argend - first > 1 ? " ..." : "");
}

static int verb_run(const struct verb *v, void *cookie, struct session_opts *o,
		    struct probe_set *set)
{
	struct session_ops ops = {.on_event = v->on_event, .on_interval = v->on_interval,
				  .cookie = cookie, .on_ready = v->on_ready};
	struct totals t;
	int rc = session_run(o, set, &ops, &t);
	if (rc)
		return rc;
	if (v->results)
		v->results(o, &t, cookie);
	output_flush();
	session_report(o, set, &t);
	totals_free(&t);
	return 0;
}

/* -o FILE: opened before the program starts, so a bad path changes
 * nothing; close-on-exec, so the program does not inherit it. */
static int open_output(struct session_opts *o)
{
	char name[NP_PATH_MAX + 8];
	snprintf(name, sizeof(name), o->out_path ? "-o %s" : "stdout", o->out_path);
	o->out = output_open(o->out_path, name);
	if (o->out)
		return 0;
	cli_error("%s: %s", name, strerror(errno));
	return 1;
}

int session_verb_main(const struct verb *v, void *cookie, int argc, char **argv)
{
	struct session_opts o = {.verb = v->name, .show_clock = v->clock, .follow = v->follows};
	struct verb_call call = {v, &o, cookie};
	struct probe_set set = {0};
	struct spec *specs = NULL;
	int first = session_parse_opts(argc, argv, &o, v->opts, verb_option, &call);
	int rc = first < 0	 ? 2
		 : v->add_specs ? v->add_specs(&o, argv, first, &set, cookie)
				: session_add_specs(&o, argv, first, v->action, &set, &specs);
	if (!rc)
		rc = open_output(&o);
	if (!rc && v->prepare)
		rc = v->prepare(&o, &set, cookie);
	if (!rc && v->banner && !o.json)
		banner(&o, &set, argv, first);
	if (!rc)
		rc = verb_run(v, cookie, &o, &set);
	if (v->cleanup)
		v->cleanup(cookie);
	if (o.out)
		output_close(o.out); /* an error is reported below */
	/* as time, strace and perf stat do: a clean session exits with the
	 * status of the program it started */
	int status = first >= 0 ? session_finish(&o) : 0;
	if (!rc)
		rc = status;
	/* results that could not be written: nanoprobe failed, whatever the
	 * program's status (a broken pipe may end nanoprobe here) */
	if (output_exit())
		rc = 1;
	probe_set_free(&set);
	free(specs);
	return rc;
}

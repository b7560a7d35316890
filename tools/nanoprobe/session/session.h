/* SPDX-License-Identifier: MIT */
/*
 * A tracing session, common to trace, count and latency: start the program
 * with the agent preloaded or inject the agent into a running one, hand it
 * the probes, read what the probes leave in shared memory until the program
 * ends, the duration expires or the user interrupts, then remove every
 * probe and let the program go on with its own code.
 */
#ifndef NP_CLI_SESSION_H
#define NP_CLI_SESSION_H
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "symbols/resolve.h"

struct np_vm_prog;

#define SESSION_MAX_PIDS 64

/* What the command line of every session verb shares. */
struct session_opts {
	pid_t pid;           /* -p: the first process */
	pid_t pids[SESSION_MAX_PIDS]; /* -p, every process (run takes several) */
	size_t npids;
	bool many_pids;      /* the verb takes several -p */
	bool follow;         /* the processes the traced ones start are traced too */
	char **cmd;          /* after -- */
	double duration;     /* -d, 0: until the end */
	double interval;     /* -i, 0: none */
	unsigned top;        /* -n: the N first rows, 0: all */
	bool json;           /* -j */
	unsigned strategy;   /* --strategy: enum np_strategy */
	unsigned ring_kb;    /* --buffer-kb: events per thread */
	unsigned hist_unit;  /* latency: ns per bucket unit */
	const char *out_path; /* -o: results there rather than on stdout */
	FILE *out;           /* the results' stream: stdout or out_path */
	const char *verb;    /* for messages */
	int argend;          /* the specs are argv[first..argend) */
	/* run: the program the agent runs (src/agent/vm.h), and rings */
	const struct np_vm_prog *script;
	unsigned nrings;     /* 0: the verb's default */
	bool show_clock;     /* a "Clock:" line on stderr once the agent says (not -j) */
};

/* One decoded event, copied out of shared memory and checked. */
struct event {
	const struct rprobe *probe;
	int tid;
	char comm[16]; /* the thread's name when it first hit a probe */
	unsigned cpu;
	uint64_t ts, pc, func, entry_ts;
	uint32_t fault_mask;
	uint32_t flags; /* the record's reserved word: a watch hit's flags */
	struct {
		uint64_t num;
		const char *str; /* NP_FT_STRING: not NUL-terminated */
		unsigned len;
	} arg[NP_MAX_ARGS];
};

struct totals {
	uint64_t *counts;   /* per probe */
	struct np_hist *hists; /* latency: per probe, else NULL */
	uint64_t drops;     /* events lost to full rings */
	uint64_t no_ring;   /* hits of threads that found no ring */
	uint64_t corrupt;   /* records the command refused to read */
	uint64_t missed;    /* hits the engine could not hand to a handler */
	uint64_t *missed_by_probe; /* the same, per probe */
	uint64_t missed_why[NP_SHM_MISS_REASONS]; /* the same, by reason */
	uint64_t untraced_forks;   /* children forked that were not followed */
	uint64_t vfork_unrecorded; /* hits of vfork children that found no buffer */
};

struct session_ops {
	void (*on_event)(const struct event *ev, void *cookie);
	void (*on_interval)(const struct totals *t, void *cookie); /* -i */
	void *cookie;
	/* the agent has placed the probes; before a started program runs on */
	void (*on_ready)(void *cookie);
	/* run: the shared memory (fd) before on_ready, each record raw instead of
	 * on_event, and a thread's ring before it is recycled */
	void (*on_begin)(int shm_fd, const struct np_msg_hello *h, void *cookie);
	void (*on_record)(const unsigned char *rec, uint32_t len, int tid, const char *comm,
			  void *cookie);
	void (*on_reap)(uint32_t ring, void *cookie);
	/* a process joined the session (a root, a child, an exec'd image),
	 * while it lives: its mappings can be read now */
	void (*on_join)(pid_t pid, void *cookie);
};

/* How the agent read the time stamps (proto.h, np_shm_header.clock), as
 * its last session said, for -j: "tsc", "vdso", or "unknown" (before any
 * session, or when it said something else). */
const char *session_clock_name(void);

/* End the session as -d would (the program's exit() in a script). */
void session_request_stop(void);

/* The options of session verbs (options.c): -p, -d, -j, -o, --buffer-kb;
 * --strategy; --no-follow. Every list ends with {0}. The common handling
 * also covers -i SECONDS and -n N, which the verbs that take them list
 * themselves. */
extern const struct cli_opt session_opts_common[], session_opts_strategy[],
	session_opts_follow[];
#define SESSION_OPT_NO_FOLLOW 3102

/* Parse the options every session verb takes. Returns the index of the
 * first spec (they end at o->argend), or -1 after printing a usage error.
 * `opts` is the verb's option lists, NULL-terminated; `extra` handles what
 * the common handling does not (NULL: nothing else). */
int session_parse_opts(int argc, char **argv, struct session_opts *o,
		       const struct cli_opt *const *opts,
		       int (*extra)(int opt, const char *arg, void *cookie), void *cookie);
/* -p PID or PID,PID..., repeatable: into o->pids (o->pid the first);
 * several only when o->many_pids. 0, or -1 after printing why. */
int session_parse_pids(const char *arg, struct session_opts *o);
static inline const pid_t *session_pids(const struct session_opts *o)
{
	return o->pids;
}
static inline size_t session_npids(const struct session_opts *o)
{
	return o->npids;
}
/* A number of seconds for option opt (-d, -i): finite, > 0, at most a
 * year. 0, or -1 after printing a message that names the value. */
int session_parse_seconds(const char *verb, const char *opt, const char *arg, double *out);

/* The file a spec without PATH refers to: the command's program or the
 * process's executable. 0, or -errno with the reason in err. */
int session_main_path(const struct session_opts *o, char *out, size_t len, char *err,
		      size_t errlen);

/* Run it. 0 when the session ran (results are in *t, which the caller
 * frees with totals_free), 1 on a runtime failure (message printed). */
int session_run(const struct session_opts *o, struct probe_set *set,
		const struct session_ops *ops, struct totals *t);
void totals_free(struct totals *t);
/* Zeroed totals for the probes of set; 0 or -ENOMEM. */
int totals_alloc(struct totals *t, const struct probe_set *set);

/* Parse, resolve and add the specs argv[first..o->argend) with `action`.
 * 0, or 2 (usage) / 1 (runtime) after printing the error. */
int session_add_specs(const struct session_opts *o, char **argv, int first, unsigned action,
		      struct probe_set *set, struct spec **specs);
/* One line on stderr per kind of loss, and the probes never placed. */
void session_report(const struct session_opts *o, const struct probe_set *set,
		    const struct totals *t);
/* After the results are out: wait for a program we started to finish.
 * Its exit status as a shell gives it (128 + N when killed by signal N),
 * 0 when we started none or it is not ours to report. */
int session_finish(const struct session_opts *o);

/* What one verb adds to the flow every session verb shares (parse the
 * options, resolve the specs, start or inject, run, report, clean up). */
struct verb {
	const char *name;
	unsigned action;         /* enum np_action of its probes */
	bool banner;             /* "Tracing N functions..." unless -j */
	bool clock;              /* "Clock: ..." once the agent says, unless -j */
	bool follows;            /* traces the processes the program starts (--no-follow) */
	/* its option lists, NULL-terminated; what session_parse_opts does not
	 * handle goes to option() */
	const struct cli_opt *const *opts;
	int (*option)(int opt, const char *arg, struct session_opts *o, void *cookie);
	/* The verb's own specs (watch): argv[first..o->argend) into set, 0 or
	 * a status, the error printed. NULL: probe specs (session_add_specs). */
	int (*add_specs)(const struct session_opts *o, char **argv, int first,
			 struct probe_set *set, void *cookie);
	/* once the specs are resolved, before anything starts: 0 or a status */
	int (*prepare)(struct session_opts *o, struct probe_set *set, void *cookie);
	void (*on_event)(const struct event *ev, void *cookie);
	void (*on_interval)(const struct totals *t, void *cookie);
	void (*results)(const struct session_opts *o, const struct totals *t, void *cookie);
	void (*on_ready)(void *cookie); /* see session_ops; may be NULL */
	void (*cleanup)(void *cookie); /* always, last; may be NULL */
};
struct np_vm_prog;

/* The whole verb: its exit status. */
int session_verb_main(const struct verb *v, void *cookie, int argc, char **argv);

/* The name of a thread: its current one while it lives (cached), else
 * `fallback`, else "<...>" as the kernel prints a task it no longer knows. */
const char *session_comm(int tid, const char *fallback);
pid_t session_pid(void);
#endif

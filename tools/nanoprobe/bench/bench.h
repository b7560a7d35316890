/* SPDX-License-Identifier: MIT */
/*
 * `nanoprobe bench`: its rows and the parts that produce them (hit rate on
 * the trigger targets, attach cost, real programs), one file each.
 */
#ifndef NP_CLI_BENCH_H
#define NP_CLI_BENCH_H
#include <stdbool.h>
#include <stdint.h>

/* BK_WATCH: nanoprobe watchpoints (bench_watch.c); BK_BPFTRACE, BK_FRIDA:
 * the tools of that name, for the program rows only (bench_tools.c); each
 * other part skips the backends it has no rows for */
enum bench_backend { BK_NONE, BK_KERNEL, BK_TRAP, BK_JUMP, BK_WATCH, BK_BPFTRACE, BK_FRIDA,
		     BK_COUNT };
extern const char *const bench_backend_names[BK_COUNT];

enum bench_kind { ROW_HITS, ROW_ATTACH, ROW_PROGRAM, ROW_USECS };

struct bench_row {
	enum bench_kind kind;
	char bench[32];          /* "uprobe-nop", "attach-10000", "redis-get" */
	enum bench_backend backend;
	unsigned cpus;
	char skipped[256];       /* why the row did not run; "" when it ran */
	double vs_kernel;        /* this rate / the kernel row's; 0: no kernel row */
	/* ROW_HITS */
	double mps, mps_stddev, ns_per_hit;
	uint64_t calls, hits;    /* hits: counted by the backend (none: 0); also attach rows */
	uint64_t missed;         /* hits the backend saw but did not count (its own report) */
	const char *strategy;    /* what the engine chose; NULL for none/kernel */
	/* ROW_ATTACH; also ROW_PROGRAM: its probe points */
	unsigned probes;
	double attach_ms, detach_ms, probes_per_sec;
	/* the CPU time the process used meanwhile: on a shared machine, wall
	 * time also counts the time others had the CPU */
	double attach_cpu_ms, detach_cpu_ms;
	/* ROW_PROGRAM */
	const char *metric;      /* "seconds" (lower is better) or "rps" */
	double value, overhead_pct;
	bool has_overhead;       /* overhead_pct measured: the unprobed row ran */
	/* from starting the tool to the workload's start, and from its end
	 * to the tool's exit: what the tool's own start and finish cost */
	double start_s, stop_s;
	unsigned placed;         /* of `probes`, placed where asked */
	char runs[64];           /* the value of each run, in order */
	char hits_check[160];    /* "equal" to the jump row's hits, or "differ: ..." */
	/* ROW_USECS (watchpoints): microseconds per operation, lower is better;
	 * vs_kernel is then the kernel's time over this one */
	double usecs_per_op;
	uint64_t ops;
	unsigned threads, breakpoints;
};

struct bench_opts {
	bool json;
	double seconds;          /* -d: per hit row */
	unsigned threads;        /* --threads: 0 = 1 and 2 */
	bool backend[BK_COUNT];  /* --backend */
	const char *pattern;     /* PATTERN: fnmatch on the bench name */
	bool programs;           /* --programs: the program rows only */
	const char *self;        /* this executable, for the program rows */
};

/* Whether a row named `bench` is selected by the pattern. */
bool bench_selected(const struct bench_opts *o, const char *bench);
/* Whether a part with rows for the tools of its own (all but the program
 * rows) runs backend b. */
static inline bool bench_own_backend(const struct bench_opts *o, enum bench_backend b)
{
	return o->backend[b] && b != BK_BPFTRACE && b != BK_FRIDA;
}
/* Print one row (text or JSON), as soon as it is known. */
void bench_emit(const struct bench_opts *o, const struct bench_row *r);

/* The parts. Each prints its rows through bench_emit; 0 or 1 (failure). */
int bench_hits(const struct bench_opts *o);
int bench_attach(const struct bench_opts *o);
int bench_programs(const struct bench_opts *o);
int bench_watch(const struct bench_opts *o);
#endif

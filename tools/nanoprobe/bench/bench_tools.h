/* SPDX-License-Identifier: MIT */
/*
 * A real program under each tool the program rows of `nanoprobe bench`
 * compare (bench_programs.c): none, jump (`nanoprobe count`), kernel (the
 * counting BPF program on kernel uprobes, bench_kernel.c), bpftrace, and
 * Frida (frida_count.py). Every tool is given the same probe points, by
 * address in one file, and reports what it counted at each.
 */
#ifndef NP_CLI_BENCH_TOOLS_H
#define NP_CLI_BENCH_TOOLS_H
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bench.h"
#include "bench_kernel.h"

struct prog_point {
	uint64_t vaddr; /* ELF vaddr in the probed file */
	uint64_t offset; /* its file offset, as the kernel's uprobes take it */
	char name[64];  /* nanoprobe's name for the function (fn_<hex> from .eh_frame) */
	bool ret;       /* a return probe */
};

/* A program and its probe points, all in one file: a private copy of the
 * library or program, so that bpftrace's uprobes, which version 0.17 places
 * in every process that maps the file (its -p and -c filter USDT probes
 * only), trap in no other program on the machine. */
struct prog_spec {
	char file[PATH_MAX];      /* the probed file */
	struct prog_point *pts;   /* sorted by address, then entry before return */
	size_t n;
	const char *np_specs[8];  /* what `nanoprobe count` is given for them, NULL-ended */
	char *argv[16];           /* the program, NULL-ended; no argument holds a space,
				   * where bpftrace -c splits its command */
	char ld_path[PATH_MAX];   /* LD_LIBRARY_PATH for it, "" for none */
	char dir[256];            /* the private directory of the copy and the tools' files */
};

enum point_state { PT_PLACED, PT_REDIRECTED, PT_REFUSED };

/* What one tool counted in one run. */
struct tool_counts {
	uint64_t total;
	uint64_t missed;        /* hits the tool saw but did not count (its own report) */
	uint64_t *per;          /* per point, or NULL: the tool gives a total only */
	unsigned char *state;   /* per point, enum point_state */
	size_t placed;          /* points placed where asked */
	size_t redirected, refused;
};

/* A tool started with the program under it. */
struct tool_run {
	enum bench_backend b;
	pid_t pid;
	bool reaped;            /* waited for: status holds its exit */
	int status;
	int gate;               /* the kernel's: closed once the probes are on; else -1 */
	FILE *out, *err;        /* the tool's stdout (the program's) and stderr */
	double launched;        /* CLOCK_REALTIME, seconds */
	char result[PATH_MAX + 32]; /* the file the tool writes its counts to */
	struct kcount *k;
};

/* "" when the tool of backend b can run here, else why not, naming what to
 * install; nothing is installed. The kernel's reason is kcount_open's. */
void tool_available(const struct bench_opts *o, enum bench_backend b, char *why, size_t len);
/* Start the program under the tool. 0, or -1 with why. */
int tool_start(const struct bench_opts *o, enum bench_backend b, const struct prog_spec *p,
	       struct kcount *k, struct tool_run *t, char *why, size_t len);
/* Whether the tool is still running. */
bool tool_alive(struct tool_run *t);
/* Wait for the tool to exit: the program's stdout (malloc'd); *ended is
 * when, CLOCK_REALTIME. On failure, the last line of its stderr in why. */
char *tool_finish(struct tool_run *t, double *ended, char *why, size_t len);
/* What it counted (none: nothing; kernel: its counter's total, the caller
 * removes the probes with kcount_detach_all). 0, or -1 with why. */
int tool_counts(struct tool_run *t, const struct prog_spec *p, struct tool_counts *c, char *why,
		size_t len);
void tool_counts_free(struct tool_counts *c);

double realtime_now(void);
#endif

/* SPDX-License-Identifier: MIT */
/*
 * The programs of the program rows of `nanoprobe bench` (bench_programs.c),
 * each with its workload, its probe points and a private copy of the file
 * they are in (struct prog_spec, bench_tools.h).
 */
#ifndef NP_CLI_BENCH_WORKLOADS_H
#define NP_CLI_BENCH_WORKLOADS_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "bench_tools.h"

enum workload_kind { WL_PYTHON, WL_SQLITE, WL_REDIS };

struct workload {
	const char *rows[2];          /* its rows: one, or redis's SET and GET */
	/* "seconds": it prints "start=S end=E elapsed=X" (CLOCK_REALTIME, and
	 * its own timing of the work); "rps": redis-benchmark's requests/s */
	const char *metric;
	struct prog_spec spec;
	char specs[6][PATH_MAX + 32]; /* spec.np_specs point here */
	char script[PATH_MAX + 32];   /* the workload's file */
	char arg[32];                 /* python: its loop count */
	char conf[PATH_MAX + 16];     /* redis: its configuration file */
	int port;                     /* redis: the next start's */
	bool made;                    /* spec.dir exists */
};

/* The program, its workload scaled by o->seconds, its probe points, in a
 * directory of its own. 0, or -1 with why (a missing Debian package is
 * named); workload_free either way. */
int workload_make(const struct bench_opts *o, enum workload_kind kind, struct workload *w,
		  char *why, size_t len);
void workload_free(struct workload *w);

/* redis: a free port in its configuration, for its next start. 0 or -1. */
int redis_next_port(struct workload *w);
/* Until the server answers, as long as its tool runs. */
bool redis_ready(int port, struct tool_run *t);
/* redis-benchmark -t set,get: the requests per second of each. */
bool redis_benchmark(int port, long requests, double rps[2]);
/* Connect to the server; with cmd, send it (RESP inline) and close. */
bool redis_send(int port, const char *cmd);
#endif

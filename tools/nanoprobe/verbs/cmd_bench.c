/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe bench: what a probe costs, against the kernel's uprobes measured
 * in the same run, in rows shaped like the kernel selftest bench's:
 *
 *   uprobe-nop     jump    ( 1 cpus):  310.2 ± 1.1M/s (   3.2 ns/hit)   112x kernel
 *
 * ns/hit is the time of one call of the probed function on one thread,
 * call included (the `none` row is the call alone). Rows that cannot run
 * here (no root for the kernel's uprobes, a Debian package missing) say
 * why instead. The parts: bench_hits.c, bench_attach.c, bench_programs.c.
 */
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "commands.h"
#include "output/quote.h"

const char *const bench_backend_names[BK_COUNT] = {"none",  "kernel",   "trap", "jump",
						    "watch", "bpftrace", "frida"};

bool bench_selected(const struct bench_opts *o, const char *bench)
{
	return !o->pattern || !fnmatch(o->pattern, bench, 0);
}

static void emit_json_common(const struct bench_row *r)
{
	printf("{\"type\":\"bench\",\"bench\":");
	quote_json(stdout, r->bench);
	printf(",\"backend\":\"%s\",\"cpus\":%u", bench_backend_names[r->backend], r->cpus);
	if (r->skipped[0]) {
		printf(",\"skipped\":");
		quote_json(stdout, r->skipped);
	}
	if (r->vs_kernel > 0)
		printf(",\"vs_kernel\":%.2f", r->vs_kernel);
}

static void emit_json(const struct bench_row *r)
{
	emit_json_common(r);
	if (r->skipped[0]) {
		printf("}\n");
		return;
	}
	switch (r->kind) {
	case ROW_HITS:
		printf(",\"mps\":%.4f,\"mps_stddev\":%.4f,\"ns_per_hit\":%.3f,\"calls\":%llu",
		       r->mps, r->mps_stddev, r->ns_per_hit, (unsigned long long)r->calls);
		if (r->backend != BK_NONE)
			printf(",\"hits\":%llu,\"missed\":%llu", (unsigned long long)r->hits,
			       (unsigned long long)r->missed);
		if (r->strategy)
			printf(",\"strategy\":\"%s\"", r->strategy);
		break;
	case ROW_ATTACH:
		printf(",\"probes\":%u,\"attach_ms\":%.3f,\"detach_ms\":%.3f,\"probes_per_sec\":%.0f"
		       ",\"attach_cpu_ms\":%.3f,\"detach_cpu_ms\":%.3f,\"calls\":%llu,\"hits\":%llu",
		       r->probes, r->attach_ms, r->detach_ms, r->probes_per_sec, r->attach_cpu_ms,
		       r->detach_cpu_ms, (unsigned long long)r->calls, (unsigned long long)r->hits);
		break;
	case ROW_PROGRAM:
		printf(",\"metric\":\"%s\",\"value\":%.4f,\"runs\":\"%s\",\"start_s\":%.3f,"
		       "\"stop_s\":%.3f", r->metric, r->value, r->runs, r->start_s, r->stop_s);
		if (r->has_overhead)
			printf(",\"overhead_pct\":%.2f", r->overhead_pct);
		if (r->backend != BK_NONE)
			printf(",\"hits\":%llu,\"missed\":%llu,\"probes\":%u,\"placed\":%u",
			       (unsigned long long)r->hits, (unsigned long long)r->missed, r->probes,
			       r->placed);
		if (r->hits_check[0]) {
			printf(",\"hits_check\":");
			quote_json(stdout, r->hits_check);
		}
		break;
	case ROW_USECS:
		printf(",\"usecs_per_op\":%.5f,\"ops\":%llu,\"threads\":%u", r->usecs_per_op,
		       (unsigned long long)r->ops, r->threads);
		if (!strncmp(r->bench, "bp-", 3))
			printf(",\"breakpoints\":%u,\"parallel\":%u", r->breakpoints, r->cpus);
		else if (r->backend == BK_WATCH ||
			 (r->backend == BK_KERNEL && !strcmp(r->bench, "watch-store")))
			printf(",\"hits\":%llu", (unsigned long long)r->hits);
		break;
	}
	printf("}\n");
}

static void emit_text(const struct bench_row *r)
{
	printf("%-15s %-8s(%2u cpus): ", r->bench, bench_backend_names[r->backend], r->cpus);
	if (r->skipped[0]) {
		printf("skipped: %s\n", r->skipped);
		return;
	}
	int prec = r->mps >= 10 ? 1 : 3;
	switch (r->kind) {
	case ROW_HITS:
		printf("%7.*f ± %.*fM/s (%8.1f ns/hit)", prec, r->mps, prec, r->mps_stddev,
		       r->ns_per_hit);
		break;
	case ROW_ATTACH:
		printf("%u probes: attach %.1f ms (cpu %.1f), detach %.1f ms (cpu %.1f) (%.0f probes/s)",
		       r->probes, r->attach_ms, r->attach_cpu_ms, r->detach_ms, r->detach_cpu_ms,
		       r->probes_per_sec);
		break;
	case ROW_USECS:
		printf("%10.*f usecs/op (%llu ops)", r->usecs_per_op < 0.1 ? 5 : 3, r->usecs_per_op,
		       (unsigned long long)r->ops);
		break;
	case ROW_PROGRAM:
		if (!strcmp(r->metric, "rps"))
			printf("%10.0f requests/s", r->value);
		else
			printf("%10.3f s", r->value);
		if (r->has_overhead)
			printf("  %+7.1f%%", r->overhead_pct);
		if (r->backend != BK_NONE)
			printf("  %llu hits", (unsigned long long)r->hits);
		if (r->missed)
			printf(" (%llu missed)", (unsigned long long)r->missed);
		printf("  (start %.2f s, exit %.2f s)", r->start_s, r->stop_s);
		if (r->hits_check[0] && strcmp(r->hits_check, "equal"))
			printf("  hits %s", r->hits_check);
		break;
	}
	if (r->vs_kernel > 0)
		printf(" %7.*fx kernel", r->vs_kernel >= 10 ? 0 : 2, r->vs_kernel);
	printf("\n");
}

void bench_emit(const struct bench_opts *o, const struct bench_row *r)
{
	if (o->json)
		emit_json(r);
	else
		emit_text(r);
	fflush(stdout);
}

static int parse_backends(char *list, struct bench_opts *o)
{
	memset(o->backend, 0, sizeof(o->backend));
	for (char *save, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int b = 0;
		while (b < BK_COUNT && strcmp(name, bench_backend_names[b]))
			b++;
		if (b == BK_COUNT) {
			fprintf(stderr, "nanoprobe bench: --backend is a list of none, kernel, trap, "
					"jump, watch, bpftrace, frida; not '%s'\n", name);
			return -1;
		}
		o->backend[b] = true;
	}
	return 0;
}

static int parse_number(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	*out = strtod(arg, &end);
	if (*end || !(*out >= lo && *out <= hi)) {
		fprintf(stderr, "nanoprobe bench: %s wants a number in %g..%g, not '%s'\n", opt, lo,
			hi, arg);
		return -1;
	}
	return 0;
}

enum { OPT_THREADS = 256, OPT_BACKEND, OPT_PROGRAMS };

static const struct cli_opt bench_own[] = {
	{'j', "json", NULL, "one JSON object per row and line, each with \"type\": \"bench\""},
	{'d', "duration", "SECONDS", "measured time per trigger row (default 1)"},
	{OPT_THREADS, "threads", "N", "only the trigger rows with N threads"},
	{OPT_BACKEND, "backend", "LIST",
	 "some of none,kernel,trap,jump,watch,bpftrace,frida (default: not the last two)"},
	{OPT_PROGRAMS, "programs", NULL,
	 "only the real programs, under every tool (bpftrace and frida too)"},
	{0},
};
static const struct cli_opt *const bench_opts[] = {bench_own, NULL};

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	struct option longs[12];
	char shortopts[16];
	double v;
	int opt;
	bool backends = false;
	cli_getopt_tables(bench_opts, shortopts, sizeof(shortopts), longs, 12);
	optind = 1;
	while ((opt = getopt_long(argc, argv, shortopts, longs, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return cli_bad_option(opt, argv, bench_opts), -1;
		if (opt == 'j')
			o->json = true;
		else if (opt == 'd' && !parse_number("-d", optarg, 0.01, 3600, &v))
			o->seconds = v;
		else if (opt == OPT_THREADS && !parse_number("--threads", optarg, 1, 64, &v))
			o->threads = (unsigned)v;
		else if (opt == OPT_PROGRAMS)
			o->programs = true;
		else if (opt != OPT_BACKEND || parse_backends(optarg, o))
			return -1;
		else
			backends = true;
	}
	/* bpftrace and Frida take minutes for a library's every function:
	 * asked for by name, or by --programs */
	if (!backends)
		o->backend[BK_BPFTRACE] = o->backend[BK_FRIDA] = o->programs;
	if (optind < argc - 1) {
		fprintf(stderr, "nanoprobe bench: one PATTERN at most\n");
		return -1;
	}
	o->pattern = optind < argc ? argv[optind] : NULL;
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o = {.seconds = 1.0, .self = "/proc/self/exe"};
	for (int b = 0; b < BK_COUNT; b++)
		o.backend[b] = true;
	if (parse_args(argc, argv, &o))
		return 2;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		o.self = self;
	}
	if (o.programs)
		return bench_programs(&o);
	return bench_hits(&o) | bench_attach(&o) | bench_programs(&o) | bench_watch(&o);
}

const struct cli_verb verb_bench = {
	"bench", cmd_bench, "bench [OPTIONS] [PATTERN]",
	"what a probe costs, against the kernel's uprobes",
	"PATTERN: only the rows whose bench name matches this shell glob ('uprobe-*').\n",
	bench_opts,
};

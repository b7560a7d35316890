/* SPDX-License-Identifier: MIT */
/* nanoprobe: a table of verbs, as bpftool is. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
};

static const struct verb verbs[] = {
	{"trace", cmd_trace,
	 "trace [-p PID] [-j] [-o FILE] [-d SECONDS] [--export-trace FILE.json] SPEC... "
	 "[-- CMD ARGS...]\n"
	 "      print every hit, as the kernel prints uprobe events\n"
	 "      SPEC: [p|r][:[GRP/]EVENT] PATH:SYMBOL[+OFFS][%return] | PATH:0xOFFSET [NAME=]FETCHARG[:TYPE]..."},
	{"count", cmd_count,
	 "count [-p PID] [-i SECONDS] [-d SECONDS] [-j] PATTERN... [-- CMD ARGS...]\n"
	 "      calls per function (PATTERN: [PATH:]GLOB, e.g. 'c:mem*')"},
	{"latency", cmd_latency,
	 "latency [-p PID] [-u|-m] [-d SECONDS] [-j] FUNC [-- CMD ARGS...]\n"
	 "      entry-to-return time per call, as a power-of-two histogram"},
	{"run", cmd_run,
	 "run [-p PID] [-c CMD] [-f text|json] [-o FILE] [-d SECONDS] [--map-keys N] "
	 "{-e 'PROGRAM' | FILE} [-- CMD ARGS...]\n"
	 "      run a bpftrace program (uprobe, uretprobe, BEGIN, END, interval; see docs/scripts.md)"},
	{"watch", cmd_watch,
	 "watch [-p PID] [-j] [-o FILE] [-d SECONDS] SPEC... [-- CMD ARGS...]\n"
	 "      every access to a variable (hardware watchpoints): who, where, old and new value\n"
	 "      SPEC: [PATH:]SYMBOL[+OFFS][:LEN][:w|rw|x] | 0xADDR[:LEN][:w|rw|x]"},
	{"list", cmd_list,
	 "list [-j] PATH [FUNC]\n"
	 "      the functions of a binary; with FUNC, each instruction and the probe it would get"},
	{"analyze", cmd_analyze,
	 "analyze [--arch x86_64|arm64|riscv64] [-j] ELF...\n"
	 "      every function entry and instruction: the probe strategy it would get, and a summary"},
#ifdef NP_HAVE_BENCH /* x86-64 only so far (tools/nanoprobe/meson.build) */
	{"bench", cmd_bench,
	 "bench [-j] [-d SECONDS] [--threads N] [--backend none,kernel,trap,jump,watch] [PATTERN]\n"
	 "      per-hit cost against the kernel's uprobes, attach cost, real programs, watchpoints"},
#endif
};
#define NVERBS (sizeof(verbs) / sizeof(*verbs))

static int usage(FILE *f, int status)
{
	fprintf(f, "usage: nanoprobe VERB [OPTIONS]\n\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  nanoprobe %s\n\n", verbs[i].usage);
	fprintf(f, "common options: -p PID (attach to a running process), -- CMD ARGS (start one),\n"
		   "  -d SECONDS, -j/--json, --strategy auto|jump|trap, --buffer-kb N (per thread)\n"
		   "see docs/cli.md\n");
	return status;
}

static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr, 2);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return usage(stdout, 0);
	for (size_t i = 0; i < NVERBS; i++) {
		if (strcmp(argv[1], verbs[i].name))
			continue;
		if (wants_help(argc - 1, argv + 1)) {
			printf("usage: nanoprobe %s\n", verbs[i].usage);
			return 0;
		}
		return verbs[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "nanoprobe: unknown verb '%s' (trace, count, latency, run, watch, list, analyze, bench)\n",
		argv[1]);
	return 2;
}

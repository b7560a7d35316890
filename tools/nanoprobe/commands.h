/* SPDX-License-Identifier: MIT */
/* The verbs of the nanoprobe command (cli.h, struct cli_verb). Each run()
 * returns the exit status: 0 done, 1 runtime failure, 2 usage error. */
#ifndef NP_CLI_COMMANDS_H
#define NP_CLI_COMMANDS_H
#include "cli.h"

extern const struct cli_verb verb_trace, verb_count, verb_latency, verb_run, verb_watch,
	verb_list, verb_analyze, verb_bench;

int cmd_trace(int argc, char **argv);
int cmd_count(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_run(int argc, char **argv);
#endif

/* SPDX-License-Identifier: MIT */
/* The verbs of the nanoprobe command. Each returns the exit status:
 * 0 done, 1 runtime failure, 2 usage error. */
#ifndef NP_CLI_COMMANDS_H
#define NP_CLI_COMMANDS_H
int cmd_trace(int argc, char **argv);
int cmd_count(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_run(int argc, char **argv);
#endif

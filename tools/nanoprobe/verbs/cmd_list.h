/* SPDX-License-Identifier: MIT */
/*
 * `nanoprobe list [-j] PATH [FUNC]`: the functions of a file, or the
 * instructions of one function with the strategy a probe at each would get.
 */
#ifndef NP_CLI_CMD_LIST_H
#define NP_CLI_CMD_LIST_H

/* argv[0] is "list". Returns the exit status: 0, 1 (failure), 2 (usage). */
int cmd_list(int argc, char **argv);
#endif

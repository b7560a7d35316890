/* SPDX-License-Identifier: MIT */
/* `nanoprobe list` without the rest of the command: argv[1..] are its own. */
#include "cli.h"
#include "verbs/cmd_list.h"

int main(int argc, char **argv)
{
	cli_verb = "list";
	return cmd_list(argc - 1, argv + 1);
}

/* SPDX-License-Identifier: MIT */
/* Getting the agent into the target: preloaded into a program we start, or
 * injected into one that runs. */
#ifndef NP_CLI_LAUNCH_H
#define NP_CLI_LAUNCH_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The agent's shared object: $NANOPROBE_AGENT, else next to this command
 * (installed: ../lib/nanoprobe/, build tree: ../../src/agent/). */
int launch_agent_path(char *out, size_t len, char *err, size_t errlen);
/* The agent is built for another ISA than this command: the program runs
 * under qemu-user, and the agent goes into the guest's LD_PRELOAD. */
bool launch_agent_foreign(const char *agent);
/* A program LD_PRELOAD cannot reach: no PT_INTERP. */
bool launch_is_static(const char *path);
/* fork + exec cmd with the agent preloaded and told `sock`; with
 * stdout_to_stderr, the program's stdout is our stderr; with follow, the
 * programs it runs take the agent too and join the session. */
int launch_command(char **cmd, const char *sock, bool stdout_to_stderr, bool follow, pid_t *pid,
		   char *err, size_t errlen);
/* Inject the agent into pid, told `sock` (each of -p's processes). */
int launch_inject(pid_t pid, const char *sock, char *err, size_t errlen);
/* Its agent connected (its guard on the mask calls is in place): the
 * engine's signals are unblocked in the threads that block them
 * (masks.c) until the session is over. Then blocked again when
 * `released` (no probe is left in the process), else left so. */
void launch_inject_connected(pid_t pid);
void launch_inject_done(bool released);
/* The started program has exited (always false for -p). */
bool launch_child_exited(pid_t pid);
void launch_kill_child(void);
/* Wait for the started program to end; its wait status, or -1 if none
 * (or we killed it ourselves). */
int launch_wait_child(void);
#endif

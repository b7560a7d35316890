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
/* fork + exec cmd with the agent preloaded and told `sock`. */
int launch_command(char **cmd, const char *sock, pid_t *pid, char *err, size_t errlen);
/* Inject the agent into pid, told `sock`; and unblock the engine's
 * signals in the threads that block them (masks.c) until ... */
int launch_inject(pid_t pid, const char *sock, char *err, size_t errlen);
/* ... the session is over: blocked again when `released` (no probe is
 * left in the process), else left unblocked, which is safe. */
void launch_inject_done(bool released);
/* The started program has exited (always false for -p). */
bool launch_child_exited(pid_t pid);
void launch_kill_child(void);
/* Wait for the started program to end; its wait status, or -1 if none
 * (or we killed it ourselves). */
int launch_wait_child(void);
#endif

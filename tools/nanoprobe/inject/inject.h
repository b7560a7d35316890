/* SPDX-License-Identifier: MIT */
/*
 * Loading the agent into a running process that knows nothing of nanoprobe:
 * ptrace-seize one thread, make it call dlopen(agent) and then the agent's
 * start function, put every register back, detach. The process is stopped
 * only while those two calls run.
 */
#ifndef NP_CLI_INJECT_H
#define NP_CLI_INJECT_H
#include <stddef.h>
#include <sys/types.h>

/*
 * In process pid: dlopen(agent_path, RTLD_NOW), then call the agent's
 * exported function `start_sym` (signature: int fn(const char *arg)) with
 * the string `arg`; its return value goes to *start_ret.
 * 0, or -errno with a one-line reason in err, for instance:
 *   "process 123 not found"
 *   "cannot attach to process 123: Operation not permitted (ptrace_scope is 1: ...)"
 *   "dlopen failed in process 123: <dlerror text>"
 * On failure the process is left running with its registers unchanged.
 */
int np_inject_agent(pid_t pid, const char *agent_path, const char *start_sym, const char *arg,
		    int *start_ret, char *err, size_t errlen);
/* The process exists and is not a zombie (nor has lost its main thread):
 * 0, or -ESRCH with the reason in err. Nothing is attached. */
int np_inject_check_pid(pid_t pid, char *err, size_t errlen);
#endif

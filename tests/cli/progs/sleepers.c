/* SPDX-License-Identifier: MIT */
/*
 * A program whose threads wait in system calls (tests/blocked.h) while
 * nanoprobe attaches to it and detaches (tests/cli/test_quiet.py).
 *
 *   sleepers KIND SECS [threads]
 *
 * The main thread waits in KIND (injection with -p borrows it); with
 * `threads`, every other kind waits on a thread of its own. The calls with
 * a timeout wait SECS seconds. Lines on stdin: `dlopen` loads libm (whose
 * probes a preloaded agent then places around the waiting threads) and
 * says `dlopened`; `fork` forks a child that loads libm too (the agent's
 * dlopen hook runs in a child, whose control thread is its parent's) and
 * says `child N` with its exit status; `release` gives each call without
 * a timeout its event.
 * At the end, one line per call ("ok KIND", or "BAD KIND: what differs"),
 * exit status 1 if any differs.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "blocked.h"

static void *commands(void *arg)
{
	char line[64];
	FILE *in = arg;
	while (fgets(line, sizeof line, in)) {
		if (!strncmp(line, "dlopen", 6)) {
			void *h = dlopen("libm.so.6", RTLD_NOW);
			double (*cosine)(double) = h ? (double (*)(double))dlsym(h, "cos") : NULL;
			printf("dlopened %s\n", cosine && cosine(0.0) == 1.0 ? "ok" : "failed");
			fflush(stdout);
		} else if (!strncmp(line, "fork", 4)) {
			pid_t pid = fork();
			if (pid == 0) {
				alarm(30); /* a child that hangs dies of it */
				void *h = dlopen("libm.so.6", RTLD_NOW);
				_exit(h && dlsym(h, "sin") ? 0 : 1);
			}
			int st = -1;
			waitpid(pid, &st, 0);
			printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			fflush(stdout);
		} else if (!strncmp(line, "release", 7)) {
			blocked_release();
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct blocked *mine = argc > 2 ? blocked_find(argv[1]) : NULL;
	pthread_t cmd;
	if (!mine || blocked_prepare(atoi(argv[2])))
		return 2;
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if ((argc > 3 && !strcmp(argv[3], "threads") && blocked_start(mine)) ||
	    pthread_create(&cmd, NULL, commands, stdin))
		return 2;
	blocked_run(mine);
	int bad = blocked_report(mine, stdout);
	return bad ? 1 : 0;
}

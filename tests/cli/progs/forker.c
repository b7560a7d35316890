/* SPDX-License-Identifier: MIT */
/*
 * A process tree for the tests of following children (test_tree.py):
 * each process calls add_item() a known number of times and says so,
 *
 *   pid=PID items=N
 *
 * so that a test can compare what nanoprobe counted per process with what
 * ran.
 *
 *   forker MODE N [PROG]   one call of add_item(), then a child that calls it
 *                          N times, made by MODE; waits for it
 *     fork     fork(); the child calls it itself
 *     vfork    vfork() + exec of this program ("leaf N")
 *     spawn    posix_spawn() of this program
 *     exec     fork() + exec of this program
 *     exec-late  the same, once the child has as many sockets open as its
 *              parent had (an agent's child has connected again: it closes
 *              its copy of the parent's connection), and 50 ms more
 *     system   system("PROG leaf N") through the shell
 *     chain    fork() + exec of this program as "chain N-1", N generations deep
 *     threads  fork() from a thread while another thread runs (1000 calls
 *              more in the parent)
 *     clone    the clone system call as fork makes it, called directly: no
 *              fork handler runs (the child calls it itself)
 *     clone3   the same with clone3 (exits 3 where the kernel has none)
 *     _Fork    glibc's _Fork (2.34), which runs no fork handler either
 *     run      fork() + exec of PROG (no argument): a program of another kind
 *     linger   fork(); the child says "child=PID", sleeps N seconds, then calls
 *              add_item() once; not waited for
 *     clone-linger  the same child made by the clone system call, which calls
 *              add_item() once before it says "child=PID" as well
 *   forker leaf N          N calls, nothing else
 *   forker --serve         a line "MODE N [PROG]" does that, answers "done"
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h> /* struct clone_args */
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

extern char **environ;
static char self[4096];

NOINLINE long add_item(long v)
{
	return v * 2 + 1;
}

/* Named with a function pointer, once per process: its address is this
 * process's, in the layout of this image. */
NOINLINE long (*items_with(long (*fn)(long)))(long)
{
	return fn;
}

static void items(long n)
{
	items_with(add_item);
	for (long i = 0; i < n; i++)
		add_item(i);
	printf("pid=%d items=%ld\n", (int)getpid(), n);
	fflush(stdout);
}

static void exec_self(const char *mode, long n)
{
	char num[32];
	snprintf(num, sizeof(num), "%ld", n);
	execl(self, self, mode, num, (char *)NULL);
	_exit(127);
}

/* The sockets among this process's descriptors. */
static int sockets(void)
{
	char path[300], link[64];
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(path, link, sizeof(link) - 1);
		n += len > 7 && !strncmp(link, "socket:", 7);
	}
	if (d)
		closedir(d);
	return n;
}

static void *spin(void *arg)
{
	(void)arg;
	for (long i = 0; i < 1000; i++)
		add_item(i);
	return NULL;
}

/* A child made without fork's handlers (fork.c's clone, clone3, _Fork):
 * -1 when this libc or kernel cannot make one that way. */
static pid_t raw_child(const char *mode)
{
	if (!strcmp(mode, "clone"))
		return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
#ifdef SYS_clone3
	if (!strcmp(mode, "clone3")) {
		struct clone_args a = {.exit_signal = SIGCHLD};
		pid_t c = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
		if (c < 0)
			exit(3);
		return c;
	}
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
	if (!strcmp(mode, "_Fork"))
		return _Fork();
#endif
	exit(3);
}

static pid_t child_of(const char *mode, long n, const char *prog)
{
	pid_t c = -1;
	char num[32], cmd[8192];
	snprintf(num, sizeof(num), "%ld", n);
	if (!strcmp(mode, "fork") || !strcmp(mode, "threads")) {
		pthread_t t;
		bool threads = !strcmp(mode, "threads");
		if (threads)
			pthread_create(&t, NULL, spin, NULL);
		if ((c = fork()) == 0) {
			items(n);
			_exit(0);
		}
		if (threads)
			pthread_join(t, NULL);
	} else if (!strcmp(mode, "clone") || !strcmp(mode, "clone3") || !strcmp(mode, "_Fork")) {
		if ((c = raw_child(mode)) == 0) {
			items(n);
			_exit(0);
		}
	} else if (!strcmp(mode, "vfork")) {
		if ((c = vfork()) == 0)
			exec_self("leaf", n);
	} else if (!strcmp(mode, "spawn")) {
		char *argv[] = {self, "leaf", num, NULL};
		if (posix_spawn(&c, self, NULL, NULL, argv, environ))
			c = -1;
	} else if (!strcmp(mode, "exec-late")) {
		int had = sockets();
		if ((c = fork()) == 0) {
			for (int i = 0; i < 5000 && sockets() < had; i++)
				usleep(1000);
			usleep(50000);
			exec_self("leaf", n);
		}
	} else if (!strcmp(mode, "exec") || !strcmp(mode, "chain")) {
		if (!strcmp(mode, "chain") && n <= 1)
			return -1;
		if ((c = fork()) == 0)
			exec_self(!strcmp(mode, "exec") ? "leaf" : "chain", !strcmp(mode, "exec") ? n : n - 1);
	} else if (!strcmp(mode, "system")) {
		snprintf(cmd, sizeof(cmd), "'%s' leaf %ld", self, n);
		return system(cmd) == 0 ? 0 : -1;
	} else if (!strcmp(mode, "linger") || !strcmp(mode, "clone-linger")) {
		bool raw = !strcmp(mode, "clone-linger");
		if ((c = raw ? raw_child("clone") : fork()) == 0) {
			if (raw)
				items(1);
			sleep((unsigned)n);
			items(1);
			_exit(0);
		}
		printf("child=%d\n", (int)c);
		return -1; /* not waited for */
	} else if (!strcmp(mode, "run") && prog) {
		if ((c = fork()) == 0) {
			execl(prog, prog, (char *)NULL);
			_exit(127);
		}
	}
	return c;
}

static void run(const char *mode, long n, const char *prog)
{
	items(1);
	pid_t c = child_of(mode, n, prog);
	if (c > 0)
		waitpid(c, NULL, 0);
}

int main(int argc, char **argv)
{
	char line[8192], mode[32], prog[4096];
	long n;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[len > 0 ? len : 0] = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[1], "leaf")) {
		items(atol(argv[2]));
		return 0;
	}
	if (argc > 2) {
		run(argv[1], atol(argv[2]), argc > 3 ? argv[3] : NULL);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "--serve"))
		return 2;
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		prog[0] = 0;
		if (sscanf(line, "%31s %ld %4095s", mode, &n, prog) >= 2)
			run(mode, n, prog[0] ? prog : NULL);
		printf("done\n");
	}
	return 0;
}

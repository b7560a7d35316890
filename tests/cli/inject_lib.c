/* SPDX-License-Identifier: MIT */
/*
 * The agent of the injection tests. np_test_start(path) appends
 * "pid=PID call=N\n" to the file `path` and returns NP_TEST_MAGIC + N, N
 * counting the calls since the library was loaded: a second injection that
 * finds the library loaded already returns NP_TEST_MAGIC + 2.
 * np_test_crash faults, for the injector to abandon the call.
 * np_test_trap meets a breakpoint, as a call meets a TRAP probe, and
 * returns NP_TEST_MAGIC once the program's SIGTRAP handler has run.
 * np_test_pause, called by the target itself, keeps its thread inside
 * the library, in pause() made there, until np_test_stop is set.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NP_TEST_MAGIC 0x4e500000 /* as in test_inject.c */

static int calls;

__attribute__((visibility("default"))) int np_test_start(const char *path);
__attribute__((visibility("default"))) int np_test_crash(const char *path);
__attribute__((visibility("default"))) int np_test_trap(const char *path);
__attribute__((visibility("default"))) void np_test_pause(void);
__attribute__((visibility("default"))) volatile int np_test_stop;

int np_test_start(const char *path)
{
	char line[64];
	int fd, n;

	calls++;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	n = snprintf(line, sizeof(line), "pid=%d call=%d\n", (int)getpid(), calls);
	if (write(fd, line, (size_t)n) != n)
		calls = -1000;
	close(fd);
	return NP_TEST_MAGIC + calls;
}

int np_test_crash(const char *path)
{
	volatile int *null = NULL;

	(void)path;
	return *null;
}

int np_test_trap(const char *path)
{
	(void)path;
	__asm__ volatile("int3"); /* the tests that call it run on x86-64 */
	return NP_TEST_MAGIC;
}

void np_test_pause(void)
{
	while (!np_test_stop) {
		long r = 34; /* SYS_pause on x86-64, from here: its pc is ours */

		__asm__ volatile("syscall" : "+a"(r) : : "rcx", "r11", "memory");
	}
}

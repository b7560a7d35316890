/* SPDX-License-Identifier: MIT */
/*
 * The agent of the injection tests. np_test_start(path) appends
 * "pid=PID call=N\n" to the file `path` and returns NP_TEST_MAGIC + N, N
 * counting the calls since the library was loaded: a second injection that
 * finds the library loaded already returns NP_TEST_MAGIC + 2.
 * np_test_crash faults, for the injector to abandon the call.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NP_TEST_MAGIC 0x4e500000 /* as in test_inject.c */

static int calls;

__attribute__((visibility("default"))) int np_test_start(const char *path);
__attribute__((visibility("default"))) int np_test_crash(const char *path);

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

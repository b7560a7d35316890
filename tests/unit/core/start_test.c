/* SPDX-License-Identifier: MIT */
/*
 * np_engine_preinit (core/embed.h): what the preloaded agent's constructor
 * asks of the engine while the program's thread is the only one. Both
 * steps wait for an RCU grace period once a second thread exists, so they
 * must be done by the time it returns: the process registered for the
 * expedited membarriers (the kernel lists its registrations), its
 * descriptor table grown past NP_FD_HIGH (/proc/self/status, FDSize); and
 * nothing of the program's changed: errno, the descriptors it has open.
 * In a fresh single-threaded child: a registration lasts as long as the
 * process.
 */
#include "core/embed.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MEMBARRIER_CMD_GET_REGISTRATIONS
#define MEMBARRIER_CMD_GET_REGISTRATIONS (1 << 9) /* Linux 6.3 */
#endif

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static long fd_table_size(void)
{
	char line[256];
	long n = -1;
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "FDSize:", 7))
			n = strtol(line + 7, NULL, 10);
	if (f)
		fclose(f);
	return n;
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1; /* the directory's own */
}

/* In a child: the steps, then what they left. Its exit status: a bit per
 * failed check (0: all held). */
static int preinit_in_child(void)
{
	long cmds = membarrier(MEMBARRIER_CMD_QUERY);
	long before = membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS);
	int fds = open_fds(), bad = 0;
	bad |= fd_table_size() > NP_FD_HIGH ? 64 : 0; /* else the growth would not show */
	errno = 4242;
	np_engine_preinit();
	bad |= errno != 4242 ? 1 : 0;
	bad |= open_fds() != fds ? 2 : 0;
	bad |= fd_table_size() <= NP_FD_HIGH ? 4 : 0;
	long after = membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS);
	if (before >= 0 && cmds > 0) { /* a kernel that says what is registered */
		if (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)
			bad |= !(after & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) ? 8 : 0;
		if (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)
			bad |= !(after & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) ? 16 : 0;
	}
	np_engine_preinit(); /* once is enough: again, nothing */
	bad |= open_fds() != fds ? 32 : 0;
	return bad;
}

TEST(preinit_registers_the_membarriers_and_grows_the_descriptor_table)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(preinit_in_child());
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	if (WIFEXITED(st) && WEXITSTATUS(st))
		fprintf(stderr, "failed checks: 0x%x (1 errno, 2 descriptors, 4 FDSize, "
				"8/16 membarrier registrations, 32 again, 64 grown before)\n",
			WEXITSTATUS(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

TEST_MAIN()

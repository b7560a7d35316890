/* SPDX-License-Identifier: MIT */
/*
 * What registering for the expedited membarriers costs a process with one
 * thread and with two (docs/performance.md, "Start-up"): the engine
 * registers both commands once (src/core/patch.c, np_patch_register). With
 * more than one thread the kernel waits for an RCU grace period per command
 * before the call returns. Each measurement is a fresh process (a
 * registration is once per process): np-membarrier-bench runs itself.
 *
 *   build/bench/np-membarrier-bench [RUNS]
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *idle(void *arg)
{
	pause();
	return arg;
}

/* One registration in this process, with a second thread or not. */
static int measure(bool two)
{
	pthread_t t;
	if (two && pthread_create(&t, NULL, idle, NULL))
		return 1;
	double t0 = now_ms();
	long a = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	double t1 = now_ms();
	long b = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
	double t2 = now_ms();
	printf("%.3f %.3f %d\n", t1 - t0, t2 - t1, a == 0 && b == 0);
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "one") || !strcmp(argv[1], "two")))
		return measure(!strcmp(argv[1], "two"));
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	if (runs < 1 || runs > 99)
		runs = 9;
	for (int two = 0; two < 2; two++) {
		double sum[99];
		int ok = 1;
		for (int i = 0; i < runs; i++) {
			char cmd[512], line[128];
			double a = 0, b = 0;
			int good = 0;
			snprintf(cmd, sizeof(cmd), "/proc/%d/exe %s", (int)getpid(), two ? "two" : "one");
			FILE *p = popen(cmd, "r");
			if (!p || !fgets(line, sizeof(line), p) ||
			    sscanf(line, "%lf %lf %d", &a, &b, &good) != 3)
				good = 0;
			if (p)
				pclose(p);
			ok &= good;
			sum[i] = a + b;
		}
		qsort(sum, (size_t)runs, sizeof(*sum), by_value);
		printf("%s: both commands registered in %.3f ms (median of %d; least %.3f, most "
		       "%.3f)%s\n",
		       two ? "two threads" : "one thread ", sum[runs / 2], runs, sum[0],
		       sum[runs - 1], ok ? "" : " (a registration failed)");
	}
	return 0;
}

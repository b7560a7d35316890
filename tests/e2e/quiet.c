/* SPDX-License-Identifier: MIT */
/*
 * Threads blocked in system calls while probes are attached and detached
 * around them must not notice (docs/reliability.md, "Signals that
 * interrupt a sleep"): the engine moves and stops threads with a signal,
 * and a handler that runs while a thread waits in nanosleep, epoll_wait,
 * poll, select, sigtimedwait or sigsuspend makes the call fail with EINTR
 * whatever SA_RESTART says. A thread blocked in a system call is never
 * sent it. Here every kind of wait of tests/blocked.h sits on a thread of
 * its own while probes go in and out on the functions they wait in and
 * on many others (one batch whose span covers them all, then one at a
 * time), and each call must come back as it would have.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "blocked.h"
#include "e2e.h"
#include "test.h"

#define SECS 6 /* the calls with a timeout: longer than the probing, as a rule */

static const char *const names[] = {
	"nanosleep", "clock_nanosleep", "epoll_wait", "poll", "select", "syscall",
	"sigtimedwait", "sigwaitinfo", "read", "write", "sigsuspend", "pthread_sigmask",
	"malloc", "free", "calloc", "realloc", "strlen", "memchr", "strtol", "atoi",
	"getenv", "qsort", "bsearch", "rand", "srand", "time", "localtime_r", "strftime",
	"fopen", "fclose", "fgets", "fputs", "snprintf", "open", "close", "getpid",
	"abs", "labs", "strchr", "strrchr", "strncmp", "toupper", "isalnum", "exit",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static struct e2e_counter counters[NNAMES];

static size_t attach_batch(struct np_probe **probes)
{
	void *addrs[NNAMES];
	struct np_probe_opts opts[NNAMES];
	const struct np_probe_opts *op[NNAMES];
	int errs[NNAMES];
	size_t n = 0;
	for (size_t i = 0; i < NNAMES; i++) {
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		if (!fn)
			continue;
		addrs[n] = fn;
		opts[n] = e2e_opts(e2e_count, &counters[i], NP_STRATEGY_AUTO);
		opts[n].flags = NP_PROBE_NO_FPU;
		op[n] = &opts[n];
		n++;
	}
	struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(.cnt = n, .addrs = addrs, .opts = op,
							   .probes = probes, .errs = errs);
	int placed = np_probe_attach_many(&mo);
	printf("# %d of %zu probes placed in one batch\n", placed, n);
	return n;
}

TEST(blocked_calls_come_back_unchanged_across_attach_and_detach)
{
	e2e_log_capture();
	CHECK_EQ(blocked_prepare(SECS), 0);
	CHECK_EQ(blocked_start(NULL), 0);
	CHECK_EQ(blocked_wait(NULL), 0);

	struct np_probe *probes[NNAMES] = {0};
	size_t n = attach_batch(probes);
	CHECK(n > 0);
	CHECK_EQ(np_probe_detach_many(probes, n), 0);
	for (size_t i = 0; i < n; i++)
		np_probe_free(probes[i]);
	/* one at a time: a patch of its own for each */
	for (size_t i = 0; i < 12; i++) {
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		struct np_probe_opts o = e2e_opts(e2e_count, &counters[i], NP_STRATEGY_AUTO);
		o.flags = NP_PROBE_NO_FPU;
		struct np_probe *p = fn ? np_probe_attach(fn, &o) : NULL;
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
	int still = 0;
	for (int i = 0; i < BLOCKED_KINDS; i++)
		still += blocked_in_syscall(blocked_all[i].tid);
	printf("# %d of %d calls were still waiting after the probing\n", still, BLOCKED_KINDS);
	blocked_release();
	CHECK_EQ(blocked_report(NULL, stdout), 0);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * The watchpoint rows of `nanoprobe bench`, in microseconds per operation
 * (lower is better), next to the kernel's own figures from the same run:
 *
 *   watch-attach-T   create and destroy one watch (np_watch_attach +
 *                    np_watch_free) with T threads alive: an event per
 *                    thread. Beside it, `kernel`: the same events opened
 *                    and closed with bare perf_event_open, the floor.
 *   watch-store      one store to a watched byte (trap, signal, a counting
 *                    handler), next to a store alone (`none`) and to the
 *                    kernel counting the breakpoint without a signal.
 *   bp-bB-pP-tT
 *                    the pattern of `perf bench breakpoint thread` (the
 *                    benchmark of the seed's commit): B watches placed, then
 *                    P threads each create and join batches of T threads
 *                    that wait on a futex, until R batches are done; usecs
 *                    per thread created and joined. Thread creation is
 *                    where inherited breakpoints cost (the kernel copies
 *                    and accounts each): nothing of ours runs there. Beside
 *                    it, `kernel`: `perf bench -r R breakpoint thread -b B
 *                    -p P -t T` itself (Debian package linux-perf), whose
 *                    breakpoints are plain inherited perf events.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/futex.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <nanoprobe/nanoprobe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static char bytes[64] __attribute__((aligned(64))); /* what the watches watch */

static void count_fn(const struct np_watch_hit *h, void *data)
{
	__atomic_fetch_add((uint64_t *)data, 1, __ATOMIC_RELAXED);
}

/* --- threads that wait ----------------------------------------------------- */

static void futex_wait(uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

struct idlers {
	pthread_t *th;
	unsigned n;
	uint32_t done, stores; /* stores: each idler writes bytes[0] once */
	_Atomic unsigned ready;
};

static void *idle_thread(void *arg)
{
	struct idlers *s = arg;
	atomic_fetch_add(&s->ready, 1);
	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
		futex_wait(&s->done, 0);
	if (s->stores)
		*(volatile char *)&bytes[0] = 1;
	return NULL;
}

/* n threads; with `wait`, until each runs (perf's passive threads are
 * not waited for: the churn below does as it does). */
static int idlers_start(struct idlers *s, unsigned n, bool wait)
{
	s->th = calloc(n ? n : 1, sizeof(*s->th));
	s->n = 0;
	for (; s->th && s->n < n; s->n++)
		if (pthread_create(&s->th[s->n], NULL, idle_thread, s))
			return -1;
	while (wait && s->th && atomic_load(&s->ready) < n)
		sched_yield();
	return s->th ? 0 : -1;
}

static void idlers_stop(struct idlers *s, bool store)
{
	s->stores = store;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	futex_wake(&s->done);
	for (unsigned i = 0; i < s->n; i++)
		pthread_join(s->th[i], NULL);
	free(s->th);
}

/* --- create and destroy ------------------------------------------------------ */

static int raw_open(int tid)
{
	struct perf_event_attr a = {.type = PERF_TYPE_BREAKPOINT, .size = sizeof(a),
				    .bp_type = HW_BREAKPOINT_W, .bp_len = 1,
				    .bp_addr = (uint64_t)(uintptr_t)&bytes[1], .sample_period = 1,
				    .exclude_kernel = 1, .exclude_hv = 1, .inherit = 1,
				    .inherit_thread = 1, .sigtrap = 1, .remove_on_exec = 1};
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

#define MAX_THREADS 256

static int list_tids(int *tids, int cap)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	for (struct dirent *e; d && n < cap && (e = readdir(d));)
		if (e->d_name[0] != '.')
			tids[n++] = atoi(e->d_name);
	if (d)
		closedir(d);
	return n;
}

/* Open and close one inherited event on each thread, as a watch does. */
static double kernel_op(const int *tids, int n, int *failed)
{
	int fds[MAX_THREADS];
	double t0 = now_us();
	for (int i = 0; i < n; i++)
		fds[i] = raw_open(tids[i]);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
		else
			*failed = errno;
	return now_us() - t0;
}

static double watch_op(uint64_t *hits, int *failed)
{
	struct np_watch_opts o = NP_WATCH_OPTS(.data = hits);
	double t0 = now_us();
	struct np_watch *w = np_watch_attach(&bytes[1], 1, NP_WATCH_WRITE, count_fn, &o);
	if (!w)
		*failed = errno;
	np_watch_free(w);
	return now_us() - t0;
}

static void attach_row(const struct bench_opts *o, unsigned threads, enum bench_backend b,
		       double *kernel_us)
{
	struct bench_row r = {.kind = ROW_USECS, .backend = b, .cpus = 1, .threads = threads + 1};
	snprintf(r.bench, sizeof(r.bench), "watch-attach-%u", threads + 1);
	struct idlers s = {0};
	int tids[MAX_THREADS], failed = 0;
	if (idlers_start(&s, threads, true)) {
		snprintf(r.skipped, sizeof(r.skipped), "cannot start %u threads", threads);
		idlers_stop(&s, false);
		bench_emit(o, &r);
		return;
	}
	int n = list_tids(tids, MAX_THREADS);
	double spent = 0, budget = o->seconds * 1e6 / 4;
	uint64_t hits = 0;
	while (!failed && (r.ops < 10 || spent < budget)) {
		spent += b == BK_KERNEL ? kernel_op(tids, n, &failed) : watch_op(&hits, &failed);
		r.ops++;
	}
	if (b == BK_WATCH && !failed) {
		/* the last one counts a store from every thread: it was everywhere */
		struct np_watch_opts wo = NP_WATCH_OPTS(.data = &hits);
		struct np_watch *w = np_watch_attach(&bytes[0], 1, NP_WATCH_WRITE, count_fn, &wo);
		idlers_stop(&s, true);
		*(volatile char *)&bytes[0] = 2;
		/* the handler ran in between, on this thread: read again */
		r.hits = __atomic_load_n(&hits, __ATOMIC_SEQ_CST);
		np_watch_free(w);
	} else {
		idlers_stop(&s, false);
	}
	if (failed)
		snprintf(r.skipped, sizeof(r.skipped), "%s", strerror(failed));
	r.usecs_per_op = spent / (double)r.ops;
	if (b == BK_KERNEL && !failed)
		*kernel_us = r.usecs_per_op;
	else if (*kernel_us > 0 && !failed)
		r.vs_kernel = *kernel_us / r.usecs_per_op;
	bench_emit(o, &r);
}

/* --- perf bench breakpoint thread ---------------------------------------------- */

struct churn {
	unsigned batch;      /* threads per batch */
	_Atomic int left;    /* batches still to run */
};

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	while (atomic_fetch_sub(&c->left, 1) > 0) {
		struct idlers s = {0};
		if (idlers_start(&s, c->batch, false))
			exit(1);
		idlers_stop(&s, false);
	}
	return NULL;
}

/* B watches, then P threads churn R batches of T threads: usecs/thread. */
static double our_churn(unsigned b, unsigned p, unsigned t, unsigned rounds, int *failed)
{
	struct np_watch *w[8] = {0};
	uint64_t hits = 0;
	for (unsigned i = 0; i < b && i < 8 && !*failed; i++) {
		struct np_watch_opts o = NP_WATCH_OPTS(.data = &hits);
		if (!(w[i] = np_watch_attach(&bytes[8 + i], 1, NP_WATCH_RW, count_fn, &o)))
			*failed = errno;
	}
	struct churn c = {.batch = t, .left = (int)rounds};
	pthread_t th[64];
	double t0 = now_us();
	for (unsigned i = 0; i < p && !*failed; i++)
		pthread_create(&th[i], NULL, churn_thread, &c);
	for (unsigned i = 0; i < p && !*failed; i++)
		pthread_join(th[i], NULL);
	double us = now_us() - t0;
	for (unsigned i = 0; i < b && i < 8; i++)
		np_watch_free(w[i]);
	return us / rounds / t;
}

/* perf's own figure: "  <N> usecs/op" on its output. */
static int perf_churn(unsigned b, unsigned p, unsigned t, unsigned rounds, double *us, char *why,
		      size_t len)
{
	char cmd[256], line[256];
	if (access("/usr/bin/perf", X_OK)) {
		snprintf(why, len, "needs perf: Debian package linux-perf");
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "/usr/bin/perf bench -r %u breakpoint thread -b %u -p %u -t %u "
		 "2>&1", rounds, b, p, t);
	FILE *f = popen(cmd, "r");
	int found = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "usecs/op") && !strstr(line, "/cpu"))
			found = sscanf(line, " %lf usecs/op", us) == 1;
	int st = f ? pclose(f) : -1;
	if (!found || st) {
		snprintf(why, len, "perf bench breakpoint thread failed (status %d)", st);
		return -1;
	}
	return 0;
}

static void thread_rows(const struct bench_opts *o, unsigned b, unsigned p, unsigned t)
{
	char name[32];
	snprintf(name, sizeof(name), "bp-b%u-p%u-t%u", b, p, t);
	if (!bench_selected(o, name))
		return;
	/* about -d seconds at perf's own pace here (~60 usecs per thread) */
	unsigned rounds = (unsigned)(o->seconds * 1e6 / 60 / t);
	rounds = rounds < 4 ? 4 : rounds;
	double kernel_us = 0;
	static const enum bench_backend order[] = {BK_KERNEL, BK_WATCH};
	for (unsigned i = 0; i < 2; i++) {
		enum bench_backend be = b == 0 && order[i] == BK_WATCH ? BK_NONE : order[i];
		if (!o->backend[be])
			continue;
		struct bench_row r = {.kind = ROW_USECS, .backend = be, .cpus = p, .threads = t,
				      .breakpoints = b, .ops = (uint64_t)rounds * t};
		snprintf(r.bench, sizeof(r.bench), "%s", name);
		int failed = 0;
		if (be == BK_KERNEL) {
			if (!perf_churn(b, p, t, rounds, &r.usecs_per_op, r.skipped, sizeof(r.skipped)))
				kernel_us = r.usecs_per_op;
		} else {
			r.usecs_per_op = our_churn(b, p, t, rounds, &failed);
			if (failed)
				snprintf(r.skipped, sizeof(r.skipped), "%s", strerror(failed));
			else if (kernel_us > 0)
				r.vs_kernel = kernel_us / r.usecs_per_op;
		}
		bench_emit(o, &r);
	}
}

/* --- one store under a watch ----------------------------------------------------- */

/* The kernel's part alone: a breakpoint that only counts (what `perf
 * stat -e mem:ADDR:w` does), no signal. */
static int count_open(void *addr)
{
	struct perf_event_attr a = {.type = PERF_TYPE_BREAKPOINT, .size = sizeof(a),
				    .bp_type = HW_BREAKPOINT_W, .bp_len = 1,
				    .bp_addr = (uint64_t)(uintptr_t)addr, .exclude_kernel = 1,
				    .exclude_hv = 1};
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* What a watched store costs the thread that makes it: the trap, the
 * signal, the handler (a counter), the return; next to the store alone
 * and to the kernel counting it without a signal. */
static void store_rows(const struct bench_opts *o)
{
	if (!bench_selected(o, "watch-store"))
		return;
	static const enum bench_backend order[] = {BK_NONE, BK_KERNEL, BK_WATCH};
	double kernel_us = 0;
	for (unsigned k = 0; k < 3; k++) {
		enum bench_backend b = order[k];
		if (!o->backend[b])
			continue;
		struct bench_row r = {.kind = ROW_USECS, .backend = b, .cpus = 1, .threads = 1};
		snprintf(r.bench, sizeof(r.bench), "watch-store");
		uint64_t hits = 0, n = b == BK_NONE ? 1000000 : 2000;
		struct np_watch_opts wo = NP_WATCH_OPTS(.data = &hits);
		struct np_watch *w = b == BK_WATCH ? np_watch_attach(&bytes[32], 1, NP_WATCH_WRITE,
								     count_fn, &wo) : NULL;
		int fd = b == BK_KERNEL ? count_open(&bytes[32]) : -1;
		if ((b == BK_WATCH && !w) || (b == BK_KERNEL && fd < 0)) {
			snprintf(r.skipped, sizeof(r.skipped), "%s", strerror(errno));
			bench_emit(o, &r);
			continue;
		}
		double spent = 0;
		while (spent < o->seconds * 1e6 / 4 || r.ops < n) {
			double t0 = now_us();
			for (uint64_t i = 0; i < n; i++)
				*(volatile char *)&bytes[32] = (char)i;
			spent += now_us() - t0;
			r.ops += n;
		}
		r.hits = __atomic_load_n(&hits, __ATOMIC_SEQ_CST);
		if (fd >= 0 && read(fd, &r.hits, sizeof(r.hits)) != sizeof(r.hits))
			r.hits = 0;
		if (fd >= 0)
			close(fd);
		np_watch_free(w);
		r.usecs_per_op = spent / (double)r.ops;
		if (b == BK_KERNEL)
			kernel_us = r.usecs_per_op;
		else if (b == BK_WATCH && kernel_us > 0)
			r.vs_kernel = kernel_us / r.usecs_per_op;
		bench_emit(o, &r);
	}
}

int bench_watch(const struct bench_opts *o)
{
	static const unsigned alive[] = {0, 15, 63}; /* threads beside the bench's own */
	static const unsigned shapes[][3] = {{0, 2, 8}, {1, 2, 8}, {4, 2, 8}, {4, 2, 64}};
	if (np_watch_slots(NP_WATCH_WRITE) < 4) {
		struct bench_row r = {.kind = ROW_USECS, .backend = BK_WATCH, .cpus = 1};
		snprintf(r.bench, sizeof(r.bench), "watch-attach-1");
		snprintf(r.skipped, sizeof(r.skipped), "no hardware watchpoints here: %s",
			 strerror(errno ? errno : ENOSPC));
		if (bench_selected(o, r.bench))
			bench_emit(o, &r);
		return 0;
	}
	for (unsigned i = 0; i < sizeof(alive) / sizeof(*alive); i++) {
		char name[32];
		double kernel_us = 0;
		snprintf(name, sizeof(name), "watch-attach-%u", alive[i] + 1);
		if (!bench_selected(o, name))
			continue;
		if (o->backend[BK_KERNEL])
			attach_row(o, alive[i], BK_KERNEL, &kernel_us);
		if (o->backend[BK_WATCH])
			attach_row(o, alive[i], BK_WATCH, &kernel_us);
	}
	store_rows(o);
	for (unsigned i = 0; i < sizeof(shapes) / sizeof(*shapes); i++)
		thread_rows(o, shapes[i][0], shapes[i][1], shapes[i][2]);
	return 0;
}

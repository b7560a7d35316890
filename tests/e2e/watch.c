/* SPDX-License-Identifier: MIT */
/*
 * Watchpoints through the public API: exact counts from several writer
 * threads and from threads created after the attach, the accessing
 * instruction's pc and the values, every type, slot exhaustion (our own
 * watches, and a thread whose registers someone else holds), and every
 * bad input refused with EINVAL, its reason, and nothing left behind.
 *
 * Where the system has no hardware breakpoints for user space (qemu-user
 * answers perf_event_open with ENOSYS), the cases that need them say so
 * and pass; the bad-input cases run everywhere, since the engine refuses
 * those before it asks the kernel for anything.
 */
#include <dirent.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "e2e.h"
#include "test.h"

/* The store whose pc the hits must report: a few instructions into a
 * function with unwind information, so the engine's forward walk from the
 * function's start is what finds it. */
void watch_store(volatile uint64_t *p, uint64_t v);
extern const char watch_store_insn[];
#if defined(__x86_64__)
__asm__(".text\n.globl watch_store\n.type watch_store,@function\nwatch_store:\n"
	".cfi_startproc\n\tendbr64\n\tnop\n\tlea 0x0(%rdi),%rax\n\tmovabs $0x1122334455667788,%rdx\n"
	".globl watch_store_insn\nwatch_store_insn:\n\tmovq %rsi,(%rax)\n\tret\n"
	".cfi_endproc\n.size watch_store,.-watch_store\n");
#elif defined(__aarch64__)
__asm__(".text\n.globl watch_store\n.type watch_store,%function\nwatch_store:\n"
	".cfi_startproc\n\tnop\n\tmov x2, x0\n"
	".globl watch_store_insn\nwatch_store_insn:\n\tstr x1, [x2]\n\tret\n"
	".cfi_endproc\n.size watch_store,.-watch_store\n");
#elif defined(__riscv)
__asm__(".text\n.globl watch_store\n.type watch_store,%function\nwatch_store:\n"
	".cfi_startproc\n\tnop\n\tmv a2, a0\n"
	".globl watch_store_insn\nwatch_store_insn:\n\tsd a1, 0(a2)\n\tret\n"
	".cfi_endproc\n.size watch_store,.-watch_store\n");
#endif

static volatile uint64_t watched[8] __attribute__((aligned(64)));
static volatile uint64_t spare[8] __attribute__((aligned(64)));

#define MAX_TIDS 64
struct tally {
	_Atomic uint64_t hits, exact, at_store, changed, chain_breaks;
	_Atomic uint64_t last_new;
	_Atomic int tid[MAX_TIDS];
	_Atomic uint64_t per_tid[MAX_TIDS];
	uint64_t expect_pc; /* 0: any */
	_Atomic uint64_t bad_pc;
	bool store_back; /* the handler writes the watched word itself */
};

static void tally_fn(const struct np_watch_hit *h, void *data)
{
	struct tally *t = data;
	atomic_fetch_add(&t->hits, 1);
	if (h->flags & NP_WATCH_HIT_PC_EXACT)
		atomic_fetch_add(&t->exact, 1);
	if (t->expect_pc && h->pc == t->expect_pc)
		atomic_fetch_add(&t->at_store, 1);
	else if (t->expect_pc)
		atomic_store(&t->bad_pc, h->pc);
	if (h->flags & NP_WATCH_HIT_CHANGED)
		atomic_fetch_add(&t->changed, 1);
	for (int i = 0; i < MAX_TIDS; i++) {
		int seen = 0;
		if (atomic_compare_exchange_strong(&t->tid[i], &seen, h->tid) || seen == h->tid) {
			atomic_fetch_add(&t->per_tid[i], 1);
			break;
		}
	}
	if (t->store_back)
		*(volatile uint64_t *)h->addr = h->new_value; /* not reported again */
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Whether this system has hardware breakpoints for us; if not, why. */
static bool have_hw(const char *test)
{
	static int slots = -2, err;
	if (slots == -2) {
		slots = np_watch_slots(NP_WATCH_WRITE);
		err = errno;
	}
	if (slots < 0)
		printf("# %s: no hardware watchpoints here (%s): not run\n", test, strerror(err));
	return slots > 0;
}

static struct np_watch *watch(volatile void *addr, size_t len, enum np_watch_type type,
			      struct tally *t)
{
	struct np_watch_opts o = NP_WATCH_OPTS(.data = t, .name = "test");
	return np_watch_attach((void *)addr, len, type, tally_fn, &o);
}

/* --- writers ---------------------------------------------------------------- */

struct writer {
	volatile uint64_t *p;
	unsigned n;
	uint64_t base;
	pthread_t th;
	int spawn; /* threads it starts itself, each a writer like it */
};

static void *write_loop(void *arg)
{
	struct writer *w = arg;
	struct writer kids[4];
	for (int k = 0; k < w->spawn && k < 4; k++) {
		kids[k] = (struct writer){w->p, w->n, w->base + 1000000u * (k + 1), 0, 0};
		pthread_create(&kids[k].th, NULL, write_loop, &kids[k]);
	}
	for (unsigned i = 0; i < w->n; i++)
		watch_store(w->p, w->base + i + 1);
	for (int k = 0; k < w->spawn && k < 4; k++)
		pthread_join(kids[k].th, NULL);
	return NULL;
}

static void run_writers(volatile uint64_t *p, int nthreads, unsigned n, int spawn)
{
	struct writer w[16];
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct writer){p, n, (uint64_t)(i + 1) << 32, 0, spawn};
		pthread_create(&w[i].th, NULL, write_loop, &w[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i].th, NULL);
}

/* Threads that exist before the attach and wait for the word to write. */
struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int go;
};

struct waiter {
	struct gate *g;
	struct writer w;
};

static void *wait_then_write(void *arg)
{
	struct waiter *wt = arg;
	pthread_mutex_lock(&wt->g->m);
	while (!wt->g->go)
		pthread_cond_wait(&wt->g->c, &wt->g->m);
	pthread_mutex_unlock(&wt->g->m);
	return write_loop(&wt->w);
}

/* --- cases ------------------------------------------------------------------ */

TEST(slots_come_from_the_kernel)
{
	if (!have_hw("slots"))
		return;
	int data = np_watch_slots(NP_WATCH_WRITE), insn = np_watch_slots(NP_WATCH_EXEC);
	CHECK(data > 0 && insn > 0);
#if defined(__x86_64__)
	CHECK_EQ(data, 4); /* DR0-DR3, shared by every type */
	CHECK_EQ(insn, 4);
#endif
}

TEST(exact_counts_from_threads_alive_at_attach)
{
	if (!have_hw("alive at attach"))
		return;
	enum { N = 6, PER = 2000 };
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	struct waiter wt[N];
	for (int i = 0; i < N; i++) {
		wt[i] = (struct waiter){&g, {&watched[0], PER, (uint64_t)(i + 1) << 32, 0, 0}};
		pthread_create(&wt[i].w.th, NULL, wait_then_write, &wt[i]);
	}
	struct tally t = {.expect_pc = (uint64_t)(uintptr_t)watch_store_insn};
	e2e_log_capture();
	struct np_watch *w = watch(&watched[0], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	pthread_mutex_lock(&g.m);
	g.go = 1;
	pthread_cond_broadcast(&g.c);
	pthread_mutex_unlock(&g.m);
	for (int i = 0; i < N; i++)
		pthread_join(wt[i].w.th, NULL);
	CHECK_EQ(np_watch_hits(w), N * PER);
	CHECK_EQ(atomic_load(&t.hits), N * PER);
	CHECK_EQ(atomic_load(&t.exact), N * PER);
	CHECK_EQ(atomic_load(&t.at_store), N * PER);
	if (atomic_load(&t.bad_pc))
		printf("# a hit reported pc %#llx, the store is at %p\n",
		       (unsigned long long)atomic_load(&t.bad_pc), (void *)watch_store_insn);
	int writers = 0;
	for (int i = 0; i < MAX_TIDS; i++)
		if (atomic_load(&t.tid[i])) {
			writers++;
			CHECK_EQ(atomic_load(&t.per_tid[i]), PER);
		}
	CHECK_EQ(writers, N);
	CHECK_EQ(np_watch_missed(w), 0);
	np_watch_free(w);
}

TEST(threads_created_after_attach_are_watched)
{
	if (!have_hw("created after"))
		return;
	struct tally t = {0};
	struct np_watch *w = watch(&watched[1], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	/* 3 threads, each starting 2 of its own: 9 writers born after the attach */
	run_writers(&watched[1], 3, 500, 2);
	CHECK_EQ(np_watch_hits(w), 9 * 500);
	int writers = 0;
	for (int i = 0; i < MAX_TIDS; i++)
		writers += atomic_load(&t.tid[i]) != 0;
	CHECK_EQ(writers, 9);
	np_watch_free(w);
}

/* Threads that keep appearing while the watch is placed: a pass whose
 * thread list grew is undone and placed again, so when attach returns,
 * every thread has the watch once, and every store made after that is
 * counted; or, if threads never stopped appearing, EAGAIN and nothing left. */
struct churn {
	_Atomic int stop, phase, live;
	_Atomic uint64_t expected, spawned;
};

static void *churn_child(void *arg)
{
	struct churn *c = arg;
	if (atomic_load(&c->phase)) { /* attach has returned: must be seen */
		atomic_fetch_add(&c->expected, 1);
		watch_store(&watched[6], 1);
	} else {
		spare[7] = 1;
	}
	atomic_fetch_sub(&c->live, 1);
	return NULL;
}

/* At most 32 children alive: an event, so a descriptor, per thread. */
static void *churn_spawner(void *arg)
{
	struct churn *c = arg;
	while (!atomic_load(&c->stop)) {
		pthread_t th;
		if (atomic_load(&c->live) >= 32) {
			sched_yield();
			continue;
		}
		atomic_fetch_add(&c->live, 1);
		if (pthread_create(&th, NULL, churn_child, c) == 0) {
			pthread_detach(th);
			atomic_fetch_add(&c->spawned, 1);
		} else {
			atomic_fetch_sub(&c->live, 1);
		}
	}
	return NULL;
}

TEST(threads_appearing_during_attach_are_all_covered)
{
	if (!have_hw("churn"))
		return;
	static struct churn c;
	struct tally t = {0};
	pthread_t sp[2];
	int fds = open_fds();
	for (int i = 0; i < 2; i++)
		pthread_create(&sp[i], NULL, churn_spawner, &c);
	while (atomic_load(&c.spawned) < 50)
		usleep(100);
	errno = 0;
	struct np_watch *w = watch(&watched[6], 8, NP_WATCH_WRITE, &t);
	int err = errno;
	atomic_store(&c.phase, 1);
	uint64_t until = atomic_load(&c.spawned) + 200;
	while (atomic_load(&c.spawned) < until)
		usleep(100);
	atomic_store(&c.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(sp[i], NULL);
	while (atomic_load(&c.live)) /* the last detached children finish */
		usleep(1000);
	usleep(10000); /* and are gone */
	if (w) {
		printf("# placed while %llu threads were created; %llu stores after\n",
		       (unsigned long long)atomic_load(&c.spawned),
		       (unsigned long long)atomic_load(&c.expected));
		CHECK(atomic_load(&c.expected) >= 200);
		CHECK_EQ(np_watch_hits(w), atomic_load(&c.expected));
		np_watch_free(w);
	} else {
		printf("# threads kept appearing: EAGAIN\n");
		CHECK_EQ(err, EAGAIN);
	}
	CHECK_EQ(open_fds(), fds);
}

/* A handler that records every (old, new) pair in order. */
struct pairs {
	_Atomic unsigned n;
	uint64_t old[4096], neu[4096];
};

static void pairs_fn(const struct np_watch_hit *h, void *data)
{
	struct pairs *p = data;
	unsigned i = atomic_fetch_add(&p->n, 1);
	if (i < 4096 && (h->flags & NP_WATCH_HIT_VALUE)) {
		p->old[i] = h->old_value;
		p->neu[i] = h->new_value;
	}
}

TEST(values_one_writer_old_is_previous_new)
{
	if (!have_hw("value pairs"))
		return;
	static struct pairs p;
	memset(&p, 0, sizeof(p));
	watched[3] = 41;
	struct np_watch_opts o = NP_WATCH_OPTS(.data = &p);
	struct np_watch *w = np_watch_attach((void *)&watched[3], 8, NP_WATCH_WRITE, pairs_fn, &o);
	CHECK(w != NULL);
	for (uint64_t i = 0; i < 50; i++)
		watch_store(&watched[3], 42 + i);
	CHECK_EQ(atomic_load(&p.n), 50);
	for (unsigned i = 0; i < 50; i++) {
		CHECK_EQ(p.old[i], 41 + i);
		CHECK_EQ(p.neu[i], 42 + i);
	}
	np_watch_free(w);
}

TEST(values_concurrent_writers_still_chain)
{
	if (!have_hw("concurrent values"))
		return;
	static struct pairs p;
	memset(&p, 0, sizeof(p));
	watched[4] = 0;
	struct np_watch_opts o = NP_WATCH_OPTS(.data = &p);
	struct np_watch *w = np_watch_attach((void *)&watched[4], 8, NP_WATCH_WRITE, pairs_fn, &o);
	CHECK(w != NULL);
	run_writers(&watched[4], 4, 1000, 0);
	unsigned n = atomic_load(&p.n);
	CHECK_EQ(n, 4000);
	CHECK_EQ(np_watch_hits(w), 4000);
	/* handlers exchange the shadow: the old values are the new values of
	 * the hits before them, so each value written is the old value of at
	 * most one hit, and the first old value is the initial 0 */
	unsigned zeros = 0;
	for (unsigned i = 0; i < n && i < 4096; i++)
		zeros += p.old[i] == 0;
	CHECK_EQ(zeros, 1);
	np_watch_free(w);
}

/* A store inside libc (memset: no symbol table, only its unwind
 * information): the pc is still found, and lies before where it resumes. */
struct lib_hit {
	_Atomic unsigned n, exact;
	_Atomic uint64_t pc, resume;
};

static void lib_fn(const struct np_watch_hit *h, void *data)
{
	struct lib_hit *l = data;
	atomic_fetch_add(&l->n, 1);
	if (h->flags & NP_WATCH_HIT_PC_EXACT)
		atomic_fetch_add(&l->exact, 1);
	atomic_store(&l->pc, h->pc);
	atomic_store(&l->resume, np_ctx_pc(h->ctx));
}

TEST(a_store_in_a_library_has_its_instruction_found)
{
	if (!have_hw("library store"))
		return;
	static char buf[256] __attribute__((aligned(64)));
	void *(*volatile set)(void *, int, size_t) = memset;
	struct lib_hit l = {0};
	struct np_watch_opts o = NP_WATCH_OPTS(.data = &l);
	struct np_watch *w = np_watch_attach(&buf[64], 8, NP_WATCH_WRITE, lib_fn, &o);
	CHECK(w != NULL);
	set(buf, 1, sizeof(buf));
	CHECK(atomic_load(&l.n) >= 1);
	CHECK_EQ(atomic_load(&l.exact), atomic_load(&l.n));
	uint64_t pc = atomic_load(&l.pc), resume = atomic_load(&l.resume);
#if defined(__x86_64__) /* a trap: it resumes after the store */
	CHECK(pc < resume && resume - pc <= 15);
#else
	CHECK(pc == resume);
#endif
	np_watch_free(w);
}

TEST(detach_removes_the_watch_from_every_thread)
{
	if (!have_hw("detach"))
		return;
	int fds = open_fds();
	struct tally t = {0};
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	struct waiter wt = {&g, {&watched[5], 100, 0, 0, 1}};
	pthread_create(&wt.w.th, NULL, wait_then_write, &wt);
	struct np_watch *w = watch(&watched[5], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	CHECK(open_fds() > fds); /* an event per thread */
	run_writers(&watched[5], 2, 10, 1);
	CHECK_EQ(np_watch_hits(w), 40);
	CHECK_EQ(np_watch_detach(w), 0);
	CHECK_EQ(open_fds(), fds);
	/* the thread alive at attach, its child and new threads: no hit */
	pthread_mutex_lock(&g.m);
	g.go = 1;
	pthread_cond_broadcast(&g.c);
	pthread_mutex_unlock(&g.m);
	pthread_join(wt.w.th, NULL);
	run_writers(&watched[5], 2, 10, 1);
	watched[5] = 1;
	CHECK_EQ(np_watch_hits(w), 40);
	CHECK_EQ(atomic_load(&t.hits), 40);
	np_watch_free(w);
	/* every register is free again */
	struct np_watch *again[8];
	int slots = np_watch_slots(NP_WATCH_WRITE);
	for (int i = 0; i < slots; i++)
		CHECK((again[i] = watch(&spare[i], 8, NP_WATCH_WRITE, &t)) != NULL);
	for (int i = 0; i < slots; i++)
		np_watch_free(again[i]);
}

TEST(slot_exhaustion_by_our_own_watches_is_enospc)
{
	if (!have_hw("slot exhaustion"))
		return;
	int slots = np_watch_slots(NP_WATCH_WRITE);
	struct tally t = {0};
	struct np_watch *w[8] = {0};
	CHECK(slots > 0 && slots < 8);
	for (int i = 0; i < slots; i++)
		CHECK((w[i] = watch(&spare[i], 8, NP_WATCH_WRITE, &t)) != NULL);
	int fds = open_fds();
	e2e_log_capture();
	errno = 0;
	CHECK(watch(&watched[6], 8, NP_WATCH_WRITE, &t) == NULL);
	CHECK_EQ(errno, ENOSPC);
	CHECK(strstr(e2e_log_state.last, "debug registers") != NULL);
	printf("# %s\n", e2e_log_state.last);
	CHECK_EQ(open_fds(), fds);
	/* an instruction breakpoint shares the registers on x86-64 */
	errno = 0;
	struct np_watch *x = watch((void *)(uintptr_t)watch_store, 0, NP_WATCH_EXEC, &t);
	if (np_watch_slots(NP_WATCH_EXEC) == slots) /* one pool */
		CHECK(x == NULL && errno == ENOSPC);
	np_watch_free(x);
	watched[6] = 3;
	CHECK_EQ(atomic_load(&t.hits), 0);
	/* one given back: the next fits */
	np_watch_free(w[0]);
	w[0] = watch(&watched[6], 8, NP_WATCH_WRITE, &t);
	CHECK(w[0] != NULL);
	watched[6] = 4;
	CHECK_EQ(atomic_load(&t.hits), 1);
	for (int i = 0; i < slots; i++)
		np_watch_free(w[i]);
}

/* A thread whose debug registers someone else holds (as a debugger's
 * would be): the watch cannot be placed on it, so it is placed nowhere. */
struct hog {
	int fds[8], n;
	_Atomic int tid, stop;
	pthread_t th;
};

static void *hog_thread(void *arg)
{
	struct hog *h = arg;
	atomic_store(&h->tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&h->stop))
		usleep(1000);
	return NULL;
}

static int hog_registers(struct hog *h)
{
	static char bytes[8];
	h->n = 0;
	for (int i = 0; i < 8; i++) {
		struct perf_event_attr a = {.type = PERF_TYPE_BREAKPOINT, .size = sizeof(a),
					    .bp_type = HW_BREAKPOINT_W, .bp_len = 1,
					    .bp_addr = (uint64_t)(uintptr_t)&bytes[i],
					    .exclude_kernel = 1, .disabled = 1};
		long fd = syscall(SYS_perf_event_open, &a, atomic_load(&h->tid), -1, -1,
				  PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			break;
		h->fds[h->n++] = (int)fd;
	}
	return h->n;
}

TEST(a_thread_without_free_registers_refuses_the_watch_everywhere)
{
	if (!have_hw("busy thread"))
		return;
	struct hog h = {0};
	pthread_create(&h.th, NULL, hog_thread, &h);
	while (!atomic_load(&h.tid))
		usleep(100);
	CHECK(hog_registers(&h) > 0);
	int fds = open_fds();
	struct tally t = {0};
	char want[64];
	snprintf(want, sizeof(want), "thread %d ", atomic_load(&h.tid));
	e2e_log_capture();
	errno = 0;
	CHECK(watch(&watched[7], 8, NP_WATCH_WRITE, &t) == NULL);
	CHECK_EQ(errno, ENOSPC);
	CHECK(strstr(e2e_log_state.last, want) != NULL);
	printf("# %s\n", e2e_log_state.last);
	CHECK_EQ(open_fds(), fds); /* the events already placed are gone */
	watched[7] = 1;
	run_writers(&watched[7], 2, 10, 0);
	CHECK_EQ(atomic_load(&t.hits), 0);
	for (int i = 0; i < h.n; i++)
		close(h.fds[i]);
	struct np_watch *w = watch(&watched[7], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	run_writers(&watched[7], 2, 10, 0);
	CHECK_EQ(atomic_load(&t.hits), 20);
	np_watch_free(w);
	atomic_store(&h.stop, 1);
	pthread_join(h.th, NULL);
}

static void refused(void *addr, size_t len, enum np_watch_type type, const char *reason)
{
	struct tally t = {0};
	int fds = open_fds();
	e2e_log_capture();
	errno = 0;
	struct np_watch *w = watch(addr, len, type, &t);
	CHECK(w == NULL);
	CHECK_EQ(errno, EINVAL);
	if (!strstr(e2e_log_state.last, reason)) {
		printf("# want \"%s\" in: %s\n", reason, e2e_log_state.last);
		CHECK(0);
	}
	CHECK_EQ(open_fds(), fds);
	np_watch_free(w);
}

TEST(bad_inputs_are_einval_with_their_reason)
{
	static uint64_t words[2] __attribute__((aligned(16)));
	refused(words, 16, NP_WATCH_WRITE, "length 16");
	refused(words, 0, NP_WATCH_WRITE, "length 0");
#if defined(__x86_64__)
	refused(words, 3, NP_WATCH_WRITE, "length 3");
	refused((char *)words + 1, 4, NP_WATCH_WRITE, "not 4-byte aligned");
	refused((char *)words + 4, 8, NP_WATCH_RW, "not 8-byte aligned");
#else
	refused(words, 9, NP_WATCH_WRITE, "length 9");
	refused((char *)words + 6, 4, NP_WATCH_WRITE, "crosses an 8-byte boundary");
#endif
	/* below vm.mmap_min_addr nothing is ever mapped (a page just unmapped
	 * may be mapped again by another thread before the attach looks) */
	refused((void *)0x1000, 8, NP_WATCH_WRITE, "nothing is mapped");
	long page = sysconf(_SC_PAGESIZE);
	char *noread = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	refused(noread, 8, NP_WATCH_WRITE, "not readable");
	munmap(noread, (size_t)page);
	refused(words, 8, NP_WATCH_EXEC, "not executable");
	refused(words, 8, (enum np_watch_type)2, "unknown watch type");
	/* nothing was taken: every register is still there */
	if (have_hw("bad inputs: registers after")) {
		struct tally t = {0};
		struct np_watch *w[8];
		int slots = np_watch_slots(NP_WATCH_WRITE);
		for (int i = 0; i < slots; i++)
			CHECK((w[i] = watch(&spare[i], 8, NP_WATCH_WRITE, &t)) != NULL);
		for (int i = 0; i < slots; i++)
			np_watch_free(w[i]);
	}
}

TEST(overlapping_watches_are_refused)
{
	if (!have_hw("overlap"))
		return;
	struct tally t = {0};
	struct np_watch *w = watch(&watched[0], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	int fds = open_fds();
	e2e_log_capture();
	errno = 0;
	CHECK(watch((char *)&watched[0] + 4, 4, NP_WATCH_RW, &t) == NULL);
	CHECK_EQ(errno, EBUSY);
	CHECK(strstr(e2e_log_state.last, "overlaps watch") != NULL);
	CHECK_EQ(open_fds(), fds);
	struct np_watch *next = watch(&watched[1], 8, NP_WATCH_RW, &t); /* beside it: fine */
	CHECK(next != NULL);
	np_watch_free(next);
	np_watch_free(w);
}

TEST(read_write_watch_counts_loads_and_stores)
{
	if (!have_hw("rw"))
		return;
	struct tally t = {0};
	watched[0] = 5;
	struct np_watch *w = watch(&watched[0], 8, NP_WATCH_RW, &t);
	CHECK(w != NULL);
	uint64_t sum = 0;
	for (int i = 0; i < 30; i++)
		sum += watched[0]; /* volatile: one load each */
	for (int i = 0; i < 10; i++)
		watch_store(&watched[0], 100 + (uint64_t)i);
	CHECK_EQ(sum, 150);
	CHECK_EQ(np_watch_hits(w), 40);
	CHECK_EQ(atomic_load(&t.changed), 10); /* the stores, each a new value */
	np_watch_free(w);
}

static E2E_NOIPA uint64_t watched_fn(uint64_t x)
{
	return x * 5 + 2;
}
static uint64_t (*volatile watched_fn_p)(uint64_t) = watched_fn;

static void *call_watched_fn(void *arg)
{
	for (int i = 0; i < 25; i++)
		watched_fn_p((uint64_t)i);
	return arg;
}

TEST(exec_watch_counts_calls_at_the_instruction)
{
	if (!have_hw("exec"))
		return;
	struct tally t = {.expect_pc = (uint64_t)(uintptr_t)watched_fn};
	struct np_watch *w = watch((void *)(uintptr_t)watched_fn, 0, NP_WATCH_EXEC, &t);
	CHECK(w != NULL);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, call_watched_fn, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(np_watch_hits(w), 50);
	CHECK_EQ(atomic_load(&t.at_store), 50);
	CHECK_EQ(atomic_load(&t.changed), 0);
	np_watch_free(w);
}

TEST(a_store_from_the_handler_is_missed_not_reported)
{
	if (!have_hw("store from handler"))
		return;
	struct tally t = {.store_back = true};
	struct np_watch *w = watch(&watched[1], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	for (int i = 0; i < 20; i++)
		watch_store(&watched[1], (uint64_t)i);
	CHECK_EQ(np_watch_hits(w), 20);
	CHECK_EQ(np_watch_missed(w), 20);
	np_watch_free(w);
}

TEST(a_forked_child_is_not_watched)
{
	if (!have_hw("fork"))
		return;
	struct tally t = {0};
	struct np_watch *w = watch(&watched[2], 8, NP_WATCH_WRITE, &t);
	CHECK(w != NULL);
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t before = atomic_load(&t.hits);
		run_writers(&watched[2], 2, 10, 0);
		_exit(atomic_load(&t.hits) == before ? 0 : 1);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	watch_store(&watched[2], 9);
	CHECK_EQ(np_watch_hits(w), 1);
	np_watch_free(w);
}

TEST_MAIN()

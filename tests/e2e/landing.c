/* SPDX-License-Identifier: MIT */
/*
 * A thread on its way back from a retired trampoline must not land inside
 * a jump placed since (docs/design.md, "Retiring trampolines").
 *
 * A trampoline jumps back to its region's end. Once the region is gone,
 * a new region may start before that address, and its 5-byte jump then
 * covers it: a thread still in the old trampoline would run the middle of
 * the jump. Here the thread is parked in the old trampoline for as long
 * as the test wants, in a read() the probed function makes from its
 * displaced bytes (landing_x86_64.S): probe +0 (region [0, 7), back to
 * +7), park a thread, detach, probe +4 (a jump over [4, 9)), let the
 * thread go. It must come back with read()'s result, whatever strategy
 * the second probe got; before the engine looked for such threads it ran
 * the jump's displacement bytes and died or returned garbage.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

extern uint8_t t_park_single[], t_park_batch[], t_park_rounds[], t_park_deaf[];
/* torture_x86_64.S: t_cmp +0 makes [0, 5), back to +5, and +2 a jump over
 * [2, 7); t_short +4 makes [4, 9), back to +9, and +8 a jump over [8, 13) */
extern uint8_t t_cmp[], t_short[];
typedef long park_fn(int fd, void *buf, size_t len);

struct parked {
	uint8_t *fn;
	int fd;
	long result;
	pid_t tid;
};

static void *park(void *arg)
{
	struct parked *p = arg;
	char c;

	__atomic_store_n(&p->tid, (pid_t)gettid(), __ATOMIC_RELEASE);
	p->result = ((park_fn *)(void *)p->fn)(p->fd, &c, 1);
	return NULL;
}

/* The user pc of a thread blocked in read(), 0 when it is not:
 * /proc/self/task/TID/syscall reads "nr args... sp pc". */
static uint64_t read_pc(pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char *got = fgets(line, sizeof line, f);
	fclose(f);
	if (!got || strncmp(line, "0 ", 2) != 0)
		return 0;
	const char *last = strrchr(line, ' ');
	return last ? strtoull(last + 1, NULL, 16) : 0;
}

/* Up to 10 s for the parked thread to block in read() at a pc that
 * 'where' accepts. */
static int wait_parked(const struct parked *pk, bool (*where)(uint64_t pc, const uint8_t *fn))
{
	for (int i = 0; i < 10000; i++) {
		pid_t tid = __atomic_load_n(&pk->tid, __ATOMIC_ACQUIRE);
		uint64_t pc = tid ? read_pc(tid) : 0;
		if (pc && where(pc, pk->fn))
			return 1;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return 0;
}

/* A bystander: a thread waiting in epoll_wait with no timeout while the
 * patch that lands inside goes in with the other threads stopped. It
 * must not be stopped: a signal handler that ran there would fail the
 * call with EINTR (blocked threads are judged from outside). */
struct bystander {
	int ep, ev;
	long result;
	pid_t tid;
	pthread_t th;
};

static void *bystand(void *arg)
{
	struct bystander *b = arg;
	struct epoll_event e;
	__atomic_store_n(&b->tid, (pid_t)gettid(), __ATOMIC_RELEASE);
	b->result = epoll_wait(b->ep, &e, 1, -1);
	if (b->result < 0)
		b->result = -errno;
	return NULL;
}

static void bystander_start(struct bystander *b)
{
	struct epoll_event e = {.events = EPOLLIN};
	b->ep = epoll_create1(EPOLL_CLOEXEC);
	b->ev = eventfd(0, EFD_CLOEXEC);
	CHECK_EQ(epoll_ctl(b->ep, EPOLL_CTL_ADD, b->ev, &e), 0);
	b->tid = 0;
	CHECK_EQ(pthread_create(&b->th, NULL, bystand, b), 0);
	char path[64], line[64] = "running";
	for (int i = 0; i < 10000 && (line[0] == 'r' || line[0] == '-'); i++) {
		nanosleep(&(struct timespec){0, 1000000}, NULL);
		pid_t tid = __atomic_load_n(&b->tid, __ATOMIC_ACQUIRE);
		snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
		FILE *f = tid ? fopen(path, "re") : NULL;
		if (f && !fgets(line, sizeof line, f))
			line[0] = 'r';
		if (f)
			fclose(f);
	}
}

static void bystander_end(struct bystander *b)
{
	uint64_t one = 1;
	CHECK_EQ(write(b->ev, &one, sizeof one), (long)sizeof one);
	pthread_join(b->th, NULL);
	CHECK_EQ(b->result, 1); /* its one event, not -EINTR */
	close(b->ep);
	close(b->ev);
}

/* In the trampoline, that is outside fn. */
static bool outside_fn(uint64_t pc, const uint8_t *fn)
{
	return pc < (uintptr_t)fn || pc >= (uintptr_t)fn + 16;
}

static struct np_probe *attach_one(uint8_t *at, struct e2e_counter *c, int batch)
{
	struct np_probe_opts o = e2e_opts(e2e_count, c, NP_STRATEGY_AUTO);
	const struct np_probe_opts *op = &o;
	void *addr = at;
	struct np_probe *p = NULL;
	int err = 0;

	c->addr = (uintptr_t)at;
	if (!batch)
		return np_probe_attach(at, &o);
	struct np_probe_many_opts mo =
		NP_PROBE_MANY_OPTS(.cnt = 1, .addrs = &addr, .opts = &op, .probes = &p, .errs = &err);
	CHECK_EQ(np_probe_attach_many(&mo), 1);
	return p;
}

static void land_after_retire(uint8_t *fn, int batch)
{
	uint8_t pristine[16];
	struct e2e_counter c0 = {0}, c4 = {0};
	struct parked pk = {.fn = fn};
	struct bystander by;
	int pfd[2];
	pthread_t th;

	memcpy(pristine, fn, sizeof pristine);
	CHECK_EQ(pipe(pfd), 0);
	pk.fd = pfd[0];
	e2e_log_capture();

	struct np_probe *p0 = attach_one(fn, &c0, batch);
	CHECK(p0 != NULL);
	if (!p0)
		return;
	CHECK_EQ(np_probe_strategy(p0), NP_STRATEGY_JUMP); /* [0, 7): the read goes along */
	CHECK_EQ(pthread_create(&th, NULL, park, &pk), 0);
	CHECK(wait_parked(&pk, outside_fn));
	CHECK_EQ(c0.hits, 1);
	CHECK_EQ(np_probe_detach(p0), 0); /* the thread is in no handler */
	np_probe_free(p0);
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);

	/* +4: a jump there would cover +7, where the parked thread goes */
	bystander_start(&by);
	struct np_probe *p4 = attach_one(fn + 4, &c4, batch);
	bystander_end(&by);
	CHECK(p4 != NULL);
	printf("# %s: the probe at +4 got %s; log: %s\n", batch ? "batch" : "single",
	       p4 ? np_strategy_name(np_probe_strategy(p4)) : "nothing", e2e_log_state.last);

	CHECK_EQ(write(pfd[1], "x", 1), 1);
	pthread_join(th, NULL);
	CHECK_EQ(pk.result, 1);

	/* the probe works, and the function too */
	char b;
	CHECK_EQ(write(pfd[1], "y", 1), 1);
	CHECK_EQ(((park_fn *)(void *)fn)(pfd[0], &b, 1), 1);
	CHECK_EQ(b, 'y');
	if (p4) {
		CHECK_EQ(c4.hits, 1);
		CHECK_EQ(np_probe_hits(p4), 1);
		CHECK_EQ(c4.bad_pc, 0);
		CHECK_EQ(np_probe_detach(p4), 0);
		np_probe_free(p4);
	}
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);
	close(pfd[0]);
	close(pfd[1]);
}

TEST(park_functions_have_the_expected_layout)
{
	static const uint8_t park_bytes[11] = {0x31, 0xc0, 0x0f, 0x05, 0x48, 0x89,
					       0xc1, 0x48, 0x89, 0xc8, 0xc3};

	CHECK(memcmp(t_park_single, park_bytes, sizeof park_bytes) == 0);
	CHECK(memcmp(t_park_batch, park_bytes, sizeof park_bytes) == 0);
	CHECK(memcmp(t_park_rounds, park_bytes, sizeof park_bytes) == 0);
	CHECK(memcmp(t_park_deaf, park_bytes, sizeof park_bytes) == 0);
	/* the storm's: lea at t_short+4, pop at +8; cmp at t_cmp+2, setb at +5 */
	CHECK_EQ(t_short[4], 0x48);
	CHECK_EQ(t_short[8], 0x5b);
	CHECK_EQ(t_cmp[2], 0x48);
	CHECK_EQ(t_cmp[5], 0x0f);
}

TEST(a_thread_in_a_retired_trampoline_lands_on_the_code_it_left)
{
	land_after_retire(t_park_single, 0);
}

TEST(the_same_when_the_new_probe_comes_in_a_batch)
{
	land_after_retire(t_park_batch, 1);
}

/* A thread blocked in a system call that returns strictly inside the
 * bytes a jump would replace cannot be moved without interrupting the
 * call (a handler that ran there would fail a nanosleep or an epoll_wait
 * with EINTR): the patch is refused and the thread is not sent the
 * engine's signal. Parked in read() at +4 of the original code, strictly
 * inside the [0, 7) a probe at +0 covers, with the real-time signals
 * blocked, so that one sent would stay pending where /proc shows it. */
#define SEC 1000000000LL
static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void rt_signals(int how)
{
	sigset_t rt;
	sigemptyset(&rt);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(&rt, sig);
	pthread_sigmask(how, &rt, NULL);
}

static void *park_blocked(void *arg)
{
	rt_signals(SIG_BLOCK);
	park(arg);
	rt_signals(SIG_UNBLOCK);
	return NULL;
}

/* After the syscall, at +4 of the original code: strictly inside the
 * [0, 7) a probe at +0 covers. */
static bool inside_fn(uint64_t pc, const uint8_t *fn)
{
	return pc == (uintptr_t)fn + 4;
}

/* The signals pending for thread tid alone (SigPnd). */
static uint64_t pending_of(pid_t tid)
{
	char path[64], line[256];
	uint64_t v = 0;
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "SigPnd:", 7))
			v = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	return v;
}

TEST(a_thread_blocked_inside_the_bytes_is_left_in_its_call)
{
	uint8_t *fn = t_park_rounds, pristine[16];
	struct e2e_counter c = {.addr = (uintptr_t)fn};
	struct np_probe_opts jump = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	struct np_probe_opts any = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);
	struct parked pk = {.fn = fn};
	pthread_t tp;
	int pfd[2];

	memcpy(pristine, fn, sizeof pristine);
	CHECK_EQ(pipe(pfd), 0);
	pk.fd = pfd[0];
	e2e_log_capture();
	CHECK_EQ(pthread_create(&tp, NULL, park_blocked, &pk), 0);
	CHECK(wait_parked(&pk, inside_fn));

	errno = 0;
	CHECK(np_probe_attach(fn, &jump) == NULL);
	CHECK_EQ(errno, EAGAIN);
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);
	CHECK_EQ(pending_of(pk.tid) >> (SIGRTMIN - 1), 0); /* no real-time signal sent */
	struct np_probe *p = np_probe_attach(fn, &any); /* a breakpoint at +0 */
	CHECK(p != NULL);
	CHECK_EQ(p ? np_probe_strategy(p) : NP_STRATEGY_AUTO, NP_STRATEGY_TRAP);

	CHECK_EQ(write(pfd[1], "x", 1), 1);
	pthread_join(tp, NULL);
	CHECK_EQ(pk.result, 1); /* read() returned, and the code after it ran */
	char b;
	CHECK_EQ(write(pfd[1], "y", 1), 1);
	CHECK_EQ(((park_fn *)(void *)fn)(pfd[0], &b, 1), 1);
	CHECK_EQ(b, 'y');
	if (p) {
		CHECK_EQ(c.hits, 1); /* this call; the parked thread was past +0 */
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);
	close(pfd[0]);
	close(pfd[1]);
}

/* Answers of an earlier round must not stand in for another thread's.
 * The engine's signal is a real-time one: a thread that blocks it keeps
 * one instance queued per round it was asked in. Two running threads
 * block it. The first attach waits 2 s for them and fails (EAGAIN).
 * During the second, one unblocks and answers twice, for both rounds,
 * while the other cannot answer yet. Counting answers took that for
 * everyone's, and the jump went in while the second could still have
 * been inside its bytes. Each answer names its thread and round: the
 * patch waits for the second one, which answers once it unblocks. */
static int64_t rounds_t1; /* when the first attach returned (ns); 0 before */
static volatile int late_unblocked;
static int rounds_blocked; /* threads that block the signal by now */

/* Wait, busy, until 'after' ns past the first attach's return. */
static void until_after_first(int64_t after)
{
	int64_t t1;
	while (!(t1 = __atomic_load_n(&rounds_t1, __ATOMIC_ACQUIRE)) || now_ns() < t1 + after)
		;
}

static void *busy_blocked(void *arg)
{
	int64_t unblock = (int64_t)(intptr_t)arg * SEC;
	rt_signals(SIG_BLOCK);
	__atomic_fetch_add(&rounds_blocked, 1, __ATOMIC_RELEASE);
	until_after_first(unblock);
	if (unblock > SEC)
		late_unblocked = 1; /* before the answer it makes possible */
	rt_signals(SIG_UNBLOCK); /* both rounds' signals come now */
	until_after_first(3 * SEC);
	return NULL;
}

TEST(answers_of_an_earlier_round_do_not_stand_in_for_another_thread)
{
	uint8_t *fn = t_park_rounds, pristine[16];
	struct e2e_counter c = {.addr = (uintptr_t)fn};
	struct np_probe_opts jump = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	pthread_t early, late;

	memcpy(pristine, fn, sizeof pristine);
	rounds_t1 = 0;
	late_unblocked = 0;
	rounds_blocked = 0;
	CHECK_EQ(pthread_create(&early, NULL, busy_blocked, (void *)1), 0);
	CHECK_EQ(pthread_create(&late, NULL, busy_blocked, (void *)2), 0);
	/* both block the signal before the first attach asks them: on a
	 * loaded machine a new thread may not have run yet, and one that
	 * answers lets that attach succeed */
	while (__atomic_load_n(&rounds_blocked, __ATOMIC_ACQUIRE) < 2)
		sched_yield();

	errno = 0;
	CHECK(np_probe_attach(fn, &jump) == NULL); /* neither answers */
	CHECK_EQ(errno, EAGAIN);
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);
	__atomic_store_n(&rounds_t1, now_ns(), __ATOMIC_RELEASE);
	struct np_probe *p = np_probe_attach(fn, &jump);
	CHECK(p != NULL);
	CHECK_EQ(late_unblocked, 1); /* it waited for the late thread's own answer */

	pthread_join(early, NULL);
	pthread_join(late, NULL);
	if (p) {
		int pfd[2];
		char b;
		CHECK_EQ(pipe(pfd), 0);
		CHECK_EQ(write(pfd[1], "y", 1), 1);
		CHECK_EQ(((park_fn *)(void *)fn)(pfd[0], &b, 1), 1);
		CHECK_EQ(b, 'y');
		CHECK_EQ(c.hits, 1);
		CHECK_EQ(e2e_detach_free(p), 0);
		close(pfd[0]);
		close(pfd[1]);
	}
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);
}

/* A thread that blocks every signal, as jemalloc's background threads do,
 * waits in read() somewhere else (libc's). A jump over the landing of a
 * retired trampoline is placed with the other threads stopped, once none
 * can be on its way back there; this one can never answer the stop
 * signal. It used to be asked all the same, and every patch of that kind
 * waited 2 s for it and failed (EAGAIN), the probe falling back to TRAP:
 * redis-server under load stalled for 2 s a site, thousands of sites. A
 * thread blocked in a system call is now judged from its stack instead,
 * which leads into no trampoline: the jump goes in, and its read() goes
 * on undisturbed. */
static void *deaf_reader(void *arg)
{
	struct parked *p = arg;
	sigset_t all;
	char c;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	__atomic_store_n(&p->tid, (pid_t)gettid(), __ATOMIC_RELEASE);
	p->result = read(p->fd, &c, 1);
	return NULL;
}

/* In libc's read(), not in fn or any trampoline of it. */
static bool anywhere(uint64_t pc, const uint8_t *fn)
{
	(void)pc, (void)fn;
	return true;
}

TEST(a_thread_deaf_to_signals_in_a_system_call_does_not_hold_up_a_jump)
{
	uint8_t *fn = t_park_deaf, pristine[16];
	struct e2e_counter c0 = {0}, c4 = {0};
	int pfd[2], dfd[2];
	struct parked deaf = {0};
	pthread_t th;

	memcpy(pristine, fn, sizeof pristine);
	CHECK_EQ(pipe(pfd), 0);
	CHECK_EQ(pipe(dfd), 0);
	e2e_log_capture();
	/* a retired trampoline that jumps back to +7 */
	struct np_probe *p0 = attach_one(fn, &c0, 0);
	CHECK(p0 != NULL);
	if (!p0)
		return;
	char b;
	CHECK_EQ(write(pfd[1], "a", 1), 1);
	CHECK_EQ(((park_fn *)(void *)fn)(pfd[0], &b, 1), 1);
	CHECK_EQ(c0.hits, 1);
	np_probe_free(p0);

	deaf.fd = dfd[0];
	CHECK_EQ(pthread_create(&th, NULL, deaf_reader, &deaf), 0);
	CHECK(wait_parked(&deaf, anywhere));

	/* +4: its jump covers +7 */
	struct np_probe *p4 = attach_one(fn + 4, &c4, 0);
	CHECK(p4 != NULL);
	printf("# the probe at +4 got %s; log: %s\n",
	       p4 ? np_strategy_name(np_probe_strategy(p4)) : "nothing", e2e_log_state.last);
	CHECK(p4 && np_probe_strategy(p4) == NP_STRATEGY_JUMP);
	CHECK_EQ(write(pfd[1], "b", 1), 1);
	CHECK_EQ(((park_fn *)(void *)fn)(pfd[0], &b, 1), 1);
	CHECK_EQ(b, 'b');
	CHECK_EQ(c4.hits, 1);
	np_probe_free(p4);
	CHECK(memcmp(pristine, fn, sizeof pristine) == 0);

	CHECK_EQ(write(dfd[1], "d", 1), 1);
	pthread_join(th, NULL);
	CHECK_EQ(deaf.result, 1); /* its read() was not cut short */
	close(pfd[0]), close(pfd[1]), close(dfd[0]), close(dfd[1]);
}

/* The same without parking: threads call two functions in a loop and
 * check every result while batches alternate between probes whose
 * trampolines jump back to +5 and +9, and probes whose jumps cover those
 * addresses. A thread interrupted in a trampoline of the first kind when
 * the second kind goes in used to land inside a jump. To make that
 * common, a helper thread keeps interrupting the workers with a signal
 * whose handler takes a while (as a preemption would, but with the
 * interrupted pc visible on the stack, where the engine must look for it:
 * a handler of the program's own runs above it). Bounded by
 * NP_LANDING_SECONDS (3) and NP_LANDING_CYCLES (2,000 batches);
 * NP_LANDING_WORKERS threads (2 x cores, 4 to 64). */
typedef uint64_t fn2(uint64_t, uint64_t);
#define CALL2(f, a, b) (((fn2 *)(void *)(f))((a), (b)))

static volatile int storm_stop;
static uint64_t storm_wrong, storm_calls;

static void *storm_worker(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1, n = 0, wrong = 0;

	while (!__atomic_load_n(&storm_stop, __ATOMIC_RELAXED)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t y = x >> 40;
		wrong += CALL2(t_cmp, y, y ^ 1) != (y < (y ^ 1));
		wrong += CALL2(t_short, y, 0) != y + 1;
		n++;
	}
	__atomic_fetch_add(&storm_wrong, wrong, __ATOMIC_RELAXED);
	__atomic_fetch_add(&storm_calls, n, __ATOMIC_RELAXED);
	return NULL;
}

static double now(void)
{
	return (double)now_ns() / SEC;
}

/* Half a millisecond in the handler, wherever the thread was. */
static void slow_interrupt(int sig)
{
	double until = now() + 0.0005;
	(void)sig;
	while (now() < until)
		;
}

struct interrupter {
	pthread_t *w;
	int n;
};

static void *interrupt_workers(void *arg)
{
	const struct interrupter *it = arg;
	for (unsigned k = 0; !__atomic_load_n(&storm_stop, __ATOMIC_RELAXED); k++) {
		pthread_kill(it->w[k % (unsigned)it->n], SIGUSR1);
		nanosleep(&(struct timespec){0, 100000}, NULL);
	}
	return NULL;
}

TEST(batches_over_the_landings_of_retired_trampolines_keep_results_right)
{
	uint8_t *const sets[2][2] = {{t_cmp, t_short + 4},
				     {t_cmp + 2, t_short + 8}};
	uint8_t pristine[2][16];
	const char *env = getenv("NP_LANDING_SECONDS");
	double deadline = now() + (env ? atof(env) : 3.0);
	unsigned long cycles = (env = getenv("NP_LANDING_CYCLES")) ? strtoul(env, NULL, 0) : 2000;
	unsigned long i, placed = 0, jumps = 0, miscounts = 0, failures = 0;
	const char *nw = getenv("NP_LANDING_WORKERS"); /* default: 2 x cores */
	int nworkers = nw ? atoi(nw) : 2 * e2e_ncpus();
	pthread_t w[64];

	nworkers = nworkers < 4 ? 4 : nworkers > 64 ? 64 : nworkers;
	memcpy(pristine[0], t_cmp, 16);
	memcpy(pristine[1], t_short, 16);
	e2e_log_capture();
	struct sigaction sa = {.sa_handler = slow_interrupt, .sa_flags = SA_RESTART};
	struct interrupter it = {w, nworkers};
	pthread_t irq;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	for (int k = 0; k < nworkers; k++)
		CHECK_EQ(pthread_create(&w[k], NULL, storm_worker, (void *)(uintptr_t)(k + 1)), 0);
	CHECK_EQ(pthread_create(&irq, NULL, interrupt_workers, &it), 0);
	for (i = 0; i < cycles && now() < deadline; i++) {
		struct e2e_counter c[2];
		struct np_probe_opts o[2];
		const struct np_probe_opts *op[2] = {&o[0], &o[1]};
		void *addrs[2] = {sets[i & 1][0], sets[i & 1][1]};
		struct np_probe *p[2];
		int errs[2];

		memset(c, 0, sizeof c);
		for (int k = 0; k < 2; k++) {
			o[k] = e2e_opts(e2e_count, &c[k], NP_STRATEGY_AUTO);
			c[k].addr = (uintptr_t)addrs[k];
		}
		struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(
			.cnt = 2, .addrs = addrs, .opts = op, .probes = p, .errs = errs);
		int got = np_probe_attach_many(&mo);
		placed += got > 0 ? (unsigned)got : 0;
		failures += got != 2;
		for (int k = 0; k < 2; k++)
			jumps += p[k] && np_probe_strategy(p[k]) == NP_STRATEGY_JUMP;
		nanosleep(&(struct timespec){0, 200000}, NULL); /* let them run through */
		failures += np_probe_detach_many(p, 2) != 0;
		for (int k = 0; k < 2; k++) {
			if (!p[k])
				continue;
			miscounts += np_probe_hits(p[k]) != c[k].hits || c[k].bad_pc;
			np_probe_free(p[k]);
		}
	}
	storm_stop = 1;
	pthread_join(irq, NULL);
	for (int k = 0; k < nworkers; k++)
		pthread_join(w[k], NULL);
	printf("# %d workers, %lu batches: %lu probes placed (%lu JUMP), %" PRIu64
	       " checked calls; last log: %s\n",
	       nworkers, i, placed, jumps, storm_calls, e2e_log_state.last);
	CHECK_EQ(storm_wrong, 0);
	CHECK_EQ(failures, 0);
	CHECK_EQ(miscounts, 0);
	CHECK(placed > 0);
	CHECK(memcmp(pristine[0], t_cmp, 16) == 0);
	CHECK(memcmp(pristine[1], t_short, 16) == 0);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * Children of a probed process (docs/reliability.md, "fork"): a forked
 * child has one thread, the one that forked, and must be able to run the
 * probed code (its hits counted in the child), attach and detach probes,
 * exit and exec, whatever the parent's other threads were doing at the
 * fork: running a handler, holding the engine lock, patching, or waiting
 * for the forking thread's own handler. A vfork child runs in its
 * parent's memory: it may run probed code, and may not change probes.
 *
 * A child that hangs is killed by its alarm (SIGALRM), which the parent
 * sees as a failure; nothing here measures time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

extern char **environ;

#define CHILD_ALARM 60 /* seconds: a child still there is hung */

static E2E_NOIPA uint64_t fork_fn(uint64_t x)
{
	return x * 5 + 2;
}
static E2E_NOIPA uint64_t other_fn(uint64_t x)
{
	return x ^ 0x5a;
}
static E2E_NOIPA uint64_t third_fn(uint64_t x)
{
	return x + 77;
}
static E2E_NOIPA uint64_t hop_fn(uint64_t x)
{
	return x * 3;
}
static uint64_t (*volatile fork_p)(uint64_t) = fork_fn;
static uint64_t (*volatile other_p)(uint64_t) = other_fn;
static uint64_t (*volatile third_p)(uint64_t) = third_fn;
static uint64_t (*volatile hop_p)(uint64_t) = hop_fn;

static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};

static struct np_probe *count_on(void *fn, struct e2e_counter *c, enum np_strategy s)
{
	struct np_probe_opts o = e2e_opts(e2e_count, c, s);
	memset(c, 0, sizeof(*c));
	return np_probe_attach(fn, &o);
}

/* A child's status: 0 when it exited 0. */
static int reap(pid_t pid)
{
	int st = -1;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		printf("# child %d killed by signal %d%s\n", (int)pid, WTERMSIG(st),
		       WTERMSIG(st) == SIGALRM ? " (hung)" : "");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* What every child must be able to do: run the probed code with its
 * hits counted, attach a probe of its own and detach it, detach what it
 * inherited. 0, or the step that failed. */
static int child_works(struct np_probe *inherited, struct e2e_counter *ic, enum np_strategy s)
{
	uint64_t before = ic ? __atomic_load_n(&ic->hits, __ATOMIC_RELAXED) : 0;
	uint64_t np_before = inherited ? np_probe_hits(inherited) : 0;
	for (uint64_t i = 0; i < 50; i++)
		if (fork_p(i) != i * 5 + 2)
			return 10;
	if (inherited && (ic->hits != before + 50 || np_probe_hits(inherited) != np_before + 50))
		return 11;
	struct e2e_counter c;
	struct np_probe *p = count_on((void *)other_fn, &c, s);
	if (!p)
		return 12;
	for (uint64_t i = 0; i < 30; i++)
		if (other_p(i) != (i ^ 0x5a))
			return 13;
	if (c.hits != 30 || np_probe_hits(p) != 30)
		return 14;
	if (e2e_detach_free(p) != 0)
		return 15;
	if (inherited && np_probe_detach(inherited) != 0)
		return 16;
	for (uint64_t i = 0; i < 10; i++)
		if (fork_p(i) != i * 5 + 2 || other_p(i) != (i ^ 0x5a))
			return 17;
	if (inherited && ic->hits != before + 50)
		return 18;
	return c.hits == 30 ? 0 : 19;
}

TEST(a_child_runs_attaches_detaches_forks_and_execs)
{
	e2e_log_capture();
	for (unsigned k = 0; k < 2; k++) {
		struct e2e_counter c;
		struct np_probe *p = count_on((void *)fork_fn, &c, strategies[k]);
		CHECK(p);
		if (!p)
			continue;
		CHECK_EQ(fork_p(1), 7);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(CHILD_ALARM);
			int r = child_works(p, &c, strategies[k]);
			if (r)
				_exit(r);
			pid_t g = fork(); /* a grandchild, from a child */
			if (g == 0) {
				alarm(CHILD_ALARM);
				_exit(child_works(NULL, NULL, strategies[k]));
			}
			if (reap(g) != 0)
				_exit(20);
			execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
			_exit(21);
		}
		CHECK_EQ(reap(pid), 0);
		CHECK_EQ(c.hits, 1); /* the child counted on its own copy */
		CHECK_EQ(np_probe_hits(p), 1);
		CHECK_EQ(fork_p(2), 12);
		CHECK_EQ(c.hits, 2);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* ---- a parent thread in a handler at the fork -------------------------- */

static volatile int held, release_held;

static void hold_on_thread(struct np_ctx *ctx, void *data)
{
	e2e_count(ctx, data);
	if (np_ctx_arg(ctx, 0) != 1000)
		return;
	held = 1;
	while (!release_held)
		sched_yield();
}

static void *call_held(void *arg)
{
	(void)arg;
	fork_p(1000);
	return NULL;
}

TEST(a_child_detaches_a_probe_whose_handler_another_thread_was_running)
{
	for (unsigned k = 0; k < 2; k++) {
		struct e2e_counter c = {0};
		struct np_probe_opts o = e2e_opts(hold_on_thread, &c, strategies[k]);
		struct np_probe *p = np_probe_attach((void *)fork_fn, &o);
		CHECK(p);
		if (!p)
			continue;
		held = release_held = 0;
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, call_held, NULL), 0);
		while (!held)
			sched_yield();
		pid_t pid = fork();
		if (pid == 0) {
			alarm(CHILD_ALARM);
			/* the handler's thread is not here: nothing to wait for */
			_exit(child_works(p, &c, strategies[k]));
		}
		CHECK_EQ(reap(pid), 0);
		release_held = 1;
		pthread_join(t, NULL);
		CHECK_EQ(c.hits, 1);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* ---- a parent thread holding the engine lock at the fork ----------------
 * The engine logs under its lock: a log callback that holds the thread
 * there holds the lock. It waits until the fork has begun (the test's own
 * fork handler, which runs before the engine's: handlers registered later
 * run first), and a little more. Taken before the fork, the lock is
 * released once the log returns; not taken, the child inherited it held
 * by a thread it does not have. */
static volatile int in_log, fork_begun, forked, hold_until_forked;
static pthread_t log_thread;

static void holding_log(enum np_log_level level, const char *msg, void *user)
{
	(void)level, (void)msg, (void)user;
	if (!pthread_equal(pthread_self(), log_thread))
		return;
	in_log = 1;
	while (!fork_begun)
		sched_yield();
	if (hold_until_forked) /* a fork that takes no lock */
		while (!forked)
			sched_yield();
	else /* the fork waits for us, or is done (no lock taken) */
		nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
}

static void note_fork(void)
{
	fork_begun = 1;
}

static void *attach_and_log(void *arg)
{
	static const uint8_t data[16];
	(void)arg;
	struct e2e_counter c;
	/* refused under the lock, with a message: not code */
	struct np_probe *p = count_on((void *)data, &c, NP_STRATEGY_AUTO);
	if (p)
		e2e_detach_free(p);
	return NULL;
}

static void hold_lock_and(void (*fork_it)(void), bool raw)
{
	static bool registered;
	struct e2e_counter c;
	struct np_probe *p = count_on((void *)third_fn, &c, NP_STRATEGY_AUTO); /* engine up */
	CHECK(p);
	if (!registered) /* after the engine's: runs before it */
		CHECK_EQ(pthread_atfork(note_fork, NULL, NULL), 0);
	registered = true;
	in_log = fork_begun = forked = 0;
	hold_until_forked = raw;
	np_set_log_fn(holding_log, NULL);
	CHECK_EQ(pthread_create(&log_thread, NULL, attach_and_log, NULL), 0);
	while (!in_log)
		sched_yield();
	fork_it();
	pthread_join(log_thread, NULL);
	e2e_log_capture();
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

static void fork_and_check(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_ALARM);
		_exit(child_works(NULL, NULL, NP_STRATEGY_AUTO));
	}
	CHECK_EQ(reap(pid), 0);
}

TEST(a_child_attaches_when_another_thread_held_the_engine_lock_at_fork)
{
	hold_lock_and(fork_and_check, false);
}

/* A raw fork runs no fork handler: a child forked while another thread
 * held the lock cannot know what that thread had half done. It runs the
 * probed code and exits; changing probes is refused, never a hang. */
static long raw_fork(void)
{
#ifdef SYS_fork
	return syscall(SYS_fork);
#else
	return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

static void raw_fork_while_locked(void)
{
	fork_begun = 1; /* no fork handler runs */
	pid_t pid = (pid_t)raw_fork();
	forked = 1;
	if (pid == 0) {
		alarm(CHILD_ALARM);
		if (fork_p(3) != 17 || other_p(1) != (1 ^ 0x5a))
			_exit(2);
		struct e2e_counter c;
		struct np_probe *p = count_on((void *)other_fn, &c, NP_STRATEGY_AUTO);
		_exit(!p && errno == ENOTRECOVERABLE ? 0 : 3);
	}
	CHECK_EQ(reap(pid), 0);
}

TEST(a_raw_fork_child_of_a_locked_engine_refuses_changes_and_runs)
{
	hold_lock_and(raw_fork_while_locked, true);
}

TEST(a_raw_fork_child_runs_attaches_and_detaches)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(hold_on_thread, &c, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach((void *)fork_fn, &o);
	CHECK(p);
	if (!p)
		return;
	held = release_held = 0;
	pthread_t t; /* a thread in a handler, as above */
	CHECK_EQ(pthread_create(&t, NULL, call_held, NULL), 0);
	while (!held)
		sched_yield();
	pid_t pid = (pid_t)raw_fork();
	if (pid == 0) {
		alarm(CHILD_ALARM);
		_exit(child_works(p, &c, NP_STRATEGY_AUTO));
	}
	CHECK_EQ(reap(pid), 0);
	release_held = 1;
	pthread_join(t, NULL);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

/* ---- fork from a handler, while another thread detaches its probe -------
 * The detach waits for that handler to end; the handler forks, and the
 * fork takes the engine lock. The detach must not wait while it holds
 * the lock. */
static volatile int detach_started;
static struct np_probe *to_detach;
static pid_t handler_child;

static void *detach_it(void *arg)
{
	(void)arg;
	detach_started = 1;
	np_probe_detach(to_detach);
	return NULL;
}

static void fork_in_handler(struct np_ctx *ctx, void *data)
{
	e2e_count(ctx, data);
	if (np_ctx_arg(ctx, 0) != 2000)
		return;
	pthread_t t;
	if (pthread_create(&t, NULL, detach_it, NULL))
		return;
	while (!detach_started)
		sched_yield();
	nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL); /* it waits for us now */
	handler_child = fork();
	if (handler_child == 0)
		return; /* the child goes on from the handler */
	pthread_detach(t);
}

TEST(fork_from_a_handler_while_another_thread_detaches_its_probe)
{
	alarm(CHILD_ALARM); /* the parent itself would hang */
	for (unsigned k = 0; k < 2; k++) {
		struct e2e_counter c = {0};
		struct np_probe_opts o = e2e_opts(fork_in_handler, &c, strategies[k]);
		to_detach = np_probe_attach((void *)fork_fn, &o);
		CHECK(to_detach);
		if (!to_detach)
			continue;
		detach_started = 0;
		uint64_t v = fork_p(2000);
		if (handler_child == 0) {
			alarm(CHILD_ALARM);
			/* the detach was its parent's: here the probe stays as it was
			 * left, and the child does what any child may */
			int r = v == 10002 ? child_works(NULL, NULL, strategies[k]) : 30;
			_exit(r ? r : np_probe_detach(to_detach) == 0 ? 0 : 31);
		}
		CHECK_EQ(v, 10002);
		CHECK_EQ(reap(handler_child), 0);
		while (np_probe_strategy(to_detach) != NP_STRATEGY_AUTO)
			sched_yield(); /* the detach went through */
		uint64_t hits = c.hits;
		CHECK_EQ(fork_p(3), 17);
		CHECK_EQ(c.hits, hits);
		np_probe_free(to_detach);
	}
	alarm(0);
}

/* ---- forks while other threads change probes ---------------------------- */

static volatile int churn_stop;
static uint64_t churn_rounds;

static void *churn(void *arg)
{
	enum np_strategy s = *(enum np_strategy *)arg;
	while (!churn_stop) {
		struct e2e_counter c1, c2;
		void *addrs[2] = {(void *)fork_fn, (void *)third_fn};
		struct np_probe_opts o1 = e2e_opts(e2e_count, &c1, s), o2 = e2e_opts(e2e_count, &c2, s);
		const struct np_probe_opts *ops[2] = {&o1, &o2};
		struct np_probe *ps[2] = {0};
		int errs[2];
		struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(
			.cnt = 2, .addrs = addrs, .opts = ops, .probes = ps, .errs = errs);
		memset(&c1, 0, sizeof(c1));
		memset(&c2, 0, sizeof(c2));
		np_probe_attach_many(&mo);
		for (uint64_t i = 0; i < 20; i++)
			if (fork_p(i) != i * 5 + 2 || third_p(i) != i + 77)
				abort();
		np_probe_detach_many(ps, 2);
		np_probe_free(ps[0]);
		np_probe_free(ps[1]);
		__atomic_fetch_add(&churn_rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Every 7th call of hop_fn forks from its handler. */
static volatile int forks_from_handler;
static int handler_forks_failed;

static void maybe_fork(struct np_ctx *ctx, void *data)
{
	e2e_count(ctx, data);
	if (np_ctx_arg(ctx, 0) % 7 || !forks_from_handler)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_ALARM);
		_exit(0); /* from the handler: its work in the child is the exit */
	}
	if (reap(pid) != 0)
		__atomic_fetch_add(&handler_forks_failed, 1, __ATOMIC_RELAXED);
}

TEST(forks_while_other_threads_attach_and_detach_in_a_loop)
{
	static enum np_strategy s[2] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	pthread_t t[2];
	e2e_log_capture();
	churn_stop = 0;
	churn_rounds = 0;
	handler_forks_failed = 0;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn, &s[i]), 0);
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(maybe_fork, &c, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach((void *)hop_fn, &o);
	CHECK(p);
	int bad = 0;
	for (int n = 0; n < 40; n++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(CHILD_ALARM);
			_exit(child_works(NULL, NULL, strategies[n % 2]));
		}
		bad += reap(pid) != 0;
		forks_from_handler = 1;
		for (uint64_t i = 0; i < 8; i++)
			bad += hop_p(i) != i * 3; /* a fork from the handler at 0 and 7 */
		forks_from_handler = 0;
	}
	churn_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("# %llu rounds of attach and detach meanwhile\n", (unsigned long long)churn_rounds);
	CHECK_EQ(bad, 0);
	CHECK_EQ(handler_forks_failed, 0);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

/* ---- vfork and posix_spawn ------------------------------------------------ */

/* Does vfork share the parent's memory here? qemu-user runs it as a fork. */
static volatile int vfork_mark;

static bool vfork_shares(void)
{
	vfork_mark = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		vfork_mark = 1;
		_exit(0);
	}
	reap(pid);
	return vfork_mark == 1;
}

static volatile int v_calls_ok, v_attach_errno, v_detach_errno;
static struct np_probe *volatile v_attached;

TEST(a_vfork_child_runs_probed_code_and_cannot_change_probes)
{
	bool shared = vfork_shares();
	for (unsigned k = 0; k < 2; k++) {
		struct e2e_counter c, c2;
		struct np_probe *p = count_on((void *)fork_fn, &c, strategies[k]);
		CHECK(p);
		if (!p)
			continue;
		CHECK_EQ(fork_p(1), 7); /* this thread has its block */
		v_calls_ok = v_attach_errno = v_detach_errno = 0;
		v_attached = NULL;
		memset(&c2, 0, sizeof(c2));
		pid_t pid = vfork();
		if (pid == 0) {
			int ok = 1;
			for (uint64_t i = 0; i < 10; i++)
				ok &= fork_p(i) == i * 5 + 2;
			v_calls_ok = ok;
			struct np_probe_opts o = e2e_opts(e2e_count, &c2, strategies[k]);
			v_attached = np_probe_attach((void *)other_fn, &o);
			v_attach_errno = errno;
			v_detach_errno = np_probe_detach(p) ? errno : 0;
			_exit(0);
		}
		CHECK_EQ(reap(pid), 0);
		if (shared) {
			CHECK_EQ(v_calls_ok, 1);
			CHECK(v_attached == NULL);
			CHECK_EQ(v_attach_errno, EPERM);
			CHECK_EQ(v_detach_errno, EPERM);
			/* the child's calls ran the handler in this memory */
			CHECK_EQ(c.hits, 11);
			CHECK_EQ(np_probe_hits(p), 11);
		}
		CHECK_EQ(other_p(1), 1 ^ 0x5a);
		CHECK_EQ(c2.hits, 0);
		uint64_t h = c.hits;
		CHECK_EQ(fork_p(2), 12); /* still attached, here */
		CHECK_EQ(c.hits, h + 1);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* A thread that never hit a probe vforks, and the child hits one: that
 * thread's TLS is the parent thread's, and must not get a block under
 * the child's tid. The hit is counted as missed; the thread gets its own
 * block at its own first hit. */
struct first_vfork {
	struct np_probe *p;
	int ok;
};

static void *vfork_first(void *arg)
{
	struct first_vfork *f = arg;
	pid_t pid = vfork();
	if (pid == 0) {
		fork_p(4);
		_exit(0);
	}
	f->ok = reap(pid) == 0;
	np_maintain(); /* a stock of the pool: the child's tid is gone */
	for (uint64_t i = 0; i < 5; i++)
		f->ok &= fork_p(i) == i * 5 + 2;
	return NULL;
}

TEST(a_threads_first_hit_in_a_vfork_child_takes_no_block)
{
	if (!vfork_shares()) {
		printf("# vfork is a fork here: not run\n");
		return;
	}
	struct e2e_counter c;
	struct first_vfork f = {.p = count_on((void *)fork_fn, &c, NP_STRATEGY_AUTO)};
	CHECK(f.p);
	if (!f.p)
		return;
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, vfork_first, &f), 0);
	pthread_join(t, NULL);
	CHECK_EQ(f.ok, 1);
	CHECK_EQ(c.hits, 5);
	CHECK_EQ(np_probe_hits(f.p), 5);
	CHECK_EQ(np_probe_missed(f.p), 1);
	CHECK_EQ(e2e_detach_free(f.p), 0);
}

/* A vfork child runs our code in our memory without being one of our
 * threads: no signal reaches it, nothing moves it out of bytes being
 * replaced. A patch that may have to move threads waits until it is gone
 * (or gives up: EAGAIN). */
static volatile int vchild_running, vchild_stop, vchild_done, vchild_wrong;

static void *vfork_and_loop(void *arg)
{
	(void)arg;
	pid_t pid = vfork();
	if (pid == 0) {
		vchild_running = 1;
		for (uint64_t i = 0; !vchild_stop; i++)
			vchild_wrong += third_p(i) != i + 77;
		for (uint64_t i = 0; i < 200; i++) /* a while after the attach began */
			vchild_wrong += third_p(i) != i + 77;
		vchild_done = 1;
		_exit(0);
	}
	reap(pid);
	return NULL;
}

TEST(a_patch_waits_for_a_vfork_child_running_the_code)
{
	if (!vfork_shares()) {
		printf("# vfork is a fork here: not run\n");
		return;
	}
	for (int round = 0; round < 5; round++) {
		struct e2e_counter c;
		pthread_t t;
		vchild_running = vchild_stop = vchild_done = vchild_wrong = 0;
		CHECK_EQ(pthread_create(&t, NULL, vfork_and_loop, NULL), 0);
		while (!vchild_running)
			sched_yield();
		vchild_stop = 1;
		errno = 0;
		struct np_probe *p = count_on((void *)third_fn, &c, NP_STRATEGY_JUMP);
		int err = errno, done = vchild_done;
		pthread_join(t, NULL);
		CHECK(p ? done == 1 : err == EAGAIN); /* never while the child ran */
		CHECK_EQ(vchild_wrong, 0);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* What posix_spawn's child runs before its exec, probed: it shares the
 * parent's memory, with every signal blocked and every handler reset,
 * so only jumps can run there (a breakpoint would kill it:
 * docs/design.md, "Signals the program owns"). */
TEST(posix_spawn_and_vfork_exec_under_probes)
{
	static const char *const names[] = {"execve", "dup2", "close", "sigprocmask"};
	struct e2e_counter c[4];
	struct np_probe *p[4];
	bool shared = vfork_shares();
	for (int i = 0; i < 4; i++) {
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		p[i] = fn ? count_on(fn, &c[i], NP_STRATEGY_AUTO) : NULL;
		if (p[i] && np_probe_strategy(p[i]) != NP_STRATEGY_JUMP) {
			printf("# %s: %s, left out\n", names[i],
			       np_strategy_name(np_probe_strategy(p[i])));
			e2e_detach_free(p[i]);
			p[i] = NULL;
		}
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	char *argv[] = {"sh", "-c", "exit 3", NULL};
	for (int n = 0; n < 20; n++) {
		pid_t pid = -1;
		CHECK_EQ(posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ), 0);
		CHECK_EQ(reap(pid), 3);
		pid = vfork();
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", "exit 4", (char *)NULL);
			_exit(99);
		}
		CHECK_EQ(reap(pid), 4);
	}
	posix_spawn_file_actions_destroy(&fa);
	if (p[0] && shared) /* the children's execve ran in this memory */
		CHECK(c[0].hits >= 40);
	for (int i = 0; i < 4; i++)
		if (p[i])
			CHECK_EQ(e2e_detach_free(p[i]), 0);
}

/* ---- watches ----------------------------------------------------------------- */

static volatile uint64_t watched[8] __attribute__((aligned(64)));

static void count_watch(const struct np_watch_hit *hit, void *data)
{
	(void)hit;
	__atomic_fetch_add((uint64_t *)data, 1, __ATOMIC_RELAXED);
}

/* A child's copies of the watches' descriptors would keep the parent's
 * events, and its threads' debug registers, after the parent closed its
 * own: a parent that detaches every watch while a child lives must get
 * every register back. */
TEST(watches_stay_with_the_parent_and_free_their_registers_there)
{
	int slots = np_watch_slots(NP_WATCH_WRITE);
	if (slots <= 0) {
		printf("# no hardware watchpoints here (%s): not run\n", strerror(errno));
		return;
	}
	if (slots > 8)
		slots = 8;
	uint64_t hits = 0, child_hits = 0;
	struct np_watch *w[8];
	struct np_watch_opts o = NP_WATCH_OPTS(.data = &hits);
	for (int i = 0; i < slots; i++)
		CHECK((w[i] = np_watch_attach((void *)&watched[i], 8, NP_WATCH_WRITE, count_watch,
					      &o)) != NULL);
	int go[2], done[2];
	CHECK_EQ(pipe(go), 0);
	CHECK_EQ(pipe(done), 0);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_ALARM);
		char b;
		watched[0] = 1; /* not watched here */
		int r = __atomic_load_n(&hits, __ATOMIC_RELAXED) == 0 ? 0 : 1;
		/* every register is the child's own to take */
		struct np_watch_opts co = NP_WATCH_OPTS(.data = &child_hits);
		struct np_watch *cw = np_watch_attach((void *)&watched[0], 8, NP_WATCH_WRITE,
						      count_watch, &co);
		watched[0] = 2;
		r = r ? r : !cw ? 2 : __atomic_load_n(&child_hits, __ATOMIC_RELAXED) != 1 ? 3 : 0;
		np_watch_free(cw);
		for (int i = 0; i < slots; i++)
			np_watch_free(w[i]);
		if (write(done[1], "x", 1) != 1 || read(go[0], &b, 1) != 1)
			r = r ? r : 4;
		_exit(r);
	}
	char b;
	CHECK_EQ(read(done[0], &b, 1), 1); /* the child is there, its copies too */
	for (int i = 0; i < slots; i++)
		np_watch_free(w[i]);
	for (int i = 0; i < slots; i++) {
		o.data = &hits;
		w[i] = np_watch_attach((void *)&watched[i], 8, NP_WATCH_WRITE, count_watch, &o);
		CHECK(w[i] != NULL);
	}
	__atomic_store_n(&hits, 0, __ATOMIC_RELAXED);
	watched[slots - 1] = 5;
	CHECK_EQ(__atomic_load_n(&hits, __ATOMIC_RELAXED), 1);
	CHECK_EQ(write(go[1], "x", 1), 1);
	CHECK_EQ(reap(pid), 0);
	for (int i = 0; i < slots; i++)
		np_watch_free(w[i]);
	close(go[0]), close(go[1]), close(done[0]), close(done[1]);
}

TEST_MAIN()

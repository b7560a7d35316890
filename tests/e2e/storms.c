/* SPDX-License-Identifier: MIT */
/*
 * What a probed process may do while its probes are live: fork (the child
 * inherits the patched code, the trampolines and the probes, whose handlers
 * run in the child on the child's copy of their data; it may detach them
 * itself), exec (the new image is clean), and take signals whose handlers
 * call probed code while the interrupted thread is inside a trampoline or a
 * handler (the nested hit is counted as missed, never lost, never wrong).
 */
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};

static E2E_NOIPA uint64_t storm_fn(uint64_t x)
{
	return x * 3 + 1;
}
static uint64_t (*volatile storm_p)(uint64_t) = storm_fn;

static struct np_probe *attach_count(struct e2e_counter *c, enum np_strategy s)
{
	struct np_probe_opts o = e2e_opts(e2e_count, c, s);
	memset(c, 0, sizeof(*c));
	return np_probe_attach((void *)storm_fn, &o);
}

/* In the child: the probe's handler counts on the child's copy. */
static int child_calls(struct e2e_counter *c, bool detach, struct np_probe *p)
{
	uint64_t before = c->hits;
	for (uint64_t i = 0; i < 100; i++)
		if (storm_p(i) != i * 3 + 1)
			return 2;
	if (c->hits != before + 100)
		return 3;
	if (detach && e2e_detach_free(p) != 0)
		return 4;
	for (uint64_t i = 0; i < 100; i++)
		if (storm_p(i) != i * 3 + 1)
			return 5;
	return c->hits == before + 100 + (detach ? 0 : 100) ? 0 : 6;
}

TEST(fork_with_live_probes_child_runs_them_on_its_own_copy)
{
	e2e_log_capture();
	for (unsigned k = 0; k < 2; k++)
		for (int detach = 0; detach < 2; detach++) {
			struct e2e_counter c;
			struct np_probe *p = attach_count(&c, strategies[k]);
			CHECK(p);
			if (!p)
				continue;
			CHECK_EQ(storm_p(1), 4);
			pid_t pid = fork();
			if (pid == 0)
				_exit(child_calls(&c, detach, p));
			int st = -1;
			CHECK_EQ(waitpid(pid, &st, 0), pid);
			CHECK(WIFEXITED(st));
			CHECK_EQ(WEXITSTATUS(st), 0);
			CHECK_EQ(c.hits, 1); /* the child's hits were its own */
			CHECK_EQ(storm_p(2), 7);
			if (c.hits != 2)
				printf("# k=%u detach=%d: hits %llu np_hits %llu missed %llu\n", k, detach,
				       (unsigned long long)c.hits, (unsigned long long)np_probe_hits(p),
				       (unsigned long long)np_probe_missed(p));
			CHECK_EQ(c.hits, 2);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
}

TEST(exec_from_a_process_with_live_probes_starts_clean)
{
	struct e2e_counter c;
	struct np_probe *p = attach_count(&c, NP_STRATEGY_AUTO);
	CHECK(p);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
		_exit(99);
	}
	int st = -1;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

/* ---- signals whose handlers call probed code ---------------------------- */

static volatile int stop_worker;
static uint64_t worker_calls, signal_calls, wrong; /* atomic */

static void on_usr1(int sig)
{
	if (storm_p(5) != 16)
		__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&signal_calls, 1, __ATOMIC_RELAXED);
}

static void *storm_worker(void *arg)
{
	for (uint64_t i = 0; !stop_worker; i++) {
		if (storm_p(i) != i * 3 + 1)
			__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&worker_calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

TEST(signals_into_trampolines_and_handlers_lose_no_call)
{
	struct sigaction sa = {.sa_handler = on_usr1}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	e2e_log_capture();
	for (unsigned k = 0; k < 2; k++) {
		struct e2e_counter c;
		struct np_probe *p = attach_count(&c, strategies[k]);
		pthread_t t;
		CHECK(p);
		if (!p)
			continue;
		stop_worker = 0;
		worker_calls = signal_calls = wrong = 0;
		CHECK_EQ(pthread_create(&t, NULL, storm_worker, NULL), 0);
		for (int i = 0; i < 5000; i++) {
			pthread_kill(t, SIGUSR1);
			if (i % 64 == 0)
				usleep(100);
		}
		usleep(10000);
		stop_worker = 1;
		pthread_join(t, NULL);
		uint64_t calls = worker_calls + signal_calls;
		CHECK_EQ(wrong, 0);
		CHECK(signal_calls > 0);
		/* every call is a hit, or a hit nested in a handler: missed */
		CHECK_EQ(np_probe_hits(p) + np_probe_missed(p), calls);
		CHECK_EQ(c.hits, np_probe_hits(p));
		printf("# %s: %llu calls, %llu in signal handlers, %llu missed\n",
		       np_strategy_name(strategies[k]), (unsigned long long)calls,
		       (unsigned long long)signal_calls, (unsigned long long)np_probe_missed(p));
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	sigaction(SIGUSR1, &old, NULL);
}

/* ---- fork inside a call whose return is armed ----------------------------
 * Both processes return from the probed call through their own copy of
 * the thread's shadow stack, to the right caller, running the return
 * handler on their own copy of its data. */

static uint64_t forker_returns;
static pid_t forker_child;

static E2E_NOIPA uint64_t forker(uint64_t x)
{
	forker_child = fork();
	return x + 1;
}
static uint64_t (*volatile forker_p)(uint64_t) = forker;

static void count_forker_return(struct np_ctx *ctx, void *data)
{
	if (np_ctx_retval(ctx) == 8)
		forker_returns++;
}

TEST(fork_inside_an_armed_call_returns_in_parent_and_child)
{
	e2e_log_capture();
	for (unsigned k = 0; k < 2; k++) {
		struct np_probe_opts o = e2e_opts(NULL, NULL, strategies[k]);
		o.on_return = count_forker_return;
		struct np_probe *p = np_probe_attach((void *)forker, &o);
		CHECK(p);
		if (!p)
			continue;
		forker_returns = 0;
		uint64_t v = forker_p(7);
		if (forker_child == 0)
			_exit(v == 8 && forker_returns == 1 && forker_p(7) == 8 ? 0 : 1);
		int st = -1;
		CHECK_EQ(waitpid(forker_child, &st, 0), forker_child);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_EQ(v, 8);
		CHECK_EQ(forker_returns, 1);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* ---- signals into armed calls and their return paths ---------------------- */

static uint64_t ret_handler_calls, ret_wrong; /* atomic */

static void check_storm_return(struct np_ctx *ctx, void *data)
{
	(void)data;
	__atomic_fetch_add(&ret_handler_calls, 1, __ATOMIC_RELAXED);
	uint64_t *x = np_ctx_call_data(ctx);
	if (!x || np_ctx_retval(ctx) != *x * 3 + 1)
		__atomic_fetch_add(&ret_wrong, 1, __ATOMIC_RELAXED);
}

static void save_storm_arg(struct np_ctx *ctx, void *data)
{
	e2e_count(ctx, data);
	uint64_t *x = np_ctx_call_data(ctx);
	if (x)
		*x = np_ctx_arg(ctx, 0);
}

TEST(signals_into_armed_calls_lose_no_return)
{
	struct sigaction sa = {.sa_handler = on_usr1}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	e2e_log_capture();
	for (unsigned k = 0; k < 2; k++) {
		struct e2e_counter c = {0};
		struct np_probe_opts o = e2e_opts(save_storm_arg, &c, strategies[k]);
		o.on_return = check_storm_return;
		struct np_probe *p = np_probe_attach((void *)storm_fn, &o);
		pthread_t t;
		CHECK(p);
		if (!p)
			continue;
		stop_worker = 0;
		worker_calls = signal_calls = wrong = ret_handler_calls = ret_wrong = 0;
		CHECK_EQ(pthread_create(&t, NULL, storm_worker, NULL), 0);
		for (int i = 0; i < 5000; i++) {
			pthread_kill(t, SIGUSR1);
			if (i % 64 == 0)
				usleep(100);
		}
		usleep(10000);
		stop_worker = 1;
		pthread_join(t, NULL);
		uint64_t calls = worker_calls + signal_calls;
		CHECK_EQ(wrong, 0);
		CHECK_EQ(ret_wrong, 0);
		CHECK_EQ(np_probe_hits(p) + np_probe_missed(p), calls);
		/* every call whose entry ran returned through its handler */
		CHECK_EQ(ret_handler_calls, np_probe_hits(p));
		printf("# %s: %llu calls, %llu in signal handlers, %llu missed\n",
		       np_strategy_name(strategies[k]), (unsigned long long)calls,
		       (unsigned long long)signal_calls, (unsigned long long)np_probe_missed(p));
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	sigaction(SIGUSR1, &old, NULL);
}

/* ---- a signal before each instruction of the way in and out -----------------
 * The storm above lands its signals wherever they happen to fall, and found
 * the shared return trampoline's way out unsafe about once in twenty runs.
 * Here an instruction watchpoint (EXEC) on one address at a time makes
 * SIGUSR1 pending from its handler, so the program's signal handler runs
 * right before that instruction, when the watch's trap returns, and calls
 * the probed function again, through the same code. Every address around
 * the trampoline's handler call and the way back gets its turn, and every
 * call, the interrupted one and the nested one, must return its value to
 * its own caller: a way out that keeps its target where the nested call
 * puts its own (a per-thread slot) sends the interrupted call into the
 * signal handler's code, on the interrupted thread's stack. */

#if defined(__x86_64__)
#define INSN_STEP 1
#elif defined(__aarch64__)
#define INSN_STEP 4
#else
#define INSN_STEP 2
#endif

static uintptr_t step_entry_ra, step_ret_ra; /* where the handler and the call return */
static volatile int step_raise;               /* the watch's next hit raises SIGUSR1 */
static uint64_t step_signals, step_wrong;

static E2E_NOIPA uint64_t step_fn(uint64_t x)
{
	if (!step_ret_ra)
		step_ret_ra = (uintptr_t)__builtin_return_address(0);
	return x * 3 + 1;
}
static uint64_t (*volatile step_p)(uint64_t) = step_fn;

static void step_entry(struct np_ctx *ctx, void *data)
{
	(void)data;
	if (!step_entry_ra)
		step_entry_ra = (uintptr_t)__builtin_return_address(0);
	uint64_t *x = np_ctx_call_data(ctx);
	if (x)
		*x = np_ctx_arg(ctx, 0);
}

/* A redirect: the caller gets x * 5 + 2, the body does not run. */
static E2E_NOIPA uint64_t skip_fn(uint64_t x)
{
	return x * 3 + 1;
}
static uint64_t (*volatile skip_p)(uint64_t) = skip_fn;

static void skip_entry(struct np_ctx *ctx, void *data)
{
	(void)data;
	if (!step_entry_ra)
		step_entry_ra = (uintptr_t)__builtin_return_address(0);
	np_ctx_override_return(ctx, np_ctx_arg(ctx, 0) * 5 + 2);
}

static uint64_t (*volatile step_call)(uint64_t); /* step_p or skip_p */
static uint64_t step_want(uint64_t x)
{
	return step_call == skip_p ? x * 5 + 2 : x * 3 + 1;
}

static void step_on_usr1(int sig)
{
	(void)sig;
	step_signals++;
	if (step_call(7) != step_want(7))
		step_wrong++;
}

static void step_watch_hit(const struct np_watch_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	if (!step_raise)
		return;
	step_raise = 0;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL); /* until the trap returns */
	pthread_kill(pthread_self(), SIGUSR1);
}

/* One call with a watch on each instruction address of [from, to) in
 * turn, but those of [skip_from, skip_to); addresses that are not code are
 * refused and skipped. Returns the calls made; *signalled counts those
 * whose signal came. */
static uint64_t step_through(uintptr_t from, uintptr_t to, uintptr_t skip_from, uintptr_t skip_to,
			     uint64_t *signalled)
{
	uint64_t calls = 0;
	for (uintptr_t a = from & ~(uintptr_t)(INSN_STEP - 1); a < to; a += INSN_STEP) {
		if (a >= skip_from && a < skip_to)
			continue;
		struct np_watch_opts wo = NP_WATCH_OPTS(.name = "step");
		struct np_watch *w =
			np_watch_attach((void *)a, INSN_STEP, NP_WATCH_EXEC, step_watch_hit, &wo);
		if (!w)
			continue;
		uint64_t before = step_signals;
		step_raise = 1;
		if (step_call(a) != step_want(a))
			step_wrong++;
		step_raise = 0;
		calls++;
		*signalled += step_signals != before;
		CHECK_EQ(np_watch_detach(w), 0);
		np_watch_free(w);
	}
	return calls;
}

static bool have_exec_watch(void)
{
	if (np_watch_slots(NP_WATCH_EXEC) > 0)
		return true;
	printf("# no instruction watchpoints here (%s): not run\n", strerror(errno));
	return false;
}

TEST(a_signal_before_each_instruction_of_a_return_probe_loses_no_return)
{
	if (!have_exec_watch())
		return;
	struct sigaction sa = {.sa_handler = step_on_usr1}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	e2e_log_capture();
	for (unsigned k = 0; k < 2; k++) {
		struct np_probe_opts o = e2e_opts(step_entry, NULL, strategies[k]);
		o.on_return = check_storm_return;
		struct np_probe *p = np_probe_attach((void *)step_fn, &o);
		CHECK(p);
		if (!p)
			continue;
		step_call = step_p;
		step_p(1); /* a thread's first hit takes the general path */
		step_entry_ra = step_ret_ra = 0;
		CHECK_EQ(step_p(2), 7);
		/* The call returns to its way back: the site's trampoline's
		 * return point (x86-64 JUMP) or the shared return trampoline.
		 * At a JUMP the handler returns into the site's trampoline too
		 * (at a TRAP it runs in the SIGTRAP handler). */
		step_signals = step_wrong = ret_handler_calls = ret_wrong = 0;
		uint64_t hits = np_probe_hits(p), missed = np_probe_missed(p), signalled = 0;
		uintptr_t ret = step_ret_ra, entry = step_entry_ra;
		uint64_t calls = step_through(ret, ret + 1024, 0, 0, &signalled);
		if (np_probe_strategy(p) == NP_STRATEGY_JUMP)
			calls += step_through(entry - 256, entry + 512, ret, ret + 1024, &signalled);
		CHECK_EQ(step_wrong, 0);
		CHECK(signalled > 10);
		CHECK_EQ(np_probe_hits(p) - hits + np_probe_missed(p) - missed, calls + step_signals);
		CHECK_EQ(ret_wrong, 0);
		CHECK_EQ(ret_handler_calls, np_probe_hits(p) - hits);
		printf("# %s: %llu calls, %llu signalled\n", np_strategy_name(np_probe_strategy(p)),
		       (unsigned long long)calls, (unsigned long long)signalled);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	sigaction(SIGUSR1, &old, NULL);
}

/* The same at a redirect (np_ctx_override_return). On x86-64 a JUMP
 * site's block leaves for the shared redirect routine with `movabs
 * $routine, %rax; jmp *%rax` after the handler calls; that routine is
 * swept too. arm64 and riscv64 redirect through a breakpoint: the kernel
 * switches every register at once, and nothing of the way out is left to
 * interrupt. */
TEST(a_signal_before_each_instruction_of_a_redirect_goes_where_each_call_was_sent)
{
	if (!have_exec_watch())
		return;
	struct sigaction sa = {.sa_handler = step_on_usr1}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	e2e_log_capture();
	struct np_probe_opts o = e2e_opts(skip_entry, NULL, NP_STRATEGY_JUMP);
	struct np_probe *p = np_probe_attach((void *)skip_fn, &o);
	CHECK(p);
	if (p) {
		step_call = skip_p;
		skip_p(1);
		step_entry_ra = 0;
		CHECK_EQ(skip_p(2), 12);
		uintptr_t from = step_entry_ra, to = step_entry_ra + 256;
#if defined(__x86_64__)
		for (const uint8_t *b = (const uint8_t *)step_entry_ra; b < (const uint8_t *)to; b++)
			if (b[0] == 0x48 && b[1] == 0xb8 && b[10] == 0xff && b[11] == 0xe0) {
				memcpy(&from, b + 2, 8);
				to = from + 256;
				break;
			}
		CHECK(from != step_entry_ra);
#endif
		step_signals = step_wrong = 0;
		uint64_t signalled = 0, calls = step_through(from, to, 0, 0, &signalled);
		CHECK_EQ(step_wrong, 0);
		CHECK(signalled > 10);
		printf("# %llu calls, %llu signalled\n", (unsigned long long)calls,
		       (unsigned long long)signalled);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	sigaction(SIGUSR1, &old, NULL);
}

TEST_MAIN()

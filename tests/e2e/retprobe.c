/* SPDX-License-Identifier: MIT */
/*
 * Return probes: the return address is swapped for a trampoline and kept on
 * a per-thread shadow stack. Checked under deep recursion, past the shadow
 * stack's capacity, across longjmp and pthread_exit, on several threads at
 * once. C++ exceptions through probed frames are in retprobe_cxx.cpp.
 *
 * Every return handler checks its value against the argument the matching
 * entry handler saw, kept on a per-thread stack: a mismatched shadow entry
 * shows up as a wrong value, a lost one as a count off by one.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
#define for_each_strategy(s)                                                   \
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++)

/* ---- rec(n) = n + rec(n - 1): a non-tail recursion ------------------------ */

static uint64_t (*volatile rec_p)(uint64_t);
static E2E_NOIPA uint64_t rec(uint64_t n)
{
	return n ? n + rec_p(n - 1) : 0;
}
static uint64_t (*volatile rec_p)(uint64_t) = rec;

static uint64_t tri(uint64_t n)
{
	return n * (n + 1) / 2;
}

/* Per-thread stack of the arguments seen by entry handlers. */
#define ARGS_MAX 20000
static __thread uint64_t *args;
static __thread size_t nargs;

static void thread_args_init(void)
{
	if (!args)
		args = calloc(ARGS_MAX, sizeof *args);
	nargs = 0;
}

struct rcheck {
	uint64_t entries, returns, bad; /* atomic */
	uint64_t func;
	uint64_t last_ret; /* deep test: must grow */
};

static void rec_entry(struct np_ctx *ctx, void *data)
{
	struct rcheck *c = data;

	__atomic_fetch_add(&c->entries, 1, __ATOMIC_RELAXED);
	if (np_ctx_is_return(ctx) || np_ctx_func(ctx) != c->func || nargs == ARGS_MAX)
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
	else
		args[nargs++] = np_ctx_arg(ctx, 0);
}

static void rec_return(struct np_ctx *ctx, void *data)
{
	struct rcheck *c = data;

	__atomic_fetch_add(&c->returns, 1, __ATOMIC_RELAXED);
	if (!np_ctx_is_return(ctx) || np_ctx_func(ctx) != c->func || nargs == 0 ||
	    np_ctx_retval(ctx) != tri(args[--nargs]) || np_ctx_pc(ctx) == c->func)
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
}

static struct np_probe *attach(void *fn, np_handler_fn on_entry, np_handler_fn on_return,
			       struct rcheck *c, enum np_strategy s)
{
	struct np_probe_opts o = e2e_opts(on_entry, c, s);

	memset(c, 0, sizeof *c);
	c->func = (uint64_t)(uintptr_t)fn;
	o.on_return = on_return;
	struct np_probe *p = np_probe_attach(fn, &o);
	if (!p)
		fprintf(stderr, "# attach (%s) failed: %s; log: %s\n", np_strategy_name(s),
			strerror(errno), e2e_log_state.last);
	return p;
}

TEST(entry_and_return_handlers_of_one_probe_see_the_function_address)
{
	e2e_log_capture();
	thread_args_init();
	for_each_strategy(s) {
		struct rcheck c;
		struct np_probe *p = attach((void *)rec, rec_entry, rec_return, &c, *s);

		CHECK(p);
		CHECK_EQ(rec_p(3), 6);
		CHECK_EQ(c.entries, 4);
		CHECK_EQ(c.returns, 4);
		CHECK_EQ(c.bad, 0);
		CHECK_EQ(nargs, 0);
		if (!p)
			continue;
		CHECK_EQ(np_probe_hits(p), 4);
		CHECK_EQ(np_probe_missed(p), 0);
		CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(rec_p(3), 6);
		CHECK_EQ(c.entries, 4);
	}
}

static void count_return(struct np_ctx *ctx, void *data)
{
	struct rcheck *c = data;

	__atomic_fetch_add(&c->returns, 1, __ATOMIC_RELAXED);
	if (!np_ctx_is_return(ctx) || np_ctx_func(ctx) != c->func)
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
}

TEST(separate_entry_and_return_probes_on_one_function_both_fire)
{
	e2e_log_capture();
	thread_args_init();
	for_each_strategy(s) {
		struct rcheck ce, cr;
		struct np_probe *pe = attach((void *)rec, rec_entry, NULL, &ce, *s);
		struct np_probe *pr = attach((void *)rec, NULL, count_return, &cr, *s);

		CHECK(pe && pr);
		CHECK_EQ(rec_p(5), 15);
		CHECK_EQ(ce.entries, 6);
		CHECK_EQ(cr.returns, 6);
		CHECK_EQ(ce.bad + cr.bad, 0);
		nargs = 0;
		if (pr) {
			CHECK_EQ(np_probe_hits(pr), 6); /* arms, as it has no entry handler */
			CHECK_EQ(e2e_detach_free(pr), 0);
		}
		CHECK_EQ(rec_p(5), 15);
		CHECK_EQ(cr.returns, 6);
		if (pe)
			CHECK_EQ(e2e_detach_free(pe), 0);
		nargs = 0;
	}
}

TEST(recursion_10000_deep_every_return_fires_once_with_its_own_value)
{
	e2e_log_capture();
	thread_args_init();
	for_each_strategy(s) {
		struct rcheck c;
		struct np_probe *p = attach((void *)rec, rec_entry, rec_return, &c, *s);

		CHECK(p);
		CHECK_EQ(rec_p(10000), tri(10000));
		CHECK_EQ(c.entries, 10001);
		CHECK_EQ(c.returns, 10001);
		CHECK_EQ(c.bad, 0);
		if (p) {
			CHECK_EQ(np_probe_missed(p), 0);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
		nargs = 0;
	}
}

/* ---- deeper than any shadow stack ---------------------------------------- */

#define DEEP 200000

static void deep_return(struct np_ctx *ctx, void *data)
{
	struct rcheck *c = data;
	uint64_t v = np_ctx_retval(ctx);

	/* Returns come innermost first, so the values only grow. */
	if (c->returns && v <= c->last_ret)
		c->bad++;
	c->last_ret = v;
	c->returns++;
}

static void *deep_thread(void *arg)
{
	return (void *)(uintptr_t)(rec_p(DEEP) == tri(DEEP));
}

TEST(recursion_200000_deep_is_unchanged_and_lost_returns_are_counted_missed)
{
	struct rcheck c;
	pthread_attr_t attr;
	pthread_t t;
	void *ok = NULL;

	e2e_log_capture();
	struct np_probe *p = attach((void *)rec, NULL, deep_return, &c, NP_STRATEGY_AUTO);
	CHECK(p);
	pthread_attr_init(&attr);
	CHECK_EQ(pthread_attr_setstacksize(&attr, 256u << 20), 0);
	CHECK_EQ(pthread_create(&t, &attr, deep_thread, NULL), 0);
	pthread_join(t, &ok);
	pthread_attr_destroy(&attr);
	CHECK(ok == (void *)1);
	CHECK_EQ(c.bad, 0);
	if (!p)
		return;
	uint64_t hits = np_probe_hits(p), missed = np_probe_missed(p);
	printf("# %d calls: %" PRIu64 " returns probed, %" PRIu64 " missed\n", DEEP + 1,
	       c.returns, missed);
	CHECK_EQ(c.returns + missed, DEEP + 1);
	/* Hits are arms: with or without the ones the full shadow stack lost. */
	CHECK(hits + missed == DEEP + 1 || hits == DEEP + 1);
	CHECK_EQ(e2e_detach_free(p), 0);
}

/* ---- longjmp past probed frames -------------------------------------------- */

static jmp_buf lj_env;
static int (*volatile lj_p)(int, int);
static E2E_NOIPA int lj(int depth, int jump)
{
	if (depth == 0) {
		if (jump)
			longjmp(lj_env, 1);
		return 1;
	}
	return 1 + lj_p(depth - 1, jump);
}
static int (*volatile lj_p)(int, int) = lj;

static struct {
	uint64_t entries, returns;
	uint64_t seq[8];
} ljr;

static void lj_entry(struct np_ctx *ctx, void *data)
{
	ljr.entries++;
}

static void lj_return(struct np_ctx *ctx, void *data)
{
	if (ljr.returns < 8)
		ljr.seq[ljr.returns] = np_ctx_retval(ctx) & 0xffffffff;
	ljr.returns++;
}

TEST(longjmp_past_probed_frames_then_later_calls_return_correctly)
{
	struct np_probe_opts o = e2e_opts(lj_entry, NULL, NP_STRATEGY_AUTO);

	o.on_return = lj_return;
	e2e_log_capture();
	for_each_strategy(s) {
		o.strategy = *s;
		struct np_probe *p = np_probe_attach((void *)lj, &o);
		volatile int bad = 0;

		CHECK(p);
		for (volatile int i = 0; i < 1000; i++) {
			memset(&ljr, 0, sizeof ljr);
			if (setjmp(lj_env) == 0) {
				lj_p(5, 1);
				bad++; /* not reached */
			}
			if (ljr.entries != 6 || ljr.returns != 0)
				bad++;
			memset(&ljr, 0, sizeof ljr);
			if (lj_p(3, 0) != 4 || ljr.entries != 4 || ljr.returns != 4)
				bad++;
			for (int k = 0; k < 4; k++)
				if (ljr.seq[k] != (uint64_t)k + 1)
					bad++;
		}
		CHECK_EQ(bad, 0);
		if (p) {
			printf("# %s: missed %" PRIu64 " after 1000 longjmps\n",
			       np_strategy_name(*s), np_probe_missed(p));
			CHECK_EQ(e2e_detach_free(p), 0);
		}
	}
}

/* ---- np_ctx_call_data: one word from a call's entry to its return ------- */

static uint64_t cd_bad, cd_returns;

static void cd_entry(struct np_ctx *ctx, void *data)
{
	uint64_t *word = np_ctx_call_data(ctx);

	if (!word || *word != 0) /* every call starts at 0 */
		cd_bad++;
	else
		*word = np_ctx_arg(ctx, 0) + 1; /* depth + 1: never 0 */
}

static void cd_return(struct np_ctx *ctx, void *data)
{
	uint64_t *word = np_ctx_call_data(ctx);
	uint64_t depth = word ? *word - 1 : ~0ull;

	/* lj(depth, 0) returns depth + 1: the word must be this call's own */
	if (!word || (np_ctx_retval(ctx) & 0xffffffff) != depth + 1)
		cd_bad++;
	cd_returns++;
}

static void cd_no_return_handler(struct np_ctx *ctx, void *data)
{
	if (np_ctx_call_data(ctx))
		cd_bad++;
}

TEST(call_data_travels_from_each_entry_to_its_own_return_across_longjmp)
{
	struct np_probe_opts o = e2e_opts(cd_entry, NULL, NP_STRATEGY_AUTO);

	o.on_return = cd_return;
	e2e_log_capture();
	for_each_strategy(s) {
		o.strategy = *s;
		struct np_probe *volatile p = np_probe_attach((void *)lj, &o);

		CHECK(p);
		cd_bad = cd_returns = 0;
		for (volatile int i = 0; i < 200; i++) {
			if (setjmp(lj_env) == 0)
				lj_p(6, 1); /* leaves 7 frames' words behind */
			CHECK_EQ(lj_p(4, 0), 5);
		}
		CHECK_EQ(cd_bad, 0);
		CHECK_EQ(cd_returns, 200 * 5);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

TEST(call_data_is_null_for_a_probe_without_return_handlers)
{
	struct np_probe_opts o = e2e_opts(cd_no_return_handler, NULL, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach((void *)lj, &o);

	CHECK(p);
	cd_bad = 0;
	CHECK_EQ(lj_p(3, 0), 4);
	CHECK_EQ(cd_bad, 0);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

/* ---- threads exiting inside probed frames ---------------------------------- */

static int (*volatile exiter_p)(int);
static uint64_t cleanups;
static void count_cleanup(void *arg)
{
	__atomic_fetch_add(&cleanups, 1, __ATOMIC_RELAXED);
}
static E2E_NOIPA int exiter(int depth)
{
	int r = 0;

	if (depth == 0) {
		pthread_cleanup_push(count_cleanup, NULL);
		pthread_exit((void *)42);
		pthread_cleanup_pop(0);
	} else {
		r = 1 + exiter_p(depth - 1);
	}
	return r;
}
static int (*volatile exiter_p)(int) = exiter;

static volatile int stop_workers;

static void *exiting_thread(void *arg)
{
	return (void *)(intptr_t)exiter_p(3);
}

static void *rec_worker(void *arg)
{
	uint64_t *wrong = arg;

	thread_args_init();
	while (!stop_workers)
		if (rec_p(50) != tri(50))
			__atomic_fetch_add(wrong, 1, __ATOMIC_RELAXED);
	return NULL;
}

TEST(threads_exiting_inside_probed_functions_leave_other_threads_correct)
{
	enum { EXITERS = 32, WORKERS = 2 };
	struct rcheck ce, cr;
	pthread_t w[WORKERS], t[EXITERS];
	uint64_t wrong = 0;

	e2e_log_capture();
	thread_args_init();
	struct np_probe *pe = attach((void *)exiter, NULL, count_return, &ce, NP_STRATEGY_AUTO);
	struct np_probe *pr = attach((void *)rec, rec_entry, rec_return, &cr, NP_STRATEGY_AUTO);
	CHECK(pe && pr);
	stop_workers = 0;
	cleanups = 0;
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, rec_worker, &wrong);
	for (int i = 0; i < EXITERS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, exiting_thread, NULL), 0);
	for (int i = 0; i < EXITERS; i++) {
		void *ret = NULL;

		pthread_join(t[i], &ret);
		CHECK(ret == (void *)42);
	}
	stop_workers = 1;
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	CHECK_EQ(cleanups, EXITERS);
	CHECK_EQ(ce.returns, 0); /* no exiter frame ever returned */
	CHECK_EQ(wrong, 0);
	CHECK_EQ(cr.bad, 0);
	CHECK_EQ(cr.entries, cr.returns);
	nargs = 0;
	CHECK_EQ(rec_p(10), tri(10)); /* and this thread still works */
	CHECK_EQ(cr.bad, 0);
	if (pe)
		CHECK_EQ(e2e_detach_free(pe), 0);
	if (pr)
		CHECK_EQ(e2e_detach_free(pr), 0);
}

/* ---- arguments on the stack -------------------------------------------------
 * The function is entered with the stack it would have had: its stack
 * arguments where the caller put them, read by the function and by the
 * entry handler, and its frame at the same address probed or not. */

static uint64_t (*volatile stk_p)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
				  uint64_t, uint64_t, uint64_t, uint64_t);
static E2E_NOIPA uint64_t stk(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
			      uint64_t f, uint64_t g, uint64_t h, uint64_t i, uint64_t j)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}
static uint64_t (*volatile stk_p)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
				  uint64_t, uint64_t, uint64_t, uint64_t) = stk;

static uintptr_t (*volatile stk_where_p)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
					 uint64_t, uint64_t, uint64_t);
static E2E_NOIPA uintptr_t stk_where(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
				     uint64_t f, uint64_t g, uint64_t h)
{
	(void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h;
	/* its frame: where its stack arguments are, above it */
	return (uintptr_t)__builtin_frame_address(0);
}
static uintptr_t (*volatile stk_where_p)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
					 uint64_t, uint64_t, uint64_t) = stk_where;

static uint64_t stk_expect(uint64_t k)
{
	uint64_t sum = 0;
	for (uint64_t n = 1; n <= 10; n++)
		sum += n * (k + n);
	return sum;
}

static void stk_entry(struct np_ctx *ctx, void *data)
{
	struct rcheck *c = data;
	uint64_t k = np_ctx_arg(ctx, 0) - 1;

	__atomic_fetch_add(&c->entries, 1, __ATOMIC_RELAXED);
	for (unsigned n = 0; n < 10; n++)
		if (np_ctx_arg(ctx, n) != k + n + 1)
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
	uint64_t *word = np_ctx_call_data(ctx);
	if (word)
		*word = stk_expect(k);
}

static void stk_return(struct np_ctx *ctx, void *data)
{
	struct rcheck *c = data;
	uint64_t *word = np_ctx_call_data(ctx);

	__atomic_fetch_add(&c->returns, 1, __ATOMIC_RELAXED);
	if (!word || np_ctx_retval(ctx) != *word)
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
}

static uintptr_t where_now(void)
{
	return stk_where_p(1, 2, 3, 4, 5, 6, 7, 8);
}

TEST(return_probe_on_a_function_with_stack_arguments_keeps_its_stack_as_it_was)
{
	e2e_log_capture();
	uintptr_t unprobed = where_now();
	for_each_strategy(s) {
		struct rcheck c, cw;
		struct np_probe *p = attach((void *)stk, stk_entry, stk_return, &c, *s);
		struct np_probe *pw = attach((void *)stk_where, NULL, count_return, &cw, *s);

		CHECK(p && pw);
		for (uint64_t k = 0; k < 1000; k++)
			CHECK_EQ(stk_p(k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7, k + 8, k + 9,
				       k + 10),
				 stk_expect(k));
		CHECK_EQ(c.entries, 1000);
		CHECK_EQ(c.returns, 1000);
		CHECK_EQ(c.bad, 0);
		CHECK_EQ(where_now(), unprobed);
		CHECK_EQ(cw.returns, 1);
		CHECK_EQ(cw.bad, 0);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		if (pw)
			CHECK_EQ(e2e_detach_free(pw), 0);
	}
}

/* ---- signal handlers calling probed functions inside an armed call ------------
 * The thread is inside a call whose return is armed when a signal arrives;
 * the handler calls probed functions (the same one, and another) whose
 * returns are armed and taken first. On the thread's stack and on an
 * alternate signal stack (frames at unrelated addresses). */

static uint64_t (*volatile sig_outer_p)(uint64_t);
static uint64_t (*volatile sig_inner_p)(uint64_t);
static volatile sig_atomic_t sig_inner_ok;

static E2E_NOIPA uint64_t sig_inner(uint64_t x)
{
	return x * 5;
}

static void on_sigusr2(int sig)
{
	(void)sig;
	/* the same function again (its own frame above the interrupted one),
	 * then another probed one */
	sig_inner_ok = sig_outer_p(100) == 100 * 7 + 1 && sig_inner_p(3) == 15;
}

static E2E_NOIPA uint64_t sig_outer(uint64_t x)
{
	if (x < 100)
		raise(SIGUSR2); /* delivered before raise returns */
	return x * 7 + 1;
}
static uint64_t (*volatile sig_outer_p)(uint64_t) = sig_outer;
static uint64_t (*volatile sig_inner_p)(uint64_t) = sig_inner;

struct sigret {
	uint64_t seq[8]; /* return values in the order they came */
	unsigned n;
};

static void sig_return(struct np_ctx *ctx, void *data)
{
	struct sigret *r = data;
	if (r->n < 8)
		r->seq[r->n] = np_ctx_retval(ctx);
	r->n++;
}

static void sigret_run(enum np_strategy s, bool altstack)
{
	struct sigret r = {0};
	struct np_probe_opts o = e2e_opts(NULL, &r, s);
	struct sigaction sa = {.sa_handler = on_sigusr2, .sa_flags = altstack ? SA_ONSTACK : 0},
			 old;
	stack_t ss = {.ss_size = 1 << 16}, old_ss;

	o.on_return = sig_return;
	ss.ss_sp = malloc(ss.ss_size);
	if (altstack)
		CHECK_EQ(sigaltstack(&ss, &old_ss), 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, &old);
	struct np_probe *po = np_probe_attach((void *)sig_outer, &o);
	struct np_probe *pi = np_probe_attach((void *)sig_inner, &o);
	CHECK(po && pi);
	for (int i = 0; i < 100; i++) {
		r.n = 0;
		sig_inner_ok = 0;
		CHECK_EQ(sig_outer_p((uint64_t)i), (uint64_t)i * 7 + 1);
		CHECK(sig_inner_ok);
		/* the handler's calls return first, then the interrupted one */
		CHECK_EQ(r.n, 3);
		CHECK_EQ(r.seq[0], 701);
		CHECK_EQ(r.seq[1], 15);
		CHECK_EQ(r.seq[2], (uint64_t)i * 7 + 1);
	}
	if (po) {
		CHECK_EQ(np_probe_missed(po), 0);
		CHECK_EQ(e2e_detach_free(po), 0);
	}
	if (pi)
		CHECK_EQ(e2e_detach_free(pi), 0);
	sigaction(SIGUSR2, &old, NULL);
	if (altstack) {
		ss.ss_flags = SS_DISABLE;
		CHECK_EQ(sigaltstack(&ss, NULL), 0);
	}
	free(ss.ss_sp);
}

TEST(return_probes_in_a_signal_handler_that_interrupts_an_armed_call)
{
	e2e_log_capture();
	for_each_strategy(s) {
		sigret_run(*s, false);
		sigret_run(*s, true);
	}
}

/* ---- detach, or a new probe, while calls are armed -------------------------------
 * A thread waits inside a probed call while the probe is removed (then put
 * back: the site is reused with a new generation): the call returns to its
 * caller with its value, and the removed probe's handler does not run. */

static volatile int held_go, held_in;
static E2E_NOIPA uint64_t held(uint64_t x)
{
	__atomic_store_n(&held_in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&held_go, __ATOMIC_ACQUIRE))
		sched_yield();
	return x + 40;
}
static uint64_t (*volatile held_p)(uint64_t) = held;

static void *held_thread(void *arg)
{
	return (void *)(uintptr_t)held_p((uint64_t)(uintptr_t)arg);
}

TEST(detach_and_reattach_while_a_call_is_armed_returns_it_to_its_caller)
{
	e2e_log_capture();
	for_each_strategy(s) {
		for (int reattach = 0; reattach < 2; reattach++) {
			struct rcheck c, c2;
			struct np_probe *p = attach((void *)held, NULL, count_return, &c, *s);
			struct np_probe *p2 = NULL;
			pthread_t t;
			void *ret = NULL;

			CHECK(p);
			held_go = held_in = 0;
			CHECK_EQ(pthread_create(&t, NULL, held_thread, (void *)2), 0);
			while (!__atomic_load_n(&held_in, __ATOMIC_ACQUIRE))
				sched_yield();
			if (p)
				CHECK_EQ(e2e_detach_free(p), 0);
			if (reattach) /* the same address, a new life of the site */
				p2 = attach((void *)held, NULL, count_return, &c2, *s);
			__atomic_store_n(&held_go, 1, __ATOMIC_RELEASE);
			pthread_join(t, &ret);
			CHECK(ret == (void *)42);
			CHECK_EQ(c.returns, 0);
			if (p2) {
				CHECK_EQ(c2.returns, 0); /* its entry was never seen */
				CHECK_EQ(held_p(1), 41);
				CHECK_EQ(c2.returns, 1);
				CHECK_EQ(e2e_detach_free(p2), 0);
			}
		}
	}
}

/* A second probe at the site while a call is armed rebuilds the trampoline:
 * the call returns through the old one, whose handler set is older than
 * the site's, and still reaches its caller with its value. */
TEST(a_probe_added_while_a_call_is_armed_leaves_that_call_correct)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct rcheck c, c2;
		struct np_probe *p = attach((void *)held, NULL, count_return, &c, *s);
		pthread_t t;
		void *ret = NULL;

		CHECK(p);
		held_go = held_in = 0;
		CHECK_EQ(pthread_create(&t, NULL, held_thread, (void *)2), 0);
		while (!__atomic_load_n(&held_in, __ATOMIC_ACQUIRE))
			sched_yield();
		struct np_probe *p2 = attach((void *)held, NULL, count_return, &c2, *s);
		CHECK(p2);
		__atomic_store_n(&held_go, 1, __ATOMIC_RELEASE);
		pthread_join(t, &ret);
		CHECK(ret == (void *)42);
		CHECK_EQ(c.returns, 1);
		CHECK_EQ(c.bad + c2.bad, 0);
		CHECK_EQ(held_p(1), 41);
		CHECK_EQ(c.returns, 2);
		CHECK(c2.returns >= 1); /* the armed call may or may not run it */
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		if (p2)
			CHECK_EQ(e2e_detach_free(p2), 0);
	}
}

/* ---- several threads, each with its own shadow stack ------------------------ */

struct deep_arg {
	uint64_t wrong;
	int depth;
};

static void *rec_rounds(void *arg)
{
	struct deep_arg *a = arg;

	thread_args_init();
	for (int i = 0; i < 200; i++)
		if (rec_p((uint64_t)a->depth + (uint64_t)i % 7) != tri((uint64_t)a->depth + (uint64_t)i % 7))
			a->wrong++;
	return NULL;
}

TEST(return_probes_on_several_threads_match_their_own_calls)
{
	enum { THREADS = 4 };
	struct deep_arg a[THREADS];
	pthread_t t[THREADS];

	e2e_log_capture();
	for_each_strategy(s) {
		struct rcheck c;
		struct np_probe *p = attach((void *)rec, rec_entry, rec_return, &c, *s);

		CHECK(p);
		for (int i = 0; i < THREADS; i++) {
			a[i] = (struct deep_arg){0, 100 * (i + 1)};
			pthread_create(&t[i], NULL, rec_rounds, &a[i]);
		}
		for (int i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			CHECK_EQ(a[i].wrong, 0);
		}
		CHECK_EQ(c.bad, 0);
		CHECK_EQ(c.entries, c.returns);
		if (p) {
			CHECK_EQ(np_probe_missed(p), 0);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
	}
}

TEST_MAIN()

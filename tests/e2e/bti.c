/* SPDX-License-Identifier: MIT */
/*
 * Probes on code built with branch protection (arm64 BTI and PAC, what
 * -mbranch-protection=standard emits), in a library whose pages are
 * guarded (bti_arm64.S). Every function is called directly (through the
 * PLT, a br x17), through a pointer (blr) and from inside the library
 * (call_via), so that a branch landing anywhere but on a landing pad
 * kills the test with SIGILL. The first test checks that this machine
 * enforces BTI at all (qemu-aarch64 does; NP_EXPECT_BTI=1 makes it a
 * failure when it does not).
 *
 * An entry probe at a function that starts with a landing pad goes on the
 * instruction after it: the pad stays, the handlers see the entry's
 * arguments and the function's address, a return probe works through the
 * pointer-authenticated x30 (paciasp/pacibsp ... autiasp/retaa).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

typedef uint64_t fn_t(uint64_t);
extern fn_t bti_c_add1, pac_a_twice, pac_b_twice, pac_a_retaa, bti_pac, bti_jt, bti_nopad;
extern uint64_t call_via(fn_t *fn, uint64_t x);
extern char bti_jt_target[];

static const struct target {
	const char *name;
	fn_t *fn;
	unsigned pads; /* landing pads at the entry */
	uint64_t (*want)(uint64_t);
} *cur;

static uint64_t w_add1(uint64_t x) { return x + 1; }
static uint64_t w_twice(uint64_t x) { return 2 * (x + 1); }
static uint64_t w_add4(uint64_t x) { return x + 4; }
static uint64_t w_thrice(uint64_t x) { return 3 * (x + 1); }
static uint64_t w_add5(uint64_t x) { return x + 5; }

static const struct target targets[] = {
	{"bti_c_add1 (bti c)", bti_c_add1, 1, w_add1},
	{"pac_a_twice (paciasp/autiasp)", pac_a_twice, 1, w_twice},
	{"pac_b_twice (pacibsp/autibsp)", pac_b_twice, 1, w_twice},
	{"pac_a_retaa (paciasp/retaa)", pac_a_retaa, 1, w_add4},
	{"bti_pac (bti c; paciasp)", bti_pac, 2, w_thrice},
	{"bti_jt (bti c; br to bti j)", bti_jt, 1, w_add5},
};

/* Calls fn(x) three ways; every result must be want(x). */
static unsigned call_three_ways(fn_t *fn, uint64_t x, uint64_t want)
{
	fn_t *volatile ptr = fn;
	unsigned ok = 0;
	ok += ptr(x) == want;
	ok += call_via(fn, x) == want;
	if (fn == bti_c_add1)
		ok += bti_c_add1(x) == want; /* through the PLT */
	else if (fn == pac_a_twice)
		ok += pac_a_twice(x) == want;
	else
		ok += ptr(x) == want;
	return ok;
}

static uint32_t first_word(fn_t *fn)
{
	uint32_t w;
	memcpy(&w, (const void *)fn, 4);
	return w;
}

/* Does an indirect call to a word that is no landing pad fault? */
static bool nopad_call_faults(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		fn_t *volatile ptr = bti_nopad;
		FILE *quiet = freopen("/dev/null", "w", stderr); /* qemu reports the signal */
		(void)quiet;
		ptr(1);
		_exit(0);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGILL;
}

static bool enforced;

TEST(branch_protection_is_enforced_here)
{
	enforced = nopad_call_faults();
	if (!enforced)
		printf("# BTI is not enforced here: a wrong landing would go unnoticed\n");
	if (getenv("NP_EXPECT_BTI"))
		CHECK(enforced);
}

/* Code is written through a brief mprotect, which must give the page its
 * PROT_BTI back (maps does not show it): else the page is no longer
 * guarded, and the checks this file relies on are gone. */
TEST(patching_a_guarded_page_leaves_it_guarded)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	struct np_probe *p = np_probe_attach((void *)pac_a_twice, &o);
	CHECK(p);
	CHECK_EQ(nopad_call_faults(), enforced);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
	CHECK_EQ(nopad_call_faults(), enforced);
}

struct seen {
	unsigned entries, returns;
	uint64_t arg, func, pc, retval;
};

static void on_entry(struct np_ctx *ctx, void *data)
{
	struct seen *s = data;
	s->entries++;
	s->arg = np_ctx_arg(ctx, 0);
	s->func = np_ctx_func(ctx);
	s->pc = np_ctx_pc(ctx);
}

static void on_return(struct np_ctx *ctx, void *data)
{
	struct seen *s = data;
	s->returns++;
	s->retval = np_ctx_retval(ctx);
	s->func = np_ctx_func(ctx);
}

static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP,
					      NP_STRATEGY_JUMP};

/* entry, return or both, each strategy, each function */
static void probe_one(const struct target *t, enum np_strategy s, bool entry, bool ret)
{
	struct seen seen = {0};
	struct np_probe_opts o = e2e_opts(entry ? on_entry : NULL, &seen, s);
	o.on_return = ret ? on_return : NULL;
	uint32_t pad = first_word(t->fn);
	uint64_t site = (uint64_t)(uintptr_t)t->fn + 4 * t->pads;

	cur = t;
	struct np_probe *p = np_probe_attach((void *)t->fn, &o);
	if (!p) {
		fprintf(stderr, "# %s %s: %s (%s)\n", t->name, np_strategy_name(s), strerror(errno),
			e2e_log_state.last);
		CHECK(p);
		return;
	}
	CHECK(s == NP_STRATEGY_AUTO || np_probe_strategy(p) == s);
	CHECK_EQ(first_word(t->fn), pad); /* the landing pad stays */
	CHECK_EQ((uint64_t)(uintptr_t)np_probe_addr(p), (uint64_t)(uintptr_t)t->fn);
	CHECK_EQ(call_three_ways(t->fn, 10, t->want(10)), 3);
	CHECK_EQ(np_probe_hits(p), 3);
	if (entry) {
		CHECK_EQ(seen.entries, 3);
		CHECK_EQ(seen.arg, 10);
		CHECK_EQ(seen.pc, site); /* the instruction after the pad */
	}
	if (ret) {
		CHECK_EQ(seen.returns, 3);
		CHECK_EQ(seen.retval, t->want(10));
	}
	CHECK_EQ(seen.func, (uint64_t)(uintptr_t)t->fn);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK_EQ(call_three_ways(t->fn, 7, t->want(7)), 3);
}

TEST(entry_and_return_probes_at_landing_pads_under_every_strategy)
{
	e2e_log_capture();
	for (size_t i = 0; i < sizeof(targets) / sizeof(*targets); i++)
		for (int k = 0; k < 3; k++) {
			probe_one(&targets[i], strategies[k], true, false);
			probe_one(&targets[i], strategies[k], false, true);
			probe_one(&targets[i], strategies[k], true, true);
		}
}

static void skip_body(struct np_ctx *ctx, void *data)
{
	++*(unsigned *)data;
	CHECK_EQ(np_ctx_override_return(ctx, 4242), 0);
}

/* The return to the caller goes through x30 as signed by paciasp. */
TEST(override_return_after_a_pac_pad_returns_to_the_caller)
{
	for (size_t i = 0; i < sizeof(targets) / sizeof(*targets); i++)
		for (int k = 0; k < 2; k++) {
			unsigned hits = 0;
			struct np_probe_opts o = e2e_opts(skip_body, &hits, strategies[k]);
			struct np_probe *p = np_probe_attach((void *)targets[i].fn, &o);
			CHECK(p);
			if (!p)
				continue;
			CHECK_EQ(call_three_ways(targets[i].fn, 1, 4242), 3);
			CHECK_EQ(hits, 3);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
}

/* A landing pad inside a function (a jump-table target) is no entry: a
 * probe there is refused and says why; the next instruction is fine. */
TEST(a_jump_target_landing_pad_is_refused_and_the_word_after_it_is_probed)
{
	struct e2e_counter c = {0};
	e2e_log_capture();
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach(bti_jt_target, &o);
	CHECK(p == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(strstr(e2e_log_state.last, "landing pad") != NULL);
	for (int k = 0; k < 3; k++) {
		o.strategy = strategies[k];
		p = np_probe_attach(bti_jt_target + 4, &o);
		CHECK(p);
		if (!p)
			continue;
		c.hits = 0;
		CHECK_EQ(call_three_ways(bti_jt, 1, 6), 3);
		CHECK_EQ(c.hits, 3);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* Return probes on a function and on the one it calls, both past pads:
 * two frames signed with the entry sp of each. */
TEST(nested_return_probes_past_pads)
{
	struct seen outer = {0}, inner = {0};
	struct np_probe_opts o = e2e_opts(on_entry, &outer, NP_STRATEGY_AUTO);
	o.on_return = on_return;
	struct np_probe *a = np_probe_attach((void *)pac_a_twice, &o);
	o.data = &inner;
	struct np_probe *b = np_probe_attach((void *)bti_c_add1, &o);
	CHECK(a && b);
	CHECK_EQ(call_three_ways(pac_a_twice, 20, 42), 3);
	CHECK_EQ(outer.returns, 3);
	CHECK_EQ(outer.retval, 42);
	CHECK_EQ(inner.returns, 3);
	CHECK_EQ(inner.retval, 21);
	if (a)
		CHECK_EQ(e2e_detach_free(a), 0);
	if (b)
		CHECK_EQ(e2e_detach_free(b), 0);
}

TEST_MAIN()

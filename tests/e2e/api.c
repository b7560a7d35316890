/* SPDX-License-Identifier: MIT */
/*
 * The public API end to end: argument access, return override, return
 * handlers, several handlers on one site, probes inside another probe's
 * displaced bytes, EDEADLK from handlers, error codes, strategy names, the
 * log callback, the recursion guard, and probes in a shared library, in a
 * non-PIE executable (this file is also built with -no-pie) and in code the
 * program mapped itself.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "libtarget.h"
#include "test.h"

extern uint8_t api_seq[], api_seq_straddle[], api_loop[], api_tiny_nopad[], api_after_tiny[];
extern uint8_t api_nop5[], api_pun[], api_pun2[], api_tail_ptr[], api_held[];
typedef uint64_t fn1(uint64_t);
typedef uint64_t fn2(uint64_t, uint64_t);
#define CALL1(f, x) (((fn1 *)(void *)(f))(x))
#define CALL2(f, x, y) (((fn2 *)(void *)(f))((x), (y)))

static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
#define for_each_strategy(s)                                                   \
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++)

/* ---- C targets ---------------------------------------------------------- */

static int side_effects;

static E2E_NOIPA uint64_t eight_args(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
				     uint64_t e, uint64_t f, uint64_t g, uint64_t h)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}
static E2E_NOIPA int with_side_effect(int x)
{
	side_effects++;
	return 2 * x;
}
static E2E_NOIPA long add_one(long x)
{
	return x + 1;
}
static E2E_NOIPA uint64_t guarded(uint64_t x)
{
	return x + 1;
}
static uint64_t (*volatile eight_args_p)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
					 uint64_t, uint64_t, uint64_t) = eight_args;
static int (*volatile with_side_effect_p)(int) = with_side_effect;
static long (*volatile add_one_p)(long) = add_one;
static uint64_t (*volatile guarded_p)(uint64_t) = guarded;

static uint64_t some_data = 1;

static struct np_probe *attach(void *addr, np_handler_fn on_entry, np_handler_fn on_return,
			       void *data, enum np_strategy s)
{
	struct np_probe_opts o = e2e_opts(on_entry, data, s);

	o.on_return = on_return;
	struct np_probe *p = np_probe_attach(addr, &o);
	if (!p)
		fprintf(stderr, "# attach %p (%s) failed: %s; log: %s\n", addr,
			np_strategy_name(s), strerror(errno), e2e_log_state.last);
	return p;
}

/* ---- arguments, override, return values --------------------------------- */

struct argrec {
	uint64_t a[8];
	unsigned calls;
};

static void record_args(struct np_ctx *ctx, void *data)
{
	struct argrec *r = data;

	for (unsigned i = 0; i < 8; i++)
		r->a[i] = np_ctx_arg(ctx, i);
	r->calls++;
}

TEST(args_0_to_7_at_entry_including_two_from_the_stack)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct argrec r = {{0}, 0};
		struct np_probe *p = attach((void *)eight_args, record_args, NULL, &r, *s);

		CHECK(p);
		uint64_t want = 0;

		for (unsigned i = 0; i < 8; i++)
			want += (i + 1) * (0x100 + i);
		CHECK_EQ(eight_args_p(0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107),
			 want);
		CHECK_EQ(r.calls, 1);
		for (unsigned i = 0; i < 8; i++)
			CHECK_EQ(r.a[i], 0x100 + i);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

struct ovr {
	int rc, err;
};

static void override_4242(struct np_ctx *ctx, void *data)
{
	struct ovr *o = data;

	errno = 0;
	o->rc = np_ctx_override_return(ctx, 4242);
	o->err = errno;
}

TEST(override_return_skips_the_body_and_the_caller_sees_the_value)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct ovr o = {1, 0};
		struct np_probe *p = attach((void *)with_side_effect, override_4242, NULL, &o, *s);

		side_effects = 0;
		CHECK_EQ(with_side_effect_p(5), 4242);
		CHECK_EQ(side_effects, 0);
		CHECK_EQ(o.rc, 0);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(with_side_effect_p(5), 10);
		CHECK_EQ(side_effects, 1);
	}
}

TEST(override_return_away_from_a_function_entry_fails_with_einval)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct ovr o = {0, 0};
		struct np_probe *p = attach(api_seq + 4, override_4242, NULL, &o, *s);

		CHECK_EQ(CALL1(api_seq, 5), 22);
		CHECK_EQ(o.rc, (uint64_t)-1);
		CHECK_EQ(o.err, EINVAL);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

struct retrec {
	unsigned entries, returns;
	bool entry_is_return, return_is_return;
	uint64_t retval, func_at_entry, func_at_return;
	int set_rc;
};

static void note_entry(struct np_ctx *ctx, void *data)
{
	struct retrec *r = data;

	r->entries++;
	r->entry_is_return = np_ctx_is_return(ctx);
	r->func_at_entry = np_ctx_func(ctx);
}

static void replace_retval(struct np_ctx *ctx, void *data)
{
	struct retrec *r = data;

	r->returns++;
	r->return_is_return = np_ctx_is_return(ctx);
	r->retval = np_ctx_retval(ctx);
	r->func_at_return = np_ctx_func(ctx);
	r->set_rc = np_ctx_set_retval(ctx, 1000);
}

TEST(return_handler_sees_the_return_value_and_can_replace_it)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct retrec r = {0};
		struct np_probe *p = attach((void *)add_one, note_entry, replace_retval, &r, *s);

		CHECK_EQ(add_one_p(41), 1000);
		CHECK_EQ(r.entries, 1);
		CHECK_EQ(r.returns, 1);
		CHECK(!r.entry_is_return);
		CHECK(r.return_is_return);
		CHECK_EQ(r.retval, 42);
		CHECK_EQ(r.func_at_entry, (uintptr_t)add_one);
		CHECK_EQ(r.func_at_return, (uintptr_t)add_one);
		CHECK_EQ(r.set_rc, 0);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(add_one_p(41), 42);
	}
}

/* ---- several probes on one site, nested sites ---------------------------- */

static struct {
	int seq[16];
	int n;
} order;

static void append_id(struct np_ctx *ctx, void *data)
{
	if (order.n < 16)
		order.seq[order.n++] = (int)(intptr_t)data;
}

static int order_is(int a, int b, int c)
{
	int want[3] = {a, b, c}, n = c ? 3 : 2;

	if (order.n != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (order.seq[i] != want[i])
			return 0;
	return 1;
}

TEST(handlers_on_one_site_run_in_attach_order_also_after_detaching_the_middle)
{
	uint8_t orig[16];

	memcpy(orig, api_seq, sizeof orig);
	e2e_log_capture();
	for_each_strategy(s) {
		struct np_probe *p1 = attach(api_seq, append_id, NULL, (void *)1, *s);
		struct np_probe *p2 = attach(api_seq, append_id, NULL, (void *)2, *s);
		struct np_probe *p3 = attach(api_seq, append_id, NULL, (void *)3, *s);

		CHECK(p1 && p2 && p3);
		order.n = 0;
		CHECK_EQ(CALL1(api_seq, 1), 10);
		CHECK(order_is(1, 2, 3));
		CHECK_EQ(e2e_detach_free(p2), 0);
		order.n = 0;
		CHECK_EQ(CALL1(api_seq, 1), 10);
		CHECK(order_is(1, 3, 0));
		struct np_probe *p4 = attach(api_seq, append_id, NULL, (void *)4, *s);
		order.n = 0;
		CHECK_EQ(CALL1(api_seq, 1), 10);
		CHECK(order_is(1, 3, 4));
		CHECK_EQ(e2e_detach_free(p1), 0);
		CHECK_EQ(e2e_detach_free(p3), 0);
		CHECK_EQ(e2e_detach_free(p4), 0);
		CHECK(memcmp(orig, api_seq, sizeof orig) == 0);
	}
}

#if defined(__x86_64__)
/* api_seq: push %rbp (+0), mov %rsp,%rbp (+1), lea (+4), add (+8), pop (+12):
 * a 5-byte jump at +0 displaces +1 and +4 too. */
static const uint8_t seq_code[14] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8d, 0x04,
				     0x7f, 0x48, 0x83, 0xc0, 0x07, 0x5d, 0xc3};
static const int seq_offs[] = {1, 4, 8, 12};
#define SEQ_PAGE_END 3 /* a page ends at api_seq_straddle + 3: in mov, before lea */
#elif defined(__aarch64__)
/* api_seq: stp (+0), mov x29, sp (+4), add (+8), add (+12), ldp (+16): a
 * jump displaces one word; the probes go on the words next to it. */
static const uint8_t seq_code[24] = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91,
				     0x00, 0x04, 0x00, 0x8b, 0x00, 0x1c, 0x00, 0x91,
				     0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6};
static const int seq_offs[] = {4, 8, 12, 16};
#define SEQ_PAGE_END 8 /* a page ends at api_seq_straddle + 8: before the first add */
#endif

/* Probes on api_seq's entry and on each of its displaced instructions, in
 * every attach and detach order, at `seq` (api_seq or a copy of it). */
static void both_fire(uint8_t *seq)
{
	const uint8_t *want = seq_code;
	const int *offs = seq_offs;

	CHECK(memcmp(seq, want, sizeof seq_code) == 0);
	e2e_log_capture();
	for (int k = 0; k < 4; k++) {
		for (int order_mask = 0; order_mask < 4; order_mask++) {
			struct e2e_counter ca = {.addr = (uintptr_t)seq};
			struct e2e_counter cb = {.addr = (uintptr_t)(seq + offs[k])};
			bool inner_first = order_mask & 1, detach_inner_first = order_mask & 2;
			struct np_probe *a = NULL, *b = NULL;

			if (inner_first)
				b = attach(seq + offs[k], e2e_count, NULL, &cb, NP_STRATEGY_AUTO);
			a = attach(seq, e2e_count, NULL, &ca, NP_STRATEGY_AUTO);
			if (!inner_first)
				b = attach(seq + offs[k], e2e_count, NULL, &cb, NP_STRATEGY_AUTO);
			CHECK(a && b);
			CHECK_EQ(CALL1(seq, 5), 22);
			CHECK_EQ(CALL1(seq, 6), 25);
			CHECK_EQ(ca.hits, 2);
			CHECK_EQ(cb.hits, 2);
			CHECK_EQ(ca.bad_pc + cb.bad_pc, 0);
			if (a && b && k == 0 && order_mask == 0)
				printf("# seq+0: %s, seq+1: %s\n",
				       np_strategy_name(np_probe_strategy(a)),
				       np_strategy_name(np_probe_strategy(b)));
			if (detach_inner_first && b)
				CHECK_EQ(e2e_detach_free(b), 0);
			CHECK_EQ(CALL1(seq, 5), 22);
			if (a)
				CHECK_EQ(e2e_detach_free(a), 0);
			if (!detach_inner_first && b)
				CHECK_EQ(e2e_detach_free(b), 0);
			CHECK_EQ(ca.hits, 3);
			CHECK_EQ(cb.hits, detach_inner_first ? 2 : 3);
			CHECK(memcmp(seq, want, sizeof seq_code) == 0);
		}
	}
}

TEST(probe_inside_another_probes_displaced_bytes_both_fire)
{
	both_fire(api_seq);
}

TEST(displaced_bytes_across_a_page_boundary_are_found_from_either_page)
{
	CHECK_EQ(((uintptr_t)api_seq_straddle + SEQ_PAGE_END) % 4096, 0);
	both_fire(api_seq_straddle);
}

/* ---- handler restrictions, recursion guard -------------------------------- */

struct dl {
	struct np_probe *victim, *attached;
	int attach_errno, detach_rc, detach_errno;
	struct e2e_counter unused;
};

static void attach_and_detach_inside(struct np_ctx *ctx, void *data)
{
	struct dl *d = data;
	struct np_probe_opts o = e2e_opts(e2e_count, &d->unused, NP_STRATEGY_AUTO);

	errno = 0;
	d->attached = np_probe_attach(api_seq + 4, &o);
	d->attach_errno = errno;
	errno = 0;
	d->detach_rc = np_probe_detach(d->victim);
	d->detach_errno = errno;
}

/* A JUMP trampoline runs a site's handlers inline; past what one block
 * holds (at least 64 probes with entry and return handlers: x86-64 64,
 * arm64 more), an attach fails with E2BIG, and the probes already there
 * keep counting. */
TEST(too_many_probes_at_one_jump_site_fail_with_e2big_the_others_still_count)
{
	enum { MAX = 400 };
	struct np_probe *p[MAX];
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	int n = 0, err = 0;

	o.on_return = e2e_count;
	e2e_log_capture();
	for (; n < MAX; n++)
		if (!(p[n] = np_probe_attach((void *)add_one, &o))) {
			err = errno;
			break;
		}
	CHECK(n >= 64 && n < MAX);
	CHECK_EQ(err, E2BIG);
	CHECK_EQ(add_one_p(41), 42);
	CHECK_EQ(c.hits, 2 * (uint64_t)n); /* each probe: entry and return */
	for (int i = 0; i < n; i++)
		CHECK_EQ(e2e_detach_free(p[i]), 0);
	CHECK_EQ(add_one_p(1), 2);
	CHECK_EQ(c.hits, 2 * (uint64_t)n);
}

/* Probe counters live in per-thread slots, reused after a detach: a new
 * probe in a slot an earlier probe counted in starts from zero. 65,537
 * attaches go once around the 65,536 slots. The site keeps a probe of its
 * own, so that each attach only rebuilds its trampoline; as retired
 * trampolines are not reused (docs/design.md), the 65,537 of them run in a
 * child, so that the address space of the later cases stays as it was. */
static int slot_round(void)
{
	enum { ROUND = 65536 + 1 };
	struct e2e_counter keep = {0}, c = {0};
	struct np_probe *k = attach((void *)add_one, e2e_count, NULL, &keep, NP_STRATEGY_AUTO);
	int wrong = !k;

	for (int i = 0; k && i < ROUND && wrong < 3; i++) {
		struct np_probe *p = attach((void *)add_one, e2e_count, NULL, &c, NP_STRATEGY_AUTO);
		if (p)
			add_one_p(i);
		if (!p || np_probe_hits(p) != 1 || np_probe_missed(p) != 0) {
			printf("# attach %d: %llu hits, %llu missed\n", i,
			       (unsigned long long)np_probe_hits(p),
			       (unsigned long long)np_probe_missed(p));
			wrong++;
		}
		if (p && e2e_detach_free(p))
			wrong++;
	}
	if (k && (c.hits != ROUND || np_probe_hits(k) != ROUND || e2e_detach_free(k)))
		wrong++;
	return wrong;
}

TEST(a_reused_counter_slot_counts_from_zero)
{
	int status = -1;

	e2e_log_capture();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(slot_round() ? 1 : 0);
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The two cases below are about x86's variable-length instructions: a
 * jump that displaces several of them, and one that ends on a call. */
#if defined(__x86_64__)
/* ---- a batch some of whose probes cannot be placed safely ----------------
 * A running thread that blocks the engine's signal cannot be asked where it
 * stopped: a probe whose jump displaces several instructions (api_seq) is
 * refused with EAGAIN and its bytes are left alone, while one that
 * displaces a single instruction (api_nop5) in the same batch is placed. */

static volatile int blocker_stop, blocker_ready;

static void *blocker(void *arg)
{
	sigset_t set;
	const char *env = getenv("NANOPROBE_SIGNAL");
	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, env ? atoi(env) : SIGRTMAX - 3);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	blocker_ready = 1;
	while (!blocker_stop)
		; /* running: its pc must be asked for */
	return NULL;
}

TEST(a_batch_refuses_only_the_probes_that_need_an_unanswering_thread_moved)
{
	struct e2e_counter cs = {0}, cn = {0};
	struct np_probe_opts os = e2e_opts(e2e_count, &cs, NP_STRATEGY_JUMP);
	struct np_probe_opts on = e2e_opts(e2e_count, &cn, NP_STRATEGY_JUMP);
	const struct np_probe_opts *op[2] = {&os, &on};
	void *addrs[2] = {api_seq, api_nop5};
	struct np_probe *p[2];
	int errs[2];
	uint8_t seq[16];
	pthread_t t;

	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

	CHECK(memcmp(api_nop5, nop5, sizeof nop5) == 0);
	e2e_log_capture();
	memcpy(seq, api_seq, sizeof seq);
	blocker_stop = blocker_ready = 0;
	CHECK_EQ(pthread_create(&t, NULL, blocker, NULL), 0);
	while (!blocker_ready)
		sched_yield();
	struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(.cnt = 2, .addrs = addrs, .opts = op,
							  .probes = p, .errs = errs);
	CHECK_EQ(np_probe_attach_many(&mo), 1);
	blocker_stop = 1;
	pthread_join(t, NULL);
	CHECK(!p[0]);
	CHECK_EQ(errs[0], EAGAIN);
	CHECK(memcmp(seq, api_seq, sizeof seq) == 0);
	CHECK(p[1] != NULL);
	CHECK_EQ(errs[1], 0);
	CHECK_EQ(CALL1(api_seq, 2), 13);
	CHECK_EQ(CALL1(api_nop5, 2), 6);
	CHECK_EQ(cs.hits, 0);
	CHECK_EQ(cn.hits, 1);
	if (p[1])
		CHECK_EQ(e2e_detach_free(p[1]), 0);
}

/* ---- a jump that ends on a call ---------------------------------------------
 * api_pun's call starts 4 bytes in: the jump at the entry ends on the
 * call's first byte and leaves the call in place, so the callee sees its
 * real return address and the CPU predicts its return. A probe on the call
 * then makes the region displace it after all. api_pun2's call starts 3
 * bytes in: displaced (relocated), as before. */

typedef uint64_t fn0(void);
#define CALL0(f) (((fn0 *)(void *)(f))())

static void pun_case(uint8_t *fn, unsigned call_off, const uint8_t *want, size_t nwant,
		     bool may_pun)
{
	uint8_t orig[16];
	uint64_t ret = (uintptr_t)fn + call_off + 5;

	CHECK(memcmp(fn, want, nwant) == 0);
	memcpy(orig, fn, sizeof orig);
	for (int o = 0; o < 2; o++) {
		struct e2e_counter ce = {.addr = (uintptr_t)fn}, cc = {.addr = ret - 5};
		struct np_probe *pe = attach(fn, e2e_count, NULL, &ce, NP_STRATEGY_AUTO);
		CHECK(pe && np_probe_strategy(pe) == NP_STRATEGY_JUMP);
		/* the call's first bytes are still there, under the jump */
		bool punned = memcmp(fn + call_off, orig + call_off, 5 - call_off) == 0;
#ifndef E2E_NOPIE
		CHECK(punned == may_pun); /* 384 MiB below a PIE there is room */
#else /* at 0x400000 that window lies below address 0: displaced */
		CHECK(!punned || may_pun);
#endif
		printf("# %s: the jump %s on the call\n", call_off == 4 ? "api_pun" : "api_pun2",
		       punned ? "ends" : "does not end");
		CHECK_EQ(CALL0(fn), ret);
		CHECK_EQ(ce.hits, 1);
		/* a probe on the call itself: the region displaces it now */
		struct np_probe *pc = attach(fn + call_off, e2e_count, NULL, &cc, NP_STRATEGY_AUTO);
		CHECK(pc);
		CHECK_EQ(CALL0(fn), ret);
		CHECK_EQ(ce.hits, 2);
		CHECK_EQ(cc.hits, 1);
		CHECK_EQ(ce.bad_pc + cc.bad_pc, 0);
		struct np_probe *first = o ? pc : pe, *second = o ? pe : pc;
		CHECK_EQ(e2e_detach_free(first), 0);
		CHECK_EQ(CALL0(fn), ret);
		CHECK_EQ(e2e_detach_free(second), 0);
		CHECK_EQ(CALL0(fn), ret);
		CHECK(memcmp(fn, orig, sizeof orig) == 0);
	}
}

TEST(a_jump_ends_on_a_call_that_stays_in_place_until_the_call_is_probed)
{
	static const uint8_t pun[] = {0x55, 0x48, 0x89, 0xe5, 0xe8};
	static const uint8_t pun2[] = {0x41, 0x54, 0x55, 0xe8};

	e2e_log_capture();
	pun_case(api_pun, 4, pun, sizeof pun, true);
	pun_case(api_pun2, 3, pun2, sizeof pun2, false); /* two bytes: displaced */
}

struct pun_ret {
	uint64_t returns, value;
};

static void pun_return(struct np_ctx *ctx, void *data)
{
	struct pun_ret *r = data;
	r->returns++;
	r->value = np_ctx_retval(ctx);
}

TEST(a_jump_that_ends_on_a_call_serves_return_probes_and_refuses_a_trap_on_the_call)
{
	struct pun_ret r = {0};
	struct e2e_counter c = {0};
	uint64_t ret = (uintptr_t)api_pun + 9;
	struct np_probe *p = attach(api_pun, NULL, pun_return, &r, NP_STRATEGY_AUTO);

	e2e_log_capture();
	CHECK(p);
#ifndef E2E_NOPIE
	CHECK_EQ(api_pun[4], 0xe8);
#endif
	CHECK_EQ(CALL0(api_pun), ret);
	CHECK_EQ(r.returns, 1);
	CHECK_EQ(r.value, ret);
	errno = 0;
	CHECK(!attach(api_pun + 4, e2e_count, NULL, &c, NP_STRATEGY_TRAP));
	CHECK_EQ(errno, EBUSY);
	CHECK_EQ(CALL0(api_pun), ret);
	CHECK_EQ(r.returns, 2);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

#endif /* __x86_64__ */

TEST(attach_and_detach_from_a_handler_fail_with_edeadlk)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct e2e_counter c = {0};
		struct dl d = {0};

		d.victim = attach(api_loop, e2e_count, NULL, &c, NP_STRATEGY_AUTO);
		struct np_probe *p = attach(api_seq, attach_and_detach_inside, NULL, &d, *s);
		CHECK(d.victim && p);
		CHECK_EQ(CALL1(api_seq, 1), 10);
		CHECK(d.attached == NULL);
		CHECK_EQ(d.attach_errno, EDEADLK);
		CHECK_EQ(d.detach_rc, (uint64_t)-1);
		CHECK_EQ(d.detach_errno, EDEADLK);
		CHECK_EQ(CALL2(api_loop, 3, 4), 12); /* the victim is still attached */
		CHECK_EQ(c.hits, 1);
		if (d.attached)
			e2e_detach_free(d.attached);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		if (d.victim)
			CHECK_EQ(e2e_detach_free(d.victim), 0);
	}
}

struct guardrec {
	unsigned calls;
	uint64_t inner;
};

static void call_probed_function_again(struct np_ctx *ctx, void *data)
{
	struct guardrec *g = data;

	g->calls++;
	g->inner = guarded_p(100);
}

TEST(handler_calling_its_own_probed_function_is_counted_missed_not_recursed)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct guardrec g = {0, 0};
		struct np_probe *p = attach((void *)guarded, call_probed_function_again, NULL, &g, *s);

		CHECK(p);
		CHECK_EQ(guarded_p(1), 2);
		CHECK_EQ(g.calls, 1);
		CHECK_EQ(g.inner, 101);
		if (!p)
			continue;
		CHECK_EQ(np_probe_hits(p), 1);
		CHECK_EQ(np_probe_missed(p), 1);
		CHECK_EQ(guarded_p(2), 3);
		CHECK_EQ(np_probe_hits(p), 2);
		CHECK_EQ(np_probe_missed(p), 2);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* ---- errors, names, logging ---------------------------------------------- */

static void expect_refused(void *addr, struct np_probe_opts *o, int want_errno, const char *what)
{
	unsigned logged = e2e_log_state.count;

	errno = 0;
	struct np_probe *p = np_probe_attach(addr, o);
	if (p || errno != want_errno)
		fprintf(stderr, "# %s: got %p, errno %d (%s), want %d\n", what, (void *)p, errno,
			strerror(errno), want_errno);
	CHECK(p == NULL);
	CHECK_EQ(errno, want_errno);
	CHECK(e2e_log_state.count > logged); /* every failure is logged */
	if (p)
		e2e_detach_free(p);
}

TEST(attach_errors_have_specific_errno_and_are_logged)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);
	struct np_probe_opts bad;

	e2e_log_capture();
	expect_refused(NULL, &o, EINVAL, "NULL address");
	bad = o;
	bad.sz = 0;
	expect_refused(api_seq, &bad, EINVAL, "opts.sz == 0");
	expect_refused(api_seq + 2, &o, EINVAL, "inside mov %rsp,%rbp (ELF bounds)");
	expect_refused(api_loop + 3, &o, EINVAL, "inside add %rdi,%rax (ELF bounds)");
	bad = o;
	bad.func_start = api_seq;
	bad.func_size = 14;
	expect_refused(api_seq + 6, &bad, EINVAL, "inside lea (bounds passed)");
	bad = o;
	bad.on_entry = NULL;
	bad.on_return = e2e_count;
	expect_refused(api_seq + 4, &bad, EINVAL, "on_return away from an entry");

	void *gone = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED);
	munmap(gone, 4096);
	expect_refused(gone, &o, ENOEXEC, "unmapped page");
	expect_refused(&some_data, &o, ENOEXEC, "data in .data");
	expect_refused(&c, &o, ENOEXEC, "data on the stack");

	errno = 0;
	CHECK_EQ(np_probe_detach(NULL), (uint64_t)-1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(CALL1(api_seq, 5), 22);
	CHECK_EQ(c.hits, 0);
}

#if defined(__x86_64__)
/* The bytes of x86-64's JUMP that are kept in place for a branch landing
 * inside them: the site takes a jmp rel8 over the instructions before that
 * branch's target, to a hop in the padding after the function's ret
 * (docs/design.md, "Hops"); the target and what follows stay as they are.
 * Where no hop is in reach the site traps, and a forced JUMP is refused
 * with the reason (e2e-hop's h_neg, h_fall, h_tiny). */
static uint8_t *keeps_in_place(void *fn, unsigned from, const uint8_t *before, size_t len)
{
	const uint8_t *code = fn;
	CHECK_EQ(code[0], 0xeb); /* jmp rel8 */
	CHECK(memcmp(code + from, before + from, len - from) == 0);
	return (uint8_t *)(uintptr_t)(code + 2 + (int8_t)code[1]); /* the hop */
}

TEST(a_forced_jump_over_a_loop_head_takes_a_hop)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	uint8_t before[11];

	memcpy(before, api_loop, sizeof(before));
	e2e_log_capture();
	struct np_probe *p = np_probe_attach(api_loop, &o); /* the loop head at +2 */
	CHECK(p && np_probe_strategy(p) == NP_STRATEGY_JUMP);
	if (!p)
		return;
	uint8_t *hop = keeps_in_place(api_loop, 2, before, sizeof(before));
	CHECK(hop >= (uint8_t *)api_loop + sizeof(before) && hop[0] == 0xe9);
	CHECK_EQ(CALL2(api_loop, 3, 4), 12);
	CHECK_EQ(c.hits, 1);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp(api_loop, before, sizeof(before)) == 0);
}

/* A tail call through a pointer read from memory, the frame released (it
 * has none): the jump lands where pointers the program holds point, none
 * in the entry's bytes, and the entry is a JUMP (it was a TRAP while such
 * a jump counted as one that may land anywhere). */
TEST(a_tail_call_through_a_loaded_pointer_leaves_the_entry_to_a_jump)
{
	static const uint8_t head[] = {0x48, 0x85, 0xff, 0x74, 0x09, 0x48, 0x8b, 0x05};
	struct e2e_counter c = {.addr = (uintptr_t)api_tail_ptr};

	CHECK(memcmp(api_tail_ptr, head, sizeof head) == 0);
	e2e_log_capture();
	struct np_probe *p = attach(api_tail_ptr, e2e_count, NULL, &c, NP_STRATEGY_AUTO);
	CHECK(p && np_probe_strategy(p) == NP_STRATEGY_JUMP);
	CHECK_EQ(CALL1(api_tail_ptr, 5), 22);
	CHECK_EQ(CALL1(api_tail_ptr, 0), 0);
	CHECK_EQ(c.hits, 2);
	CHECK_EQ(c.bad_pc, 0);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

/* The same kind of jump, through a pointer the program's data holds to
 * the function's second instruction: the engine reads the module's words
 * (held.c) and keeps a jump from displacing it. Had it missed that one,
 * the jump back would land inside the entry's patch. */
TEST(a_pointer_the_data_holds_into_the_entrys_bytes_keeps_them_in_place)
{
	static const uint8_t head[] = {0x31, 0xc0, 0x83, 0xc0, 0x01, 0x39, 0xf8};
	struct e2e_counter c = {.addr = (uintptr_t)api_held};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);

	CHECK(memcmp(api_held, head, sizeof head) == 0);
	e2e_log_capture();
	/* the 5-byte jump would displace +2: a jmp rel8 over the xor alone */
	struct np_probe *p = np_probe_attach(api_held, &o);
	CHECK(p && np_probe_strategy(p) == NP_STRATEGY_JUMP);
	if (!p)
		return;
	keeps_in_place(api_held, 2, head, sizeof head);
	CHECK_EQ(CALL1(api_held, 4), 4);
	CHECK_EQ(c.hits, 1);
	CHECK_EQ(c.bad_pc, 0);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp(api_held, head, sizeof head) == 0);
}

TEST(refused_forced_jump_says_why_for_a_one_byte_function_without_padding)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);

	e2e_log_capture();
	expect_refused(api_tiny_nopad, &o, EOPNOTSUPP, "forced JUMP on a 1-byte function");
	CHECK(e2e_log_state.last[0] != '\0');
	printf("# reason: %s\n", e2e_log_state.last);
	o.strategy = NP_STRATEGY_AUTO;
	struct np_probe *p = np_probe_attach(api_tiny_nopad, &o);
	CHECK(p);
	((void (*)(void))(void *)api_tiny_nopad)();
	CHECK_EQ(((uint64_t(*)(void))(void *)api_after_tiny)(), 1);
	CHECK_EQ(c.hits, 1);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}
#elif defined(__aarch64__)
/* One word displaced: a loop head right after it is no obstacle. */
TEST(forced_jump_next_to_a_loop_head_and_on_a_one_word_function_is_placed)
{
	struct e2e_counter c = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);

	e2e_log_capture();
	struct np_probe *p = np_probe_attach(api_loop, &o);
	CHECK(p);
	CHECK_EQ(CALL2(api_loop, 3, 4), 12);
	CHECK_EQ(c.hits, 1);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
	p = np_probe_attach(api_tiny_nopad, &o);
	CHECK(p);
	((void (*)(void))(void *)api_tiny_nopad)();
	CHECK_EQ(((uint64_t(*)(void))(void *)api_after_tiny)(), 1);
	CHECK_EQ(c.hits, 2);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

extern uint8_t api_excl[];

/* Between a load- and a store-exclusive, a trap or a trampoline clears the
 * exclusive monitor: the store would fail every time. Refused under every
 * strategy, with the reason; the words around the sequence are fine. */
TEST(words_of_an_exclusive_retry_loop_are_refused_with_the_reason)
{
	static const enum np_strategy all[] = {NP_STRATEGY_AUTO, NP_STRATEGY_JUMP,
					       NP_STRATEGY_TRAP};
	uint64_t v = 41;
	struct e2e_counter c = {0};

	e2e_log_capture();
	for (int k = 0; k < 3; k++) {
		struct np_probe_opts o = e2e_opts(e2e_count, &c, all[k]);
		for (int off = 4; off <= 12; off += 4) {
			expect_refused(api_excl + off, &o, EOPNOTSUPP, "inside ldaxr..stlxr");
			CHECK(strstr(e2e_log_state.last, "exclusive") != NULL);
		}
		struct np_probe *p = np_probe_attach(api_excl + 16, &o);
		CHECK(p);
		c.hits = 0;
		CHECK_EQ(CALL1(api_excl, (uintptr_t)&v), 41 + (uint64_t)k);
		CHECK_EQ(c.hits, 1);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
	CHECK_EQ(v, 44);
}
#endif

TEST(strategy_names_are_auto_jump_trap)
{
	CHECK(strcasecmp(np_strategy_name(NP_STRATEGY_AUTO), "auto") == 0);
	CHECK(strcasecmp(np_strategy_name(NP_STRATEGY_JUMP), "jump") == 0);
	CHECK(strcasecmp(np_strategy_name(NP_STRATEGY_TRAP), "trap") == 0);
}

TEST(log_fn_null_restores_the_default_sink)
{
	struct np_probe_opts o = e2e_opts(NULL, NULL, NP_STRATEGY_AUTO);

	e2e_log_capture();
	np_set_log_fn(NULL, NULL);
	CHECK(np_probe_attach(NULL, &o) == NULL); /* goes to stderr now */
	CHECK_EQ(e2e_log_state.count, 0);
	e2e_log_capture();
	CHECK(np_probe_attach(NULL, &o) == NULL);
	CHECK_EQ(e2e_log_state.count, 1);
}

/* ---- where the code lives -------------------------------------------------- */

static void record_retval(struct np_ctx *ctx, void *data)
{
	struct retrec *r = data;

	r->returns++;
	r->retval = np_ctx_retval(ctx);
}

TEST(probe_in_a_shared_library_at_entry_and_return)
{
	void *f = lib_mix_address();
	Dl_info info;

	CHECK(dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "libtarget"));
	e2e_log_capture();
	for_each_strategy(s) {
		struct argrec a = {{0}, 0};
		struct retrec r = {0};
		struct np_probe *pe = attach(f, record_args, NULL, &a, *s);
		struct np_probe *pr = attach(f, NULL, record_retval, &r, *s);
		uint64_t calls = lib_calls;

		CHECK(pe && pr);
		CHECK_EQ(lib_mix(3, 4), 3 * 31 + (4 ^ 0x5555));
		CHECK_EQ(lib_calls, calls + 1);
		CHECK_EQ(a.calls, 1);
		CHECK_EQ(a.a[0], 3);
		CHECK_EQ(a.a[1], 4);
		CHECK_EQ(r.returns, 1);
		CHECK_EQ(r.retval, 3 * 31 + (4 ^ 0x5555));
		if (pe)
			CHECK_EQ(e2e_detach_free(pe), 0);
		struct ovr o = {1, 0};
		struct np_probe *po = attach(f, override_4242, NULL, &o, *s);
		CHECK_EQ(lib_mix(3, 4), 4242);
		CHECK_EQ(lib_calls, calls + 1); /* body skipped */
		if (po)
			CHECK_EQ(e2e_detach_free(po), 0);
		if (pr)
			CHECK_EQ(e2e_detach_free(pr), 0);
	}
}

/* A module unloaded under its probe: the detach finds its patch gone and
 * must not write the old bytes into whatever is mapped there now. */
static void *load_unload(uint64_t (**fn)(uint64_t))
{
	const char *path = getenv("NP_LIBUNLOAD");
	void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	*fn = h ? (uint64_t (*)(uint64_t))dlsym(h, "unload_mix") : NULL;
	return h;
}

TEST(detach_after_the_module_was_unloaded_leaves_memory_alone)
{
	e2e_log_capture();
	for_each_strategy(s) {
		uint64_t (*fn)(uint64_t);
		struct argrec a = {{0}, 0};
		void *h = load_unload(&fn);
		CHECK(fn);
		if (!fn)
			return;
		struct np_probe *p = attach((void *)fn, record_args, NULL, &a, *s);
		CHECK(p);
		CHECK_EQ(fn(5), 5 * 2654435761ull + 17);
		CHECK_EQ(a.calls, 1);
		CHECK_EQ(dlclose(h), 0);
		/* something else at the same place: a fresh anonymous mapping */
		uint8_t *fill = mmap((void *)fn, 4096, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		if (fill != MAP_FAILED) {
			uint8_t zero[64] = {0};
			uintptr_t off = (uintptr_t)fn & 4095;
			CHECK(memcmp(fill + (off > 4032 ? 0 : off), zero, sizeof zero) == 0);
			munmap(fill, 4096);
		}
		/* loaded again: the original code, probe-able again */
		h = load_unload(&fn);
		CHECK(fn && fn(5) == 5 * 2654435761ull + 17);
		p = fn ? attach((void *)fn, record_args, NULL, &a, *s) : NULL;
		CHECK(p);
		if (fn)
			CHECK_EQ(fn(6), 6 * 2654435761ull + 17);
		CHECK_EQ(a.calls, 2);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		if (h)
			dlclose(h);
	}
}

/* ---- many threads, each hitting a probe for the first time at once ------ */

#define BURST 300
static pthread_barrier_t burst_start;
static uint64_t (*volatile burst_fn)(uint64_t, uint64_t);

static void *burst_thread(void *arg)
{
	pthread_barrier_wait(&burst_start);
	burst_fn(1, 2);
	return NULL;
}

/* `before` runs once the threads exist and before they hit. */
static void burst(struct np_probe **p, struct e2e_counter *c, void (*before)(struct np_probe **,
									      struct e2e_counter *))
{
	pthread_t t[BURST];
	int n = 0;
	pthread_barrier_init(&burst_start, NULL, BURST + 1);
	for (; n < BURST; n++)
		if (pthread_create(&t[n], NULL, burst_thread, NULL))
			break;
	CHECK_EQ(n, BURST);
	before(p, c);
	pthread_barrier_wait(&burst_start);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&burst_start);
}

static void attach_now(struct np_probe **p, struct e2e_counter *c)
{
	struct np_probe_opts o = e2e_opts(e2e_count, c, NP_STRATEGY_AUTO);
	*p = np_probe_attach((void *)burst_fn, &o);
}

static void maintain_now(struct np_probe **p, struct e2e_counter *c)
{
	np_maintain();
}

TEST(threads_started_before_the_attach_all_find_state_on_their_first_hit)
{
	struct e2e_counter c = {0};
	struct np_probe *p = NULL;
	burst_fn = (uint64_t (*)(uint64_t, uint64_t))lib_mix_address();
	c.addr = (uintptr_t)burst_fn;
	burst(&p, &c, attach_now);
	CHECK(p);
	CHECK_EQ(c.hits, BURST);
	if (p) {
		CHECK_EQ(np_probe_hits(p), BURST);
		CHECK_EQ(np_probe_missed(p), 0);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

TEST(np_maintain_readies_state_for_threads_started_after_the_attach)
{
	struct e2e_counter c = {0};
	struct np_probe *p = NULL;
	burst_fn = (uint64_t (*)(uint64_t, uint64_t))lib_mix_address();
	c.addr = (uintptr_t)burst_fn;
	attach_now(&p, &c);
	CHECK(p);
	burst(&p, &c, maintain_now);
	CHECK_EQ(c.hits, BURST);
	if (p) {
		CHECK_EQ(np_probe_hits(p), BURST);
		CHECK_EQ(np_probe_missed(p), 0);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* ---- a neighbour jumps into the bytes a patch would displace ------------ */

uint64_t api_nb_tail(uint64_t x);
uint64_t api_nb_target(uint64_t x);
uint64_t api_far_tail(uint64_t x);
uint64_t api_far_target(uint64_t x);
uint64_t api_nb_onto(void);
uint64_t api_nb_onto_tail(void);

#if defined(__x86_64__)
TEST(a_jump_from_a_neighbour_into_the_first_bytes_keeps_them_in_place)
{
	struct e2e_counter c = {.addr = (uintptr_t)api_nb_target};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	uint8_t before[9];

	memcpy(before, (void *)api_nb_target, sizeof(before));
	e2e_log_capture();
	struct np_probe *p = np_probe_attach((void *)api_nb_target, &o); /* +4 is a target */
	CHECK(p && np_probe_strategy(p) == NP_STRATEGY_JUMP);
	if (!p)
		return;
	keeps_in_place((void *)api_nb_target, 4, before, sizeof(before));
	CHECK_EQ(api_nb_tail(5), 6);	/* through the neighbour's jump: untouched */
	CHECK_EQ(api_nb_target(5), 11);
	CHECK_EQ(c.hits, 1);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp((void *)api_nb_target, before, sizeof(before)) == 0);
}

/* The planner decodes the whole module, not only the code around a site. */
TEST(a_jump_from_far_away_into_the_first_bytes_keeps_them_in_place)
{
	struct e2e_counter c = {.addr = (uintptr_t)api_far_target};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	uint8_t before[9];

	memcpy(before, (void *)api_far_target, sizeof(before));
	e2e_log_capture();
	struct np_probe *p = np_probe_attach((void *)api_far_target, &o);
	CHECK(p && np_probe_strategy(p) == NP_STRATEGY_JUMP);
	if (!p)
		return;
	keeps_in_place((void *)api_far_target, 4, before, sizeof(before));
	CHECK_EQ(api_far_tail(5), 6);
	CHECK_EQ(api_far_target(5), 16);
	CHECK_EQ(c.hits, 1);
	CHECK_EQ(e2e_detach_free(p), 0);
	CHECK(memcmp((void *)api_far_target, before, sizeof(before)) == 0);
}

/* No jump of its own fits at api_nb_onto+8; the one at the instruction
 * before would cover it, but a neighbour jumps onto it. A jmp rel8 at +8
 * to a hop after the function fits: the neighbour's path runs it too, so
 * both calls count (as a trap would). */
TEST(a_jump_from_a_neighbour_onto_the_site_keeps_the_instruction_before_in_place)
{
	static const uint8_t code[] = {0x55, 0x53, 0x52, 0x31, 0xc0, 0x83,
				       0xc8, 0x5a, 0x5a, 0x5b, 0x5d, 0xc3};
	uint8_t *site = (uint8_t *)(uintptr_t)api_nb_onto + 8;
	struct e2e_counter c = {.addr = (uintptr_t)site};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);

	CHECK(memcmp((void *)(uintptr_t)api_nb_onto, code, sizeof(code)) == 0);
	struct np_probe *p = np_probe_attach(site, &o);
	CHECK(p);
	if (!p)
		return;
	CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_JUMP);
	keeps_in_place(site, 2, code + 8, sizeof(code) - 8); /* +10 on as they were */
	CHECK_EQ(api_nb_onto(), 0x5a);
	CHECK_EQ(api_nb_onto_tail(), 0x5a);
	CHECK_EQ(c.hits, 2);
	CHECK_EQ(e2e_detach_free(p), 0);
}
#elif defined(__aarch64__)
/* The jump displaces the first word only: the word a neighbour jumps to
 * (+4, from next door and from 16 KiB away) stays where it is. */
static void jump_next_to_a_neighbours_target(uint64_t (*target)(uint64_t),
					     uint64_t (*tail)(uint64_t), uint64_t want)
{
	struct e2e_counter c = {.addr = (uintptr_t)target};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	struct np_probe *p = np_probe_attach((void *)target, &o);
	CHECK(p);
	if (!p)
		return;
	CHECK_EQ(tail(5), 6);
	CHECK_EQ(target(5), want);
	CHECK_EQ(c.hits, 1);
	CHECK_EQ(c.bad_pc, 0);
	CHECK_EQ(e2e_detach_free(p), 0);
}

TEST(a_jump_from_a_neighbour_or_from_far_away_to_the_second_word_keeps_working)
{
	e2e_log_capture();
	jump_next_to_a_neighbours_target(api_nb_target, api_nb_tail, 11);
	jump_next_to_a_neighbours_target(api_far_target, api_far_tail, 16);
}
#endif

/* Trampoline memory stays out of the heap's way: brk grows up from the
 * program break, and a chunk right above it made malloc fall back to mmap.
 * Anonymous executable mappings that existed before the probe (under
 * qemu-user: its signal trampoline page; chunks of earlier cases, such as
 * the one for libgcc's unwinder, which under qemu-user has nothing but the
 * heap's room within reach) are not this probe's. */
#define EXEC_ANON_MAX 256
static unsigned long long exec_anon_at_start[EXEC_ANON_MAX];

static unsigned exec_anon_within(uint64_t lo, uint64_t hi, bool record)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned found = 0, n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char perms[8], path[256] = "";
		bool old = false;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255s", &s, &e, perms, path) < 3 ||
		    perms[2] != 'x' || path[0])
			continue;
		if (record && n < EXEC_ANON_MAX)
			exec_anon_at_start[n++] = s;
		for (unsigned i = 0; i < EXEC_ANON_MAX; i++)
			old |= exec_anon_at_start[i] == s;
		found += !old && s < hi && e > lo;
	}
	if (f)
		fclose(f);
	return found;
}

__attribute__((constructor)) static void note_exec_anon_at_start(void)
{
	exec_anon_within(0, 0, true);
}

/* The probe below has other gaps within the jump's reach (the heap's room
 * is used only when nothing else is: under qemu-user, libraries loaded late
 * land a few hundred MiB above the program break). */
#if defined(__x86_64__)
#define JUMP_REACH (2ull << 30)
#elif defined(__aarch64__)
#define JUMP_REACH (128ull << 20)
#endif

/* Where the jump written at site goes: the trampoline. */
static uint64_t jump_target(uint64_t site)
{
#if defined(__x86_64__)
	int32_t d;
	memcpy(&d, (const uint8_t *)(uintptr_t)site + 1, sizeof(d));
	return *(const uint8_t *)(uintptr_t)site == 0xe9 ? site + 5 + (uint64_t)(int64_t)d : 0;
#else
	uint32_t w;
	memcpy(&w, (const void *)(uintptr_t)site, sizeof(w));
	int64_t off = (int64_t)((uint64_t)(w & 0x03ffffffu) << 38) >> 36; /* imm26 * 4 */
	return (w & 0xfc000000u) == 0x14000000u ? site + (uint64_t)off : 0; /* b */
#endif
}

TEST(trampolines_leave_the_heap_room_to_grow)
{
	exec_anon_within(0, 0, true);
	struct e2e_counter c = {.addr = (uintptr_t)api_nb_tail};
	struct np_probe_opts o = e2e_opts(e2e_count, &c, NP_STRATEGY_JUMP);
	struct np_probe *p = np_probe_attach((void *)api_nb_tail, &o);
	CHECK(p);
	uint64_t brk = (uint64_t)(uintptr_t)sbrk(0), site = (uintptr_t)api_nb_tail;
	uint64_t hi = brk + (256ull << 20) < site + JUMP_REACH ? brk + (256ull << 20)
								 : site + JUMP_REACH;
	CHECK_EQ(exec_anon_within(brk, hi, false), 0);
	uint64_t tramp = p ? jump_target(site) : 0;
	CHECK(tramp != 0);
	CHECK(tramp < brk || tramp >= hi);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

/* ---- functions that return twice ----------------------------------------- */

static void nop_handler(struct np_ctx *ctx, void *data)
{
}

TEST(return_probes_on_setjmp_and_vfork_are_refused_with_the_reason)
{
	static const char *const names[] = {"_setjmp", "__sigsetjmp", "vfork"};
	e2e_log_capture();
	for (unsigned i = 0; i < 3; i++) {
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		CHECK(fn != NULL);
		if (!fn)
			continue;
		struct np_probe_opts o = e2e_opts(NULL, NULL, NP_STRATEGY_AUTO);
		o.on_return = nop_handler;
		errno = 0;
		CHECK(np_probe_attach(fn, &o) == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
		CHECK(strstr(e2e_log_state.last, "returns twice") != NULL);
		/* an entry probe is fine there */
		o.on_return = NULL;
		o.on_entry = nop_handler;
		struct np_probe *p = np_probe_attach(fn, &o);
		CHECK(p != NULL);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

/* _start is jumped to, not called: on x86-64 a return probe there took
 * argc for the return address and replaced it (python3 then failed to
 * allocate its argv, under `count '*%return'`). */
TEST(a_return_probe_on_the_program_entry_point_is_refused_with_the_reason)
{
	void *start = (void *)getauxval(AT_ENTRY);
	struct np_probe_opts o = e2e_opts(NULL, NULL, NP_STRATEGY_AUTO);

	e2e_log_capture();
	o.on_return = nop_handler;
	errno = 0;
	CHECK(np_probe_attach(start, &o) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(strstr(e2e_log_state.last, "entry point is not called") != NULL);
}

#if defined(__x86_64__)
/* lea (%rdi,%rsi,1),%rax; add $5,%rax; ret */
static const uint8_t mapped_code[] = {0x48, 0x8d, 0x04, 0x37, 0x48, 0x83, 0xc0, 0x05, 0xc3};
#elif defined(__aarch64__)
/* add x0, x0, x1; add x0, x0, #5; ret */
static const uint8_t mapped_code[] = {0x00, 0x00, 0x01, 0x8b, 0x00, 0x14, 0x00, 0x91,
				      0xc0, 0x03, 0x5f, 0xd6};
#endif

static void probe_mapped_code(uint8_t *code)
{
	for_each_strategy(s) {
		for (int off = 0; off <= 4; off += 4) {
			struct e2e_counter c = {.addr = (uintptr_t)(code + off)};
			struct retrec r = {0};
			struct np_probe_opts o = e2e_opts(e2e_count, &c, *s);

			o.func_start = code;
			o.func_size = sizeof mapped_code;
			o.on_return = off == 0 ? record_retval : NULL;
			o.data = off == 0 ? (void *)&r : (void *)&c;
			o.on_entry = off == 0 ? NULL : e2e_count;
			struct np_probe *p = np_probe_attach(code + off, &o);
			if (!p)
				fprintf(stderr, "# mapped code +%d: %s; log: %s\n", off,
					strerror(errno), e2e_log_state.last);
			CHECK(p);
			CHECK_EQ(CALL2(code, 2, 3), 10);
			if (off == 0) {
				CHECK_EQ(r.returns, 1);
				CHECK_EQ(r.retval, 10);
			} else {
				CHECK_EQ(c.hits, 1);
				CHECK_EQ(c.bad_pc, 0);
			}
			if (p)
				CHECK_EQ(e2e_detach_free(p), 0);
			CHECK(memcmp(code, mapped_code, sizeof mapped_code) == 0);
			CHECK_EQ(CALL2(code, 2, 3), 10);
		}
	}
}

static uint8_t *map_code(int prot)
{
	uint8_t *m = mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	memset(m, 0xcc, 4096);
	memcpy(m, mapped_code, sizeof mapped_code);
	__builtin___clear_cache((char *)m, (char *)m + 4096); /* arm64: fetch what was written */
	return m;
}

TEST(probe_in_code_the_program_mapped_rw_then_rx)
{
	uint8_t *code = map_code(PROT_READ | PROT_WRITE);

	e2e_log_capture();
	CHECK(code);
	if (!code)
		return;
	CHECK_EQ(mprotect(code, 4096, PROT_READ | PROT_EXEC), 0);
	probe_mapped_code(code);
	munmap(code, 4096);
}

TEST(probe_in_code_the_program_mapped_rwx)
{
	uint8_t *code = map_code(PROT_READ | PROT_WRITE | PROT_EXEC);

	e2e_log_capture();
	if (!code) {
		printf("# skip: RWX mappings refused here (%s)\n", strerror(errno));
		return;
	}
	probe_mapped_code(code);
	munmap(code, 4096);
}

#ifdef E2E_NOPIE
TEST(this_variant_is_a_non_pie_executable)
{
	CHECK((uintptr_t)api_seq < 0x40000000u); /* linked at its fixed address */
}
#endif

TEST_MAIN()

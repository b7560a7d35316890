/* SPDX-License-Identifier: MIT */
/*
 * Return probes where calls do not return in order: siglongjmp and longjmp
 * out of probed frames (their frames must be reclaimed: a thread would
 * otherwise fill its shadow stack with them and lose every later return),
 * coroutines switched by swapcontext in both directions under probed
 * frames (frames of one stack under frames of another: none may be taken
 * for dead, or its call has nowhere to return), and thread cancellation
 * inside probed frames. Linked into the retprobe test.
 *
 * Every return handler checks the value against the argument its own
 * call's entry handler saw, carried in np_ctx_call_data: a frame matched
 * to the wrong call shows as a wrong value, a lost one as a count off.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};

/* Entry: the argument into the call's word; return: value == expect(arg). */
struct calls {
	uint64_t entries, returns, bad; /* atomic */
	uint64_t (*expect)(uint64_t arg);
};

static void arg_entry(struct np_ctx *ctx, void *data)
{
	struct calls *c = data;
	uint64_t *word = np_ctx_call_data(ctx);

	__atomic_fetch_add(&c->entries, 1, __ATOMIC_RELAXED);
	if (word)
		*word = np_ctx_arg(ctx, 0) + 1; /* never 0 */
}

static void arg_return(struct np_ctx *ctx, void *data)
{
	struct calls *c = data;
	uint64_t *word = np_ctx_call_data(ctx);

	__atomic_fetch_add(&c->returns, 1, __ATOMIC_RELAXED);
	if (!word || !*word || np_ctx_retval(ctx) != c->expect(*word - 1))
		__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
}

static struct np_probe *attach_calls(void *fn, struct calls *c, enum np_strategy s,
				     uint64_t (*expect)(uint64_t))
{
	struct np_probe_opts o = e2e_opts(arg_entry, c, s);

	memset(c, 0, sizeof *c);
	c->expect = expect;
	o.on_return = arg_return;
	struct np_probe *p = np_probe_attach(fn, &o);
	if (!p)
		fprintf(stderr, "# attach (%s) failed: %s; log: %s\n", np_strategy_name(s),
			strerror(errno), e2e_log_state.last);
	return p;
}

/* depth(n) returns n: one frame per level */
static uint64_t same(uint64_t n)
{
	return n;
}

/* ---- siglongjmp out of a signal handler, inside probed frames --------------- */

static sigjmp_buf sj_env;
static volatile int sj_jump;
static uint64_t (*volatile sj_p)(uint64_t);

static E2E_NOIPA uint64_t sj(uint64_t n)
{
	if (n == 0) {
		if (sj_jump)
			raise(SIGUSR1); /* its handler siglongjmps out of every frame */
		return 0;
	}
	return 1 + sj_p(n - 1);
}
static uint64_t (*volatile sj_p)(uint64_t) = sj;

static void sj_handler(int sig)
{
	(void)sig;
	siglongjmp(sj_env, 1);
}

static void siglongjmp_run(enum np_strategy s, int jumps)
{
	enum { DEPTH = 3 }; /* four frames a jump */
	struct sigaction sa = {.sa_handler = sj_handler}, old;
	struct calls c;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	struct np_probe *p = attach_calls((void *)sj, &c, s, same);
	CHECK(p);
	uint64_t left0 = np_missed_by(NP_MISS_LEFT), full0 = np_missed_by(NP_MISS_SHADOW_FULL);
	sj_jump = 1;
	for (volatile int i = 0; i < jumps; i++)
		if (sigsetjmp(sj_env, 1) == 0)
			sj_p(DEPTH);
	sj_jump = 0;
	CHECK_EQ(c.entries, (uint64_t)jumps * (DEPTH + 1));
	CHECK_EQ(c.returns, 0);
	/* and a call that returns is still seen returning, every frame of it */
	CHECK_EQ(sj_p(5), 5);
	CHECK_EQ(c.returns, 6);
	CHECK_EQ(c.bad, 0);
	uint64_t left = np_missed_by(NP_MISS_LEFT) - left0;
	printf("# %s: %d siglongjmps, %" PRIu64 " frames found left\n", np_strategy_name(s), jumps,
	       left);
	/* every frame left is reclaimed, but those the stack still holds */
	CHECK(left <= (uint64_t)jumps * (DEPTH + 1));
	CHECK(left + 16384 >= (uint64_t)jumps * (DEPTH + 1));
	CHECK_EQ(np_missed_by(NP_MISS_SHADOW_FULL) - full0, 0);
	if (p) {
		CHECK_EQ(np_probe_missed(p), left);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	sigaction(SIGUSR1, &old, NULL);
}

TEST(siglongjmp_out_of_probed_frames_100000_times_then_a_return_is_still_reported)
{
	e2e_log_capture();
	siglongjmp_run(NP_STRATEGY_AUTO, 100000);
	/* a breakpoint per call: fewer jumps, still more frames than fit */
	siglongjmp_run(NP_STRATEGY_TRAP, 6000);
}

/* ---- longjmp from frames that never lie at the same address twice -------------
 * Each round's frames are pushed alloca'd further down the stack, so no later
 * call reuses one's slot: only their place below the stack pointer shows
 * them dead (the thread's own stack, whose bounds the engine knows). */

static jmp_buf lj_env;
static volatile int lj_jump;
static uint64_t (*volatile ljd_p)(uint64_t);

static E2E_NOIPA uint64_t ljd(uint64_t n)
{
	if (n == 0 && lj_jump)
		longjmp(lj_env, 1);
	return n ? 1 + ljd_p(n - 1) : 0;
}
static uint64_t (*volatile ljd_p)(uint64_t) = ljd;

static E2E_NOIPA void ljd_shifted(unsigned shift)
{
	volatile char *pad = __builtin_alloca(16 * (size_t)shift + 16);
	pad[0] = 1;
	ljd_p(2);
}

TEST(longjmp_from_frames_at_ever_new_addresses_reclaims_them_by_stack_order)
{
	enum { ROUNDS = 20000, SHIFTS = 8192 }; /* 3 frames a round, 24,576 places */
	e2e_log_capture();
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++) {
		struct calls c;
		struct np_probe *p = attach_calls((void *)ljd, &c, *s, same);
		uint64_t full0 = np_missed_by(NP_MISS_SHADOW_FULL);
		const volatile int rounds = *s == NP_STRATEGY_TRAP ? ROUNDS / 2 : ROUNDS;

		CHECK(p);
		lj_jump = 1;
		for (volatile int i = 0; i < rounds; i++)
			if (setjmp(lj_env) == 0)
				ljd_shifted((unsigned)(i * 7919) % SHIFTS);
		lj_jump = 0;
		CHECK_EQ(c.returns, 0);
		CHECK_EQ(ljd_p(4), 4);
		CHECK_EQ(c.returns, 5);
		CHECK_EQ(c.bad, 0);
		CHECK_EQ(np_missed_by(NP_MISS_SHADOW_FULL) - full0, 0);
		if (p) {
			printf("# %s: %" PRIu64 " missed of %d frames left\n", np_strategy_name(*s),
			       np_probe_missed(p), rounds * 3);
			CHECK(np_probe_missed(p) + 16384 >= (uint64_t)rounds * 3);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
	}
}

/* ---- a caller that keeps its return address in a register -------------------
 * glibc's arm64 __rawmemchr (mov x15, x30; bl strlen; ret x15) calls at its
 * own entry sp, its return address in a register: its frame and its callee's
 * have one slot, and the caller is alive under the call. Taken for dead by
 * the same-slot proof, its return found no frame and the program aborted
 * (sort under `latency 'libc:*'` on arm64). x86-64 keeps return addresses
 * on the stack, where no such caller exists: arm64 and riscv64 only. */
#if defined(__aarch64__) || defined(__riscv)
uint64_t np_test_lr_keeper(uint64_t n); /* np_test_lr_leaf(n) + 1 */
uint64_t np_test_lr_leaf(uint64_t n);   /* n + 1 */
__asm__(".text\n"
#if defined(__aarch64__)
	".p2align 4\n.globl np_test_lr_leaf\n.type np_test_lr_leaf, %function\n"
	"np_test_lr_leaf:\n\tadd x0, x0, #1\n\tret\n.size np_test_lr_leaf, .-np_test_lr_leaf\n"
	".p2align 4\n.globl np_test_lr_keeper\n.type np_test_lr_keeper, %function\n"
	"np_test_lr_keeper:\n\tmov x15, x30\n\tbl np_test_lr_leaf\n\tadd x0, x0, #1\n\tret x15\n"
	".size np_test_lr_keeper, .-np_test_lr_keeper\n"
#else
	".p2align 2\n.globl np_test_lr_leaf\n.type np_test_lr_leaf, @function\n"
	"np_test_lr_leaf:\n\taddi a0, a0, 1\n\tret\n.size np_test_lr_leaf, .-np_test_lr_leaf\n"
	".p2align 2\n.globl np_test_lr_keeper\n.type np_test_lr_keeper, @function\n"
	"np_test_lr_keeper:\n\tmv t2, ra\n\tjal ra, np_test_lr_leaf\n\taddi a0, a0, 1\n\tjr t2\n"
	".size np_test_lr_keeper, .-np_test_lr_keeper\n"
#endif
	".text\n");

static uint64_t plus1(uint64_t n)
{
	return n + 1;
}

static uint64_t plus2(uint64_t n)
{
	return n + 2;
}

TEST(a_caller_keeping_its_return_address_in_a_register_is_not_taken_for_dead)
{
	e2e_log_capture();
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++) {
		struct calls keeper, leaf;
		struct np_probe *pk = attach_calls((void *)np_test_lr_keeper, &keeper, *s, plus2);
		struct np_probe *pl = attach_calls((void *)np_test_lr_leaf, &leaf, *s, plus1);
		uint64_t sum = 0;

		CHECK(pk && pl);
		for (uint64_t i = 0; i < 1000; i++)
			sum += np_test_lr_keeper(i);
		CHECK_EQ(sum, 1000 * 999 / 2 + 2000);
		CHECK_EQ(keeper.returns, 1000);
		CHECK_EQ(leaf.returns, 1000);
		CHECK_EQ(keeper.bad + leaf.bad, 0);
		if (pk)
			CHECK_EQ(e2e_detach_free(pk), 0);
		if (pl)
			CHECK_EQ(e2e_detach_free(pl), 0);
	}
}
#endif

/* ---- coroutines: swapcontext under probed frames, both ways ------------------ */

static ucontext_t main_uc, co_uc;
static uint64_t (*volatile co_dive_p)(uint64_t);
static uint64_t (*volatile main_dive_p)(uint64_t);

static uint64_t co_expect(uint64_t n)
{
	return 100 + n * (n + 1) / 2;
}

static uint64_t main_expect(uint64_t n)
{
	return 1000 + n * (n + 1) / 2;
}

/* On the coroutine's stack: n frames, then back to the main context. */
static E2E_NOIPA uint64_t co_dive(uint64_t n)
{
	if (n == 0) {
		swapcontext(&co_uc, &main_uc);
		return 100;
	}
	return n + co_dive_p(n - 1);
}
static uint64_t (*volatile co_dive_p)(uint64_t) = co_dive;

/* On the thread's stack: n frames, then into the coroutine. */
static E2E_NOIPA uint64_t main_dive(uint64_t n)
{
	if (n == 0) {
		swapcontext(&main_uc, &co_uc);
		return 1000;
	}
	return n + main_dive_p(n - 1);
}
static uint64_t (*volatile main_dive_p)(uint64_t) = main_dive;

static const uint64_t co_depths[] = {4, 1, 6, 0, 3, 5};
#define ROUNDS_CO (sizeof(co_depths) / sizeof(co_depths[0]))
static uint64_t co_wrong;

static void co_main(void)
{
	for (unsigned r = 0; r < ROUNDS_CO; r++)
		if (co_dive_p(co_depths[r]) != co_expect(co_depths[r]))
			co_wrong++;
	/* returns through uc_link to main_uc */
}

/* One coroutine on 'stack', resumed from main_dive at several depths:
 * main frames under coroutine frames, coroutine frames under main frames,
 * each returning in turn. */
static void coroutine_run(enum np_strategy s, void *stack, size_t size)
{
	static const uint64_t main_depths[] = {3, 0, 5, 2, 1, 4, 2};
	struct calls cc, cm;
	struct np_probe *pc = attach_calls((void *)co_dive, &cc, s, co_expect);
	struct np_probe *pm = attach_calls((void *)main_dive, &cm, s, main_expect);
	uint64_t co_entries = 0, main_entries = 0;

	CHECK(pc && pm);
	co_wrong = 0;
	CHECK_EQ(getcontext(&co_uc), 0);
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = size;
	co_uc.uc_link = &main_uc;
	makecontext(&co_uc, co_main, 0);
	/* each main_dive resumes the coroutine once; the last resume finishes
	 * co_main, whose uc_link comes back to the last main_dive */
	for (unsigned r = 0; r < sizeof(main_depths) / sizeof(main_depths[0]); r++) {
		CHECK_EQ(main_dive_p(main_depths[r]), main_expect(main_depths[r]));
		main_entries += main_depths[r] + 1;
	}
	for (unsigned r = 0; r < ROUNDS_CO; r++)
		co_entries += co_depths[r] + 1;
	CHECK_EQ(co_wrong, 0);
	CHECK_EQ(cm.entries, main_entries);
	CHECK_EQ(cm.returns, main_entries);
	CHECK_EQ(cc.entries, co_entries);
	CHECK_EQ(cc.returns, co_entries);
	CHECK_EQ(cc.bad + cm.bad, 0);
	if (pc) {
		CHECK_EQ(np_probe_missed(pc), 0);
		CHECK_EQ(e2e_detach_free(pc), 0);
	}
	if (pm) {
		CHECK_EQ(np_probe_missed(pm), 0);
		CHECK_EQ(e2e_detach_free(pm), 0);
	}
}

TEST(coroutines_switched_under_probed_frames_return_every_call_to_its_caller)
{
	const size_t size = 256 << 10;
	void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	e2e_log_capture();
	CHECK(stack != MAP_FAILED);
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++)
		coroutine_run(*s, stack, size);
	munmap(stack, size);
}

/* The coroutine's stack carved out of the thread's own, above the frames
 * that switch to it: addresses put its frames above live frames of the
 * thread, which only the switch tells apart from the thread's own. */
static E2E_NOIPA void carved_run(enum np_strategy s)
{
	char stack[128 << 10] __attribute__((aligned(16)));

	coroutine_run(s, stack, sizeof stack);
	__asm__ volatile("" ::"r"(stack) : "memory");
}

TEST(a_coroutine_on_a_stack_carved_from_the_thread_own_keeps_its_frames)
{
	e2e_log_capture();
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++)
		carved_run(*s);
}

/* ---- pthread_cancel of a thread inside probed frames ------------------------------ */

static uint64_t (*volatile cn_p)(uint64_t);
static volatile int cn_in;
static int cn_cleanups;

static void cn_cleanup(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&cn_cleanups, 1, __ATOMIC_RELAXED);
}

static E2E_NOIPA uint64_t cn(uint64_t n)
{
	uint64_t r = n;

	if (n == 0) {
		pthread_cleanup_push(cn_cleanup, NULL);
		__atomic_store_n(&cn_in, 1, __ATOMIC_RELEASE);
		for (;;)
			pause(); /* a cancellation point */
		pthread_cleanup_pop(0);
	} else {
		r = 1 + cn_p(n - 1);
	}
	return r;
}
static uint64_t (*volatile cn_p)(uint64_t) = cn;

/* With an alternate signal stack (as ASan gives every thread), where the
 * breakpoint of an unwinder's guard is handled, away from the stack the
 * unwinder walks: arg, a buffer on the main thread's stack, above every
 * thread stack. */
static void cn_altstack_back(void *old)
{
	/* the thread's own alternate stack back before it ends: ASan unmaps
	 * whatever alternate stack a thread has when it ends, and this one
	 * is a buffer on another thread's stack */
	if (old)
		sigaltstack(old, NULL);
}

static void *cn_thread(void *arg)
{
	stack_t ss = {.ss_sp = arg, .ss_size = 64 << 10}, old;
	uint64_t r;

	if (arg && sigaltstack(&ss, &old) != 0)
		return NULL;
	pthread_cleanup_push(cn_altstack_back, arg ? &old : NULL);
	r = cn_p(4);
	pthread_cleanup_pop(1);
	return (void *)(uintptr_t)r;
}

TEST(pthread_cancel_of_a_thread_inside_probed_frames_unwinds_it_and_counts_them)
{
	char alt[64 << 10] __attribute__((aligned(16)));

	e2e_log_capture();
	for (const enum np_strategy *s = strategies; s < strategies + 2; s++) {
		struct calls c;
		struct np_probe *p = attach_calls((void *)cn, &c, *s, same);
		uint64_t unwound0 = np_missed_by(NP_MISS_UNWOUND);
		pthread_t t;
		void *ret = NULL;

		CHECK(p);
		cn_in = 0;
		cn_cleanups = 0;
		CHECK_EQ(pthread_create(&t, NULL, cn_thread, s != strategies ? alt : NULL), 0);
		while (!__atomic_load_n(&cn_in, __ATOMIC_ACQUIRE))
			usleep(1000);
		CHECK_EQ(pthread_cancel(t), 0);
		CHECK_EQ(pthread_join(t, &ret), 0);
		CHECK(ret == PTHREAD_CANCELED);
		CHECK_EQ(cn_cleanups, 1);
		CHECK_EQ(c.entries, 5);
		CHECK_EQ(c.returns, 0);
		CHECK_EQ(np_missed_by(NP_MISS_UNWOUND) - unwound0, 5);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

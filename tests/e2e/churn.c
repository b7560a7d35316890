/* SPDX-License-Identifier: MIT */
/*
 * A program goes on as before after many attaches and detaches: every
 * instruction of nine small functions probed alone (AUTO, then forced
 * TRAP), return probes (recursion 10,000 deep, longjmp past probed
 * frames), override_return, each detached; then the program starts its
 * first thread, which runs the same functions, and forks.
 *
 * This is the program of issue 17 item 15, which spun forever inside
 * glibc's first pthread_create under qemu-aarch64. The probes were not the
 * cause: run as `qemu-aarch64 -L /usr/aarch64-linux-gnu PROG`, any arm64
 * program does so on a machine with a multiarch libc6:arm64 of another
 * revision than the cross loader (docs/reliability.md, "A program that
 * hung in pthread_create under qemu-aarch64"). Here it runs as every arm64
 * test does, with the cross libc named first, and checks that nothing the
 * engine left behind stops a new thread or a fork.
 *
 * Each case checks every result and that each probe counted exactly its
 * handler's runs. The functions' bounds come from the dynamic symbol table
 * (the program is linked with --export-dynamic); every offset inside is
 * tried, and those that are not an instruction boundary are refused with
 * EINVAL.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

/* ---- nine small functions, compiled as the build compiles C --------------- */

static volatile uint64_t churn_sink;

E2E_NOIPA uint64_t churn_add(uint64_t a, uint64_t b)
{
	return a + b;
}

E2E_NOIPA uint64_t churn_mul(uint64_t a, uint64_t b)
{
	return a * b + 3;
}

E2E_NOIPA uint64_t churn_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

E2E_NOIPA uint64_t churn_loop(uint64_t a, uint64_t b)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < b; i++)
		s += a ^ i;
	return s;
}

E2E_NOIPA uint64_t churn_switch(uint64_t a, uint64_t b)
{
	switch (a & 3) {
	case 0:
		return b;
	case 1:
		return b + 1;
	case 2:
		return b * 2;
	default:
		return b - 1;
	}
}

E2E_NOIPA uint64_t churn_store(uint64_t a, uint64_t b)
{
	churn_sink = a;
	return churn_sink + b;
}

E2E_NOIPA uint64_t churn_call(uint64_t a, uint64_t b)
{
	return churn_add(a, b) + churn_mul(b, a);
}

E2E_NOIPA uint64_t churn_array(uint64_t a, uint64_t b)
{
	volatile uint64_t v[8];
	for (int i = 0; i < 8; i++)
		v[i] = a + (uint64_t)i;
	return v[b & 7];
}

E2E_NOIPA uint64_t churn_div(uint64_t a, uint64_t b)
{
	return b ? a / b : a;
}

typedef uint64_t fn2(uint64_t, uint64_t);
static fn2 *const fns[] = {churn_add,   churn_mul,  churn_min,   churn_loop, churn_switch,
			   churn_store, churn_call, churn_array, churn_div};
#define NFNS (sizeof fns / sizeof fns[0])

/* Every function with five argument pairs, folded into one value. */
static uint64_t run_all(void)
{
	uint64_t s = 0;
	for (size_t i = 0; i < NFNS; i++)
		for (uint64_t k = 1; k < 6; k++)
			s = s * 31 + fns[i](k * 7, k);
	return s;
}

static uint64_t fn_size(fn2 *f)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1((void *)f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	return sym->st_size;
}

/* ---- 1. every instruction, one probe at a time ----------------------------- */

static void every_instruction(enum np_strategy strategy)
{
	const uint64_t want = run_all();
	unsigned probes = 0, wrong = 0, miscounts = 0, left = 0;

	for (size_t i = 0; i < NFNS; i++) {
		uint8_t *fn = (uint8_t *)(uintptr_t)fns[i];
		uint64_t size = fn_size(fns[i]);
		unsigned here = 0;

		/* a sanitizer's build makes them larger, never this large */
		CHECK(size > 0 && size < 65536);
		uint8_t *before = size && size < 65536 ? malloc(size) : NULL;
		CHECK(before != NULL);
		if (!before)
			continue;
		memcpy(before, fn, size);
		for (uint64_t off = 0; off < size; off++) {
			struct e2e_counter c = {.addr = (uintptr_t)(fn + off)};
			struct np_probe_opts o = e2e_opts(e2e_count, &c, strategy);
			struct np_probe *p = np_probe_attach(fn + off, &o);
			if (!p) {
				if (errno != EINVAL && !left++)
					fprintf(stderr, "# %s+%u: %s; log: %s\n",
						np_strategy_name(strategy), (unsigned)off,
						strerror(errno), e2e_log_state.last);
				continue;
			}
			here++;
			wrong += run_all() != want;
			CHECK_EQ(np_probe_detach(p), 0);
			miscounts += np_probe_hits(p) != c.hits || c.bad_pc;
			np_probe_free(p);
		}
		CHECK(here > 0);
		CHECK(memcmp(before, fn, size) == 0);
		free(before);
		probes += here;
	}
	printf("# %s: %u probes on %zu functions\n", np_strategy_name(strategy), probes, NFNS);
	CHECK_EQ(wrong, 0);
	CHECK_EQ(miscounts, 0);
	CHECK_EQ(left, 0);
	CHECK_EQ(run_all(), want);
}

TEST(every_instruction_of_nine_functions_probed_alone_auto_then_trap)
{
	e2e_log_capture();
	every_instruction(NP_STRATEGY_AUTO);
	every_instruction(NP_STRATEGY_TRAP);
}

/* ---- 2. return probes: recursion and longjmp ------------------------------- */

static uint64_t (*volatile rec_p)(uint64_t);
E2E_NOIPA uint64_t churn_rec(uint64_t n)
{
	return n ? n + rec_p(n - 1) : 0;
}
static uint64_t (*volatile rec_p)(uint64_t) = churn_rec;

static jmp_buf lj_env;
static int (*volatile lj_p)(int, int);
E2E_NOIPA int churn_lj(int depth, int jump)
{
	if (depth == 0) {
		if (jump)
			longjmp(lj_env, 1);
		return 1;
	}
	return 1 + lj_p(depth - 1, jump);
}
static int (*volatile lj_p)(int, int) = churn_lj;

static uint64_t returns;

static void count_return(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
	returns++;
}

TEST(return_probes_through_recursion_and_longjmp_then_detached)
{
	static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};

	e2e_log_capture();
	for (int s = 0; s < 2; s++) {
		struct e2e_counter c = {0};
		struct np_probe_opts o = e2e_opts(e2e_count, &c, strategies[s]);
		o.on_return = count_return;
		returns = 0;
		struct np_probe *p = np_probe_attach((void *)churn_rec, &o);
		CHECK(p != NULL);
		CHECK_EQ(rec_p(10000), 10000ull * 10001 / 2);
		CHECK_EQ(c.hits, 10001);
		CHECK_EQ(returns, 10001);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);

		memset(&c, 0, sizeof(c));
		returns = 0;
		p = np_probe_attach((void *)churn_lj, &o);
		CHECK(p != NULL);
		/* few jumps: each leaves six frames on the shadow stack
		 * (item 4), which must not fill it here */
		for (volatile int i = 0; i < 100; i++)
			if (setjmp(lj_env) == 0)
				lj_p(5, 1);
		CHECK_EQ(lj_p(3, 0), 4);
		CHECK_EQ(c.hits, 6 * 100 + 4);
		CHECK_EQ(returns, 4);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
	CHECK_EQ(rec_p(100), 5050);
	CHECK_EQ(lj_p(3, 0), 4);
}

/* ---- 3. override_return ----------------------------------------------------- */

static void skip_body(struct np_ctx *ctx, void *data)
{
	++*(unsigned *)data;
	CHECK_EQ(np_ctx_override_return(ctx, 4242), 0);
}

TEST(override_return_then_detached)
{
	static const struct {
		enum np_strategy strategy;
		unsigned flags;
	} modes[] = {
		{NP_STRATEGY_AUTO, 0},
		{NP_STRATEGY_TRAP, 0},
		{NP_STRATEGY_AUTO, NP_PROBE_ARGS_ONLY},
		{NP_STRATEGY_AUTO, NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU},
	};

	e2e_log_capture();
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		unsigned hits = 0;
		struct np_probe_opts o = e2e_opts(skip_body, &hits, modes[m].strategy);
		o.flags = modes[m].flags;
		struct np_probe *p = np_probe_attach((void *)churn_mul, &o);
		CHECK(p != NULL);
		CHECK_EQ(churn_mul(2, 3), 4242);
		CHECK_EQ(hits, 1);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(churn_mul(2, 3), 9);
	}
}

/* ---- 4. then the program's first thread, and a fork ------------------------ */

static void *thread_runs_all(void *want)
{
	return (void *)(uintptr_t)(run_all() == (uint64_t)(uintptr_t)want);
}

TEST(a_thread_started_afterwards_and_a_forked_child_run_the_functions)
{
	uint64_t want = run_all();
	pthread_t t;
	void *ok = NULL;

	CHECK_EQ(pthread_create(&t, NULL, thread_runs_all, (void *)(uintptr_t)want), 0);
	CHECK_EQ(pthread_join(t, &ok), 0);
	CHECK(ok != NULL);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(run_all() == want ? 0 : 1);
	int status = -1;
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * The -fipa-ra workloads (ipa_callers.h) with every function's entry and
 * return probed through the API, in this process: each result must be the
 * one an unprobed run gave. Under AUTO and forced TRAP, with counting
 * handlers (proven vector-free: no vector save), with handlers that call
 * libc (memset, snprintf: vector code, so the full save), and with the
 * command's own flags (NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU). Runs on
 * every ISA (under qemu for arm64 and riscv64).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e/e2e.h"
#include "ipa_callers.h"
#include "test.h"

#define SCALE 3
#define MAX_FUNCS 8
#define HANG_SECONDS 120 /* a clobbered loop bound hangs: say where */

static char current[160];

static void hung(int sig)
{
	(void)sig;
	if (write(2, current, strlen(current)) < 0) {
	}
	_exit(1);
}

struct counts {
	uint64_t entry, ret;
};

static volatile char big[4096];
static char text[64];

static void count_entry(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	__atomic_fetch_add(&((struct counts *)data)->entry, 1, __ATOMIC_RELAXED);
}

static void count_return(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	__atomic_fetch_add(&((struct counts *)data)->ret, 1, __ATOMIC_RELAXED);
}

static __attribute__((noinline)) void use_libc(uint64_t v)
{
	memset((void *)big, (int)(v & 0xff), sizeof big);
	snprintf(text, sizeof text, "%f %" PRIx64, (double)v * 0.5, v);
}

static void libc_entry(struct np_ctx *ctx, void *data)
{
	use_libc(np_ctx_arg(ctx, 0));
	count_entry(ctx, data);
}

static void libc_return(struct np_ctx *ctx, void *data)
{
	use_libc(np_ctx_retval(ctx));
	count_return(ctx, data);
}

struct mode {
	const char *name;
	np_handler_fn on_entry, on_return;
	unsigned flags;
};

static const struct mode modes[] = {
	{"counting", count_entry, count_return, 0},
	{"libc-calling", libc_entry, libc_return, 0},
	{"args-only no-fpu", count_entry, count_return, NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU},
};

/* Every function of w probed at entry and return; one run; detach. */
static void probed_run(const struct ipa_workload *w, const struct ipa_out *want,
		       const struct mode *m, enum np_strategy strategy)
{
	struct np_probe *p[MAX_FUNCS] = {NULL};
	struct counts c[MAX_FUNCS];
	struct ipa_out got = {.len = 0};
	int n = 0;

	memset(c, 0, sizeof c);
	snprintf(current, sizeof current, "# hung: %s, %s handlers, %s\n", w->name, m->name,
		 np_strategy_name(strategy));
	signal(SIGALRM, hung);
	alarm(HANG_SECONDS);
	for (; w->funcs[n] && n < MAX_FUNCS; n++) {
		struct np_probe_opts o = e2e_opts(m->on_entry, &c[n], strategy);
		o.on_return = m->on_return;
		o.flags = m->flags;
		o.name = w->func_names[n];
		p[n] = np_probe_attach(w->funcs[n], &o);
		if (!p[n])
			fprintf(stderr, "# %s: attach at %s failed: %s (%s)\n", w->name,
				w->func_names[n], strerror(errno), e2e_log_state.last);
		CHECK(p[n] != NULL);
	}
	w->run(&got, SCALE);
	alarm(0);
	if (got.len != want->len || memcmp(got.text, want->text, got.len) != 0) {
		fprintf(stderr, "# %s, %s handlers, %s: got\n#   %s# want\n#   %s", w->name,
			m->name, np_strategy_name(strategy), got.text, want->text);
		CHECK(0);
	}
	for (int i = 0; i < n; i++) {
		if (!p[i])
			continue;
		/* every function runs, and each call returns */
		CHECK(c[i].entry > 0);
		CHECK_EQ(c[i].ret, c[i].entry);
		CHECK_EQ(np_probe_missed(p[i]), 0);
		CHECK_EQ(e2e_detach_free(p[i]), 0);
	}
}

static void workload(const struct ipa_workload *w)
{
	static const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	struct ipa_out want = {.len = 0};

	e2e_log_capture();
	w->run(&want, SCALE);
	for (unsigned s = 0; s < 2; s++)
		for (unsigned m = 0; m < sizeof modes / sizeof modes[0]; m++)
			probed_run(w, &want, &modes[m], strategies[s]);
}

TEST(loop_bound_kept_in_a_caller_saved_register_survives_probes)
{
	workload(&ipa_loop);
}

TEST(accumulators_kept_in_caller_saved_registers_survive_probes)
{
	workload(&ipa_pressure);
}

TEST(doubles_kept_in_vector_registers_across_calls_survive_probes)
{
	workload(&ipa_vector);
}

TEST_MAIN()

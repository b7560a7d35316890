/* SPDX-License-Identifier: MIT */
/*
 * core/thread.c, np__dispatch: a handler that may touch the FP/vector
 * state does not run from a trampoline that saved none of it
 * (NP_CTX_NO_FPU). Such a trampoline was built for the site's handlers
 * of its time; a probe whose handler uses that state may join the site
 * while a thread is still in it (e2e-regs,
 * a_vector_handler_joining_a_lean_site_never_runs_without_the_save). Run
 * there, the handler would change the program's registers: its hit is
 * counted as missed instead. The other handlers run as usual.
 */
#include <string.h>

#include "host/layout.h"
#include "test.h"

static volatile int sink;

__attribute__((noinline)) int fpu_guard_target(int x)
{
	sink = x;
	return x + 1;
}

static int plain_calls, fp_calls;
static volatile double acc = 1.0;

static void plain_handler(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
	plain_calls++;
}

static void fp_handler(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
	acc = acc * 1.5 + 0.25; /* FP code: the engine's scan sees it */
	fp_calls++;
}

static struct np_probe *attach(np_handler_fn fn, unsigned flags)
{
	struct np_probe_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.on_entry = fn;
	o.flags = flags;
	o.strategy = NP_STRATEGY_TRAP; /* the code is never run here */
	return np_probe_attach((void *)fpu_guard_target, &o);
}

static void dispatch(struct np_probe *p, uint32_t kind)
{
	struct np_ctx ctx;
	memset(&ctx, 0, sizeof ctx);
	ctx.site = p->site;
	ctx.kind = kind;
	ctx.regs.pc = p->site->addr;
	np__dispatch(&ctx);
}

TEST(a_vector_handler_is_missed_where_the_trampoline_saved_no_vector_state)
{
	struct np_probe *plain = attach(plain_handler, NP_PROBE_NO_FPU);
	struct np_probe *fp = attach(fp_handler, 0);
	CHECK(plain != NULL && fp != NULL);
	if (!plain || !fp)
		return;
	CHECK(fp->uses_fpu);
	CHECK(!plain->uses_fpu);

	dispatch(plain, NP_CTX_ENTRY | NP_CTX_NO_FPU);
	CHECK_EQ(plain_calls, 1);
	CHECK_EQ(fp_calls, 0);
	CHECK_EQ(np_probe_hits(plain), 1);
	CHECK_EQ(np_probe_hits(fp), 0);
	CHECK_EQ(np_probe_missed(fp), 1);

	dispatch(plain, NP_CTX_ENTRY); /* saved: both run */
	CHECK_EQ(plain_calls, 2);
	CHECK_EQ(fp_calls, 1);
	CHECK_EQ(np_probe_hits(fp), 1);
	CHECK_EQ(np_probe_missed(fp), 1);

	CHECK_EQ(np_probe_detach(fp), 0);
	CHECK_EQ(np_probe_detach(plain), 0);
	np_probe_free(fp);
	np_probe_free(plain);
	CHECK_EQ(fpu_guard_target(1), 2);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * The handler API on every ISA, through C functions only (no assembly, so
 * the same test runs on x86-64 and, cross-built, under qemu-aarch64):
 * arguments in registers and on the stack, an argument register changed at
 * the entry, the return value read and changed at the return, and
 * np_ctx_override_return (on arm64, the redirect path through the
 * runtime's own breakpoint). Each under AUTO and forced TRAP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "ifunc_lib.h" /* tests/unit/core */
#include "test.h"

#if defined(__x86_64__)
#define ARG0_REG "rdi"
#elif defined(__aarch64__)
#define ARG0_REG "x0"
#elif defined(__riscv)
#define ARG0_REG "a0"
#endif

static volatile unsigned body_runs;

E2E_NOIPA uint64_t sum10(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f,
			 uint64_t g, uint64_t h, uint64_t i, uint64_t j)
{
	body_runs++;
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}

E2E_NOIPA uint64_t triple(uint64_t x)
{
	body_runs++;
	return 3 * x;
}

/* Each strategy, with the trampoline that saves everything and with the
 * lean one (NP_PROBE_ARGS_ONLY: the caller-saved registers only). */
static const struct mode {
	enum np_strategy strategy;
	unsigned flags;
} modes[] = {
	{NP_STRATEGY_AUTO, 0},
	{NP_STRATEGY_TRAP, 0},
	{NP_STRATEGY_AUTO, NP_PROBE_ARGS_ONLY},
	{NP_STRATEGY_AUTO, NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU},
};
#define for_each_strategy(s) for (const struct mode *s = modes; s < modes + 4; s++)

struct seen {
	unsigned hits;
	uint64_t args[10];
	uint64_t pc, func, retval;
};

static struct np_probe *attach(void *fn, np_handler_fn entry, np_handler_fn ret, void *data,
			       const struct mode *m)
{
	enum np_strategy s = m->strategy;
	struct np_probe_opts o = e2e_opts(entry, data, s);
	o.on_return = ret;
	o.flags = m->flags;
	struct np_probe *p = np_probe_attach(fn, &o);
	if (!p)
		fprintf(stderr, "# attach %s: %s; log: %s\n", np_strategy_name(s), strerror(errno),
			e2e_log_state.last);
	else if (s != NP_STRATEGY_AUTO && np_probe_strategy(p) != s)
		fprintf(stderr, "# asked %s, got %s\n", np_strategy_name(s),
			np_strategy_name(np_probe_strategy(p)));
	return p;
}

static void count_hit(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	++*(unsigned *)data;
}

/* First in the file: the engine initialises on this attach and maps its
 * thread pool, which may take the gap next to the code that its cached
 * map of the address space offers for the trampoline (it did under
 * qemu-user, which maps next to the program). NO_FPU: decoding the
 * handler would have read the map again. */
TEST(the_first_probe_of_the_process_forced_jump_gets_its_trampoline)
{
	unsigned hits = 0;
	e2e_log_capture();
	struct np_probe_opts o = e2e_opts(count_hit, &hits, NP_STRATEGY_JUMP);
	o.flags = NP_PROBE_NO_FPU | NP_PROBE_ARGS_ONLY;
	struct np_probe *p = np_probe_attach((void *)triple, &o);
	CHECK(p);
	CHECK_EQ(triple(4), 12);
	CHECK_EQ(hits, 1);
	if (p)
		CHECK_EQ(e2e_detach_free(p), 0);
}

static void read_args(struct np_ctx *ctx, void *data)
{
	struct seen *w = data;
	w->hits++;
	for (unsigned i = 0; i < 10; i++)
		w->args[i] = np_ctx_arg(ctx, i);
	w->pc = np_ctx_pc(ctx);
	w->func = np_ctx_func(ctx);
}

TEST(ten_arguments_in_registers_and_on_the_stack_are_read_at_the_entry)
{
	e2e_log_capture();
	for_each_strategy(s) {
		struct seen w = {0};
		struct np_probe *p = attach((void *)sum10, read_args, NULL, &w, s);
		CHECK(p);
		uint64_t r = sum10(11, 12, 13, 14, 15, 16, 17, 18, 19, 20);
		CHECK_EQ(r, 11 + 24 + 39 + 56 + 75 + 96 + 119 + 144 + 171 + 200);
		CHECK_EQ(w.hits, 1);
		for (unsigned i = 0; i < 10; i++)
			CHECK_EQ(w.args[i], 11 + i);
		CHECK_EQ(w.pc, (uint64_t)(uintptr_t)sum10);
		CHECK_EQ(w.func, (uint64_t)(uintptr_t)sum10);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
}

static void set_arg0(struct np_ctx *ctx, void *data)
{
	++*(unsigned *)data;
	CHECK_EQ(np_ctx_set_reg(ctx, np_reg_lookup(ARG0_REG), 7), 0);
}

TEST(an_argument_register_changed_at_the_entry_is_what_the_function_sees)
{
	CHECK(np_reg_lookup(ARG0_REG) >= 0);
	for_each_strategy(s) {
		unsigned hits = 0;
		struct np_probe *p = attach((void *)triple, set_arg0, NULL, &hits, s);
		CHECK(p);
		CHECK_EQ(triple(5), 21);
		CHECK_EQ(hits, 1);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(triple(5), 15);
	}
}

static void skip_call(struct np_ctx *ctx, void *data)
{
	++*(unsigned *)data;
	CHECK_EQ(np_ctx_override_return(ctx, 4242), 0);
}

TEST(override_return_skips_the_body_and_the_caller_gets_the_value)
{
	for_each_strategy(s) {
		unsigned hits = 0;
		struct np_probe *p = attach((void *)triple, skip_call, NULL, &hits, s);
		CHECK(p);
		unsigned before = body_runs;
		for (int i = 0; i < 3; i++)
			CHECK_EQ(triple((uint64_t)i), 4242);
		CHECK_EQ(body_runs, before);
		CHECK_EQ(hits, 3);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(triple(2), 6);
		CHECK_EQ(body_runs, before + 1);
	}
}

static void bump_retval(struct np_ctx *ctx, void *data)
{
	struct seen *w = data;
	w->hits++;
	w->retval = np_ctx_retval(ctx);
	CHECK(np_ctx_is_return(ctx));
	CHECK_EQ(np_ctx_set_retval(ctx, w->retval + 1), 0);
}

TEST(the_return_value_is_read_and_changed_at_the_return)
{
	for_each_strategy(s) {
		struct seen w = {0};
		struct np_probe *p = attach((void *)triple, NULL, bump_retval, &w, s);
		CHECK(p);
		CHECK_EQ(triple(10), 31);
		CHECK_EQ(w.hits, 1);
		CHECK_EQ(w.retval, 30);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(triple(10), 30);
	}
}

/* libc's own string functions under forced TRAP. The SIGTRAP handler must
 * call none of them: gcc turns a struct cleared with memset, or copied,
 * into a call to libc on arm64 where x86-64 inlines it, and a breakpoint
 * there made the handler trap into itself until the stack ran out (found
 * by the differential runs on arm64: a TRAP probe on libc's memset). Only
 * the calls on this test's own buffer are counted: the engine and stdio
 * may call these too.
 *
 * What dlsym returns is the implementation the ifunc picked, which
 * Debian's stripped libc names with no symbol (x86-64's
 * __memset_avx2_unaligned_erms, riscv64 glibc 2.43's memset loop): the
 * engine knows it for a called entry from libc's IRELATIVE slots. On
 * riscv64 under qemu no out-of-line slot lies within a jal of libc, so
 * the copy's jump back needs the register the calling convention frees
 * there: without that knowledge memset and memcpy were refused (ERANGE). */
struct libc_hits {
	const void *buf;
	unsigned hits;
};

static void count_on_buf(struct np_ctx *ctx, void *data)
{
	struct libc_hits *h = data;
	if (np_ctx_arg(ctx, 0) == (uint64_t)(uintptr_t)h->buf)
		h->hits++;
}

static void count_ret_buf(struct np_ctx *ctx, void *data)
{
	struct libc_hits *h = data;
	if (np_ctx_retval(ctx) == (uint64_t)(uintptr_t)h->buf)
		h->hits++;
}

static const char *const libc_names[] = {"memset", "memcpy", "memmove"};
static unsigned char libc_buf[4096], libc_src[4096];

/* 100 calls of libc_names[n] on libc_buf, through pointers the compiler
 * cannot see through (it would inline the calls) */
static void call_libc_100(unsigned n)
{
	void *(*volatile set)(void *, int, size_t) = memset;
	void *(*volatile copy)(void *, const void *, size_t) = n == 1 ? memcpy : memmove;
	for (unsigned i = 0; i < 100; i++) {
		if (n == 0)
			set(libc_buf, (int)i, 1 + i * 40);
		else
			copy(libc_buf, libc_src, 1 + i * 40);
	}
}

/* A probe on what libc_names[n] resolves to (dlsym runs the ifunc's
 * resolver) must count each of the 100 calls on libc_buf. */
static void probe_libc_100(unsigned n, np_handler_fn entry, np_handler_fn ret,
			   const struct mode *m)
{
	void *fn = dlsym(RTLD_DEFAULT, libc_names[n]);
	struct libc_hits h = {.buf = libc_buf};
	struct np_probe *p = fn ? attach(fn, entry, ret, &h, m) : NULL;
	CHECK(fn && p);
	call_libc_100(n);
	CHECK_EQ(libc_buf[0], n == 0 ? 99 : 0);
	CHECK_EQ(h.hits, p ? 100 : 0);
	if (!p) {
		printf("# %s: refused: %s\n", libc_names[n], e2e_log_state.last);
		return;
	}
	CHECK_EQ(np_probe_missed(p), 0);
	CHECK_EQ(e2e_detach_free(p), 0);
}

TEST(trap_probes_on_libc_memset_memcpy_and_memmove_count_every_call)
{
	const struct mode trap = {NP_STRATEGY_TRAP, 0};
	e2e_log_capture();
	for (unsigned n = 0; n < 3; n++)
		probe_libc_100(n, count_on_buf, NULL, &trap);
}

/* A return probe must sit at a function entry. What libc's ifuncs picked
 * has no symbol: libc's IRELATIVE slots (riscv64's memset and memcpy,
 * x86-64's) or this program's GOT slots bound to memset, memcpy and
 * memmove (arm64's glibc 2.36 has no IRELATIVE slot for them) say it is
 * one. The return value is the destination. */
TEST(return_probes_on_what_libcs_ifuncs_picked_see_every_return)
{
	const struct mode aut = {NP_STRATEGY_AUTO, 0};
	e2e_log_capture();
	for (unsigned n = 0; n < 3; n++)
		probe_libc_100(n, NULL, count_ret_buf, &aut);
}

/* An ifunc's implementation no symbol names (the library is stripped, as
 * Debian's libc is): only the IRELATIVE slot the loader filled says it is
 * a function entry, which a return probe needs (refused before, on every
 * ISA). */
struct entry_exit {
	unsigned entries, returns;
	int64_t last_ret;
};

static void count_entry(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	((struct entry_exit *)data)->entries++;
}

static void count_return(struct np_ctx *ctx, void *data)
{
	struct entry_exit *c = data;
	c->returns++;
	c->last_ret = (int64_t)np_ctx_retval(ctx);
}

TEST(a_return_probe_on_an_unnamed_ifunc_implementation_sees_every_return)
{
	void *impl = ifunc_lib_picked();
	/* one call first: clang calls the library's own ifunc through a lazy
	 * JUMP_SLOT (gcc: an IRELATIVE slot, bound at load), and only a bound
	 * slot says the implementation is an entry */
	CHECK_EQ(ifunc_lib_call(1), 2);
	e2e_log_capture();
	for (int s = 0; s < 2; s++) {
		const struct mode m = {s ? NP_STRATEGY_TRAP : NP_STRATEGY_AUTO, 0};
		struct entry_exit c = {0};
		struct np_probe *p = attach(impl, count_entry, count_return, &c, &m);
		CHECK(p);
		if (!p)
			continue;
		for (int i = 0; i < 100; i++)
			CHECK_EQ(ifunc_lib_call(i), i + 1);
		CHECK_EQ(c.entries, 100);
		CHECK_EQ(c.returns, 100);
		CHECK_EQ(c.last_ret, 100);
		CHECK_EQ(e2e_detach_free(p), 0);
		CHECK_EQ(ifunc_lib_call(1), 2);
	}
}

TEST_MAIN()

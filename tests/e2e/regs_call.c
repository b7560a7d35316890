/* SPDX-License-Identifier: MIT */
/*
 * Every register of a caller survives a call to a probed function, as it
 * would without the probe, for every kind of probe (ISA-neutral; linked
 * into each ISA's e2e-regs, which holds TEST_MAIN).
 *
 * The ABI lets a callee clobber the caller-saved registers, but GCC's
 * -fipa-ra (on at -O2) lets a caller keep values in any register a
 * non-interposable callee is known not to write, vector registers
 * included. A probe whose entry, return or slow path clobbers one breaks
 * ordinary loops (`for (i = 0; i < n; i++) s += h(i);` kept n in rcx).
 * So rc_call (regs_call_<isa>.S) loads a value into every general and
 * vector register but the stack pointer and the link register, calls a
 * leaf that writes only its result register, and dumps them all; every
 * one must hold what it held before the call, the result register the
 * leaf's result. Probes: at the entry (default, NP_PROBE_ARGS_ONLY,
 * NP_PROBE_NO_FPU), at an instruction of the leaf, at its return, at both,
 * an override_return, and a watchpoint the leaf stores to; placed as a
 * jump and as a breakpoint; with handlers that only count (which the
 * engine proves leave the vector state alone, so it saves none) and with
 * handlers that call libc (memset, snprintf: vector code). Each probe is
 * hit twice from this thread (the second time on the inline path) and once
 * from a new thread, whose first hit takes the engine's C slow path and,
 * for a return probe, the shared return trampoline.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "regs_call.h"
#include "test.h"

struct rc_state {
	uint64_t gpr[32];
	uint64_t misc[16];
	uint8_t vec[32][64];
};
_Static_assert(offsetof(struct rc_state, misc) == RC_MISC, "layout");
_Static_assert(offsetof(struct rc_state, vec) == RC_VEC, "layout");
_Static_assert(sizeof(struct rc_state) == RC_SIZE, "layout");

extern void rc_call(const struct rc_state *in, struct rc_state *out, void (*leaf)(void),
		    unsigned mode);
extern void rc_leaf(void), rc_leaf_store(void);
extern char rc_leaf_mid[];
extern uint64_t rc_watched;

/* --- what each ISA keeps --------------------------------------------------- */

/* Which registers rc_call loads and checks: kept_gpr (bits by hardware
 * number), the result register, vector registers of vec_bytes each, and
 * misc words (control and status registers, masks). */
struct rc_isa {
	const char *const *gpr_name;
	uint32_t kept_gpr;
	int result;
	unsigned mode, nvec, vec_bytes;
	uint32_t kept_misc;
	const char *const *misc_name;
};

#if defined(__x86_64__)
static const char *const gpr_names[32] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};
static const char *const misc_names[16] = {"k0", "k1", "k2", "k3", "k4", "k5",
					   "k6", "k7", "mxcsr"};

/* every general register but rsp; the richest vector file the CPU has */
static struct rc_isa rc_isa_now(void)
{
	struct rc_isa isa = {gpr_names, 0xffff & ~(1u << 4), 0, RC_SSE, 16, 16, 1u << 8,
			     misc_names};
	if (__builtin_cpu_supports("avx512f")) {
		isa.mode = RC_AVX512;
		isa.nvec = 32;
		isa.vec_bytes = 64;
		isa.kept_misc |= 0xff;
	} else if (__builtin_cpu_supports("avx")) {
		isa.mode = RC_AVX;
		isa.vec_bytes = 32;
	}
	return isa;
}

/* mxcsr: the default, no exception flag set (a handler's double
 * arithmetic sets the precision flag) */
static uint64_t misc_value(int i, uint64_t pat)
{
	return i == 8 ? 0x1f80 : pat;
}
#elif defined(__aarch64__)
static const char *const gpr_names[32] = {
	"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
	"x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30",
};
static const char *const misc_names[16] = {"fpsr", "fpcr"};

/* x0 is the result, x30 the link register; x16 and x17 (IP0, IP1) a call
 * may clobber anyway (a veneer or PLT stub), and GCC treats them so */
static struct rc_isa rc_isa_now(void)
{
	return (struct rc_isa){gpr_names, 0x3ffcfffe, 0, 0, 32, 16, 0x3, misc_names};
}

/* fpsr: the cumulative exception flags and QC set (a handler's arithmetic
 * may set but not clear them); fpcr: round towards plus infinity, flush
 * to zero, default NaN */
static uint64_t misc_value(int i, uint64_t pat)
{
	(void)pat;
	return i == 0 ? 0x0800009f : 0x03400000;
}
#elif defined(__riscv) && __riscv_xlen == 64
static const char *const gpr_names[32] = {
	"zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
	"a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
	"s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};
static const char *const misc_names[16] = {"fcsr"};

/* a0 is the result, ra the link register; zero, sp, gp and tp are the
 * program's own */
static struct rc_isa rc_isa_now(void)
{
	return (struct rc_isa){gpr_names, 0xfffffbe0, 10, 0, 32, 8, 0x1, misc_names};
}

/* fcsr: round down, no flag set (a handler's arithmetic sets inexact) */
static uint64_t misc_value(int i, uint64_t pat)
{
	(void)i;
	(void)pat;
	return 0x40;
}
#else
#error "regs_call.c: no register description for this ISA"
#endif

/* --- the state before and after -------------------------------------------- */

static uint64_t pattern(unsigned seed, unsigned n)
{
	return 0x9e3779b97f4a7c15ull * (seed * 64 + n + 1) | 1;
}

static void fill(struct rc_state *s, const struct rc_isa *isa, unsigned seed)
{
	memset(s, 0, sizeof *s);
	for (unsigned n = 0; n < 32; n++)
		s->gpr[n] = pattern(seed, n);
	for (int i = 0; i < 16; i++)
		if (isa->kept_misc >> i & 1)
			s->misc[i] = misc_value(i, pattern(seed, 32 + (unsigned)i));
	for (unsigned n = 0; n < isa->nvec; n++)
		for (unsigned j = 0; j < isa->vec_bytes; j++)
			s->vec[n][j] = (uint8_t)(n * 37 + j * 11 + seed * 5 + 1);
}

/* Every kept register as in 'in', the result register 'result'. */
static bool same(const struct rc_state *in, const struct rc_state *out, const struct rc_isa *isa,
		 uint64_t result, const char *what)
{
	bool ok = true;

	for (int n = 0; n < 32; n++) {
		uint64_t want = n == isa->result ? result : in->gpr[n];
		if ((n == isa->result || (isa->kept_gpr >> n & 1)) && out->gpr[n] != want) {
			fprintf(stderr, "#   %s: %s = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", what,
				isa->gpr_name[n], out->gpr[n], want);
			ok = false;
		}
	}
	for (int i = 0; i < 16; i++)
		if ((isa->kept_misc >> i & 1) && out->misc[i] != in->misc[i]) {
			fprintf(stderr, "#   %s: %s = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", what,
				isa->misc_name[i], out->misc[i], in->misc[i]);
			ok = false;
		}
	for (unsigned n = 0; n < isa->nvec; n++)
		if (memcmp(out->vec[n], in->vec[n], isa->vec_bytes) != 0) {
			fprintf(stderr, "#   %s: vector register %u changed\n", what, n);
			ok = false;
		}
	return ok;
}

/* --- handlers --------------------------------------------------------------- */

enum rc_kind { K_ENTRY, K_INSN, K_RETURN, K_ENTRY_RETURN, K_OVERRIDE };
static const char *const kind_name[] = {"entry", "instruction", "return", "entry+return",
					"override_return"};

struct rc_counts {
	uint64_t entry, ret, bad_retval;
	bool libc, override;
};

static volatile char big[1 << 16];
static char text[128];

/* What a handler that calls libc does to the registers: AVX2/AVX-512 or
 * NEON memset, floating point, stdio's formatting. */
static __attribute__((noinline)) void use_libc(bool stdio)
{
	volatile double d = 1.0;

	memset((void *)big, 0x5c, sizeof big);
	for (int i = 0; i < 100; i++)
		d = d * 1.000001 + 0.5;
	if (stdio)
		snprintf(text, sizeof text, "%f %d %s", (double)d, 42, "libc");
	else
		memcpy(text, (const void *)big, sizeof text);
}

/* Counting handlers: no libc, no switch (a jump table is an indirect
 * branch the engine's proof gives up on), so it proves them vector-free. */
static void on_entry(struct np_ctx *ctx, void *data)
{
	struct rc_counts *c = data;

	__atomic_fetch_add(&c->entry, 1, __ATOMIC_RELAXED);
	if (c->override)
		np_ctx_override_return(ctx, RC_OVERRIDE);
}

static void on_return(struct np_ctx *ctx, void *data)
{
	struct rc_counts *c = data;

	__atomic_fetch_add(&c->ret, 1, __ATOMIC_RELAXED);
	if (np_ctx_retval(ctx) != RC_RESULT)
		__atomic_fetch_add(&c->bad_retval, 1, __ATOMIC_RELAXED);
}

static void on_entry_libc(struct np_ctx *ctx, void *data)
{
	use_libc(true);
	on_entry(ctx, data);
}

static void on_return_libc(struct np_ctx *ctx, void *data)
{
	use_libc(true);
	on_return(ctx, data);
}

/* --- running the calls ------------------------------------------------------ */

struct rc_run {
	const struct rc_isa *isa;
	void (*leaf)(void);
	uint64_t result;
	unsigned seed;
	bool ok;
};

static void call_once(struct rc_run *r, const char *what)
{
	struct rc_state in, out;

	fill(&in, r->isa, r->seed++);
	memset(&out, 0xee, sizeof out);
	rc_call(&in, &out, r->leaf, r->isa->mode);
	if (!same(&in, &out, r->isa, r->result, what))
		r->ok = false;
}

static void *call_on_new_thread(void *arg)
{
	call_once(arg, "a new thread's first hit");
	return NULL;
}

/* Twice here (the first hit of this thread may take the slow path, the
 * second the inline one), then once on a new thread (the slow path). */
static bool call_three_times(struct rc_run *r)
{
	pthread_t t;

	r->ok = true;
	call_once(r, "first call");
	call_once(r, "second call");
	CHECK_EQ(pthread_create(&t, NULL, call_on_new_thread, r), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	return r->ok;
}

static unsigned next_seed = 1;

static void setup(void)
{
	e2e_log_capture();
}

TEST(unprobed_call_keeps_every_register)
{
	struct rc_isa isa = rc_isa_now();
	struct rc_run r = {.isa = &isa, .leaf = rc_leaf, .result = RC_RESULT, .seed = next_seed};

	setup();
	CHECK(call_three_times(&r));
	r.leaf = rc_leaf_store;
	rc_watched = 0;
	CHECK(call_three_times(&r));
	CHECK(rc_watched != 0);
	next_seed = r.seed;
}

/* One probe of this kind, placed with this strategy and flags, with
 * counting or libc-calling handlers. */
static void probe_case(enum rc_kind kind, enum np_strategy strategy, unsigned flags, bool libc)
{
	struct rc_isa isa = rc_isa_now();
	struct rc_counts c = {.libc = libc, .override = kind == K_OVERRIDE};
	struct rc_run r = {.isa = &isa,
			   .leaf = rc_leaf,
			   .result = kind == K_OVERRIDE ? RC_OVERRIDE : RC_RESULT,
			   .seed = next_seed};
	struct np_probe_opts o = e2e_opts(NULL, &c, strategy);
	bool entry = kind != K_RETURN, ret = kind == K_RETURN || kind == K_ENTRY_RETURN;

	o.on_entry = entry ? (libc ? on_entry_libc : on_entry) : NULL;
	o.on_return = ret ? (libc ? on_return_libc : on_return) : NULL;
	o.flags = flags;
	struct np_probe *p = np_probe_attach(kind == K_INSN ? (void *)rc_leaf_mid : (void *)rc_leaf,
					     &o);
	if (!p) {
		fprintf(stderr, "# %s probe, %s: attach failed: %s (%s)\n", kind_name[kind],
			np_strategy_name(strategy), strerror(errno), e2e_log_state.last);
		CHECK(p != NULL);
		return;
	}
	if (!call_three_times(&r)) {
		fprintf(stderr, "# ^ %s probe, %s, flags %u, %s handlers\n", kind_name[kind],
			np_strategy_name(strategy), flags, libc ? "libc-calling" : "counting");
		CHECK(0);
	}
	next_seed = r.seed;
	CHECK_EQ(c.entry, entry ? 3 : 0);
	CHECK_EQ(c.ret, ret ? 3 : 0);
	CHECK_EQ(c.bad_retval, 0);
	CHECK_EQ(np_probe_missed(p), 0);
	CHECK_EQ(e2e_detach_free(p), 0);
}

static const enum np_strategy strategies[] = {NP_STRATEGY_JUMP, NP_STRATEGY_TRAP};

/* Every flag set, each with counting and libc-calling handlers, except
 * NP_PROBE_NO_FPU, a promise only counting handlers keep. */
static void kind_matrix(enum rc_kind kind)
{
	static const unsigned flag_sets[] = {0, NP_PROBE_NO_FPU, NP_PROBE_ARGS_ONLY,
					     NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU};

	setup();
	for (int s = 0; s < 2; s++)
		for (int f = 0; f < 4; f++)
			for (int libc = 0; libc < 2; libc++)
				if (!(libc && (flag_sets[f] & NP_PROBE_NO_FPU)))
					probe_case(kind, strategies[s], flag_sets[f], libc);
}

TEST(entry_probes_keep_every_register_of_the_caller)
{
	kind_matrix(K_ENTRY);
}

TEST(instruction_probes_keep_every_register_of_the_caller)
{
	kind_matrix(K_INSN);
}

TEST(return_probes_keep_every_register_of_the_caller)
{
	kind_matrix(K_RETURN);
}

TEST(entry_and_return_probes_keep_every_register_of_the_caller)
{
	kind_matrix(K_ENTRY_RETURN);
}

TEST(override_return_keeps_every_register_but_the_result)
{
	kind_matrix(K_OVERRIDE);
}

/* --- watchpoints ------------------------------------------------------------ */

struct rc_watch_counts {
	uint64_t hits;
	bool libc;
};

/* In the SIGTRAP handler: async-signal-safe libc only. */
static void on_watch(const struct np_watch_hit *hit, void *data)
{
	struct rc_watch_counts *c = data;

	(void)hit;
	if (c->libc)
		use_libc(false);
	__atomic_fetch_add(&c->hits, 1, __ATOMIC_RELAXED);
}

TEST(watch_handlers_keep_every_register_of_the_caller)
{
	struct rc_isa isa = rc_isa_now();

	setup();
	for (int libc = 0; libc < 2; libc++) {
		struct rc_watch_counts c = {.libc = libc};
		struct np_watch_opts o = NP_WATCH_OPTS(.data = &c);
		struct rc_run r = {
			.isa = &isa, .leaf = rc_leaf_store, .result = RC_RESULT, .seed = next_seed};

		rc_watched = 0;
		struct np_watch *w = np_watch_attach(&rc_watched, sizeof rc_watched,
						     NP_WATCH_WRITE, on_watch, &o);
		if (!w && errno == EOPNOTSUPP) {
			printf("# skip: no hardware breakpoints here (%s)\n", e2e_log_state.last);
			return;
		}
		CHECK(w != NULL);
		if (!w)
			return;
		if (!call_three_times(&r)) {
			fprintf(stderr, "# ^ watch, %s handler\n",
				libc ? "libc-calling" : "counting");
			CHECK(0);
		}
		next_seed = r.seed;
		CHECK_EQ(c.hits, 3);
		CHECK_EQ(np_watch_detach(w), 0);
		np_watch_free(w);
	}
}

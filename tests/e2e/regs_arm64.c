/* SPDX-License-Identifier: MIT */
/*
 * arm64 twin of regs.c: x0-x30, sp, NZCV, FPSR, FPCR and q0-q31 preserved
 * across a probe hit (regs_arm64.S loads known values, passes a probe
 * site, dumps them), mid-function and at a function entry, with handlers
 * that count, that clobber everything a C function may clobber (FP/SIMD
 * included), that read the registers, that change some on purpose, and
 * that move pc (the redirect routine), under AUTO and forced TRAP, with
 * and without NP_PROBE_NO_FPU and NP_PROBE_ARGS_ONLY (the lean saves).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "regs_arm64.h"
#include "test.h"

struct regs_out {
	uint64_t gpr[31];
	uint64_t sp; /* at the site (site c: 16 lower) */
	uint64_t nzcv, fpsr, fpcr, pad;
	uint8_t vec[32][16];
};
_Static_assert(offsetof(struct regs_out, sp) == OUT_SP, "layout");
_Static_assert(offsetof(struct regs_out, nzcv) == OUT_NZCV, "layout");
_Static_assert(offsetof(struct regs_out, fpsr) == OUT_FPSR, "layout");
_Static_assert(offsetof(struct regs_out, fpcr) == OUT_FPCR, "layout");
_Static_assert(offsetof(struct regs_out, vec) == OUT_VEC, "layout");
_Static_assert(sizeof(struct regs_out) == OUT_SIZE, "layout");

typedef void regs_fn(struct regs_out *out, uint64_t nzcv, const void *vec, uint64_t fpcr);
extern regs_fn regs_run, regs_call;
extern void *regs_sites[4];
extern const char regs_call_ret[];

enum site { SITE_A, SITE_B, SITE_C, SITE_ENTRY };
static const char *const site_name[4] = {"a (nop)", "b (and)", "c (sp-16)", "entry"};
#define FPCR_DN_FZ_RP 0x03400000u /* default NaN, flush to zero, round to +inf */

enum mode { H_COUNT, H_CLOBBER, H_READ, H_SET, H_SKIP, H_SKIP_CLOBBER };

struct hstate {
	enum mode mode;
	unsigned calls;
	uint64_t pc, sp;
	uint64_t reg[31];
	int set_rc, set_callee_rc, set_callee_errno, set_sp_rc, set_sp_errno;
};

static uint8_t vec_in[32][16];
static FILE *devnull;
static volatile char big[1 << 16];

static uint64_t pattern(int n)
{
	return PAT_BASE + (uint64_t)n * PAT_STEP;
}

static const char *const xname[31] = {
	"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
	"x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30",
};

/* What a C function may do to the FP/SIMD state: every vector register,
 * the cumulative flags, libc string and stdio code. */
static __attribute__((noinline)) void clobber_everything(void)
{
	volatile double d = 1.0;

	memset((void *)big, 0x5c, sizeof big);
	for (int i = 0; i < 100; i++)
		d = d * 1.000001 + 0.5;
	fprintf(devnull, "%f %d %s %p\n", (double)d, 42, "clobber", (void *)&d);
	fflush(devnull);
	__asm__ volatile("movi v0.16b, #0x11\n\tmovi v1.16b, #0x22\n\tmovi v2.16b, #0x33\n\t"
			 "movi v3.16b, #0x44\n\tmovi v4.16b, #0x55\n\tmovi v5.16b, #0x66\n\t"
			 "movi v6.16b, #0x77\n\tmovi v7.16b, #0x88\n\tmovi v8.16b, #0x99\n\t"
			 "movi v9.16b, #0xaa\n\tmovi v10.16b, #0xbb\n\tmovi v11.16b, #0xcc\n\t"
			 "movi v12.16b, #0xdd\n\tmovi v13.16b, #0xee\n\tmovi v14.16b, #0xff\n\t"
			 "movi v15.16b, #0x01\n\tmovi v16.16b, #0x02\n\tmovi v17.16b, #0x03\n\t"
			 "movi v18.16b, #0x04\n\tmovi v19.16b, #0x05\n\tmovi v20.16b, #0x06\n\t"
			 "movi v21.16b, #0x07\n\tmovi v22.16b, #0x08\n\tmovi v23.16b, #0x09\n\t"
			 "movi v24.16b, #0x0a\n\tmovi v25.16b, #0x0b\n\tmovi v26.16b, #0x0c\n\t"
			 "movi v27.16b, #0x0d\n\tmovi v28.16b, #0x0e\n\tmovi v29.16b, #0x0f\n\t"
			 "movi v30.16b, #0x10\n\tmovi v31.16b, #0x12\n\t"
			 "msr fpsr, xzr\n\tmov x9, #-1\n\tcmn x9, #1"
			 ::: "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10",
			   "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20",
			   "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
			   "v31", "x9", "cc", "memory");
}

/* Handlers without FP/SIMD code (the engine proves it and skips the
 * vector save): no libc call that might have any, no switch (a jump
 * table is an indirect branch the proof gives up on). */
static void handler(struct np_ctx *ctx, void *data)
{
	struct hstate *h = data;

	h->calls++;
	h->pc = np_ctx_pc(ctx);
	h->sp = np_ctx_sp(ctx);
	if (h->mode == H_READ) {
		for (int i = 0; i < 31; i++)
			h->reg[i] = np_ctx_reg(ctx, np_reg_lookup(xname[i]));
	} else if (h->mode == H_SET) {
		errno = 0;
		h->set_rc = np_ctx_set_reg(ctx, np_reg_lookup("x0"), 7);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("x9"), 42);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("x17"), 0x1717);
		h->set_callee_rc = np_ctx_set_reg(ctx, np_reg_lookup("x19"), 0x1234567890abcdefull);
		h->set_callee_errno = errno;
		errno = 0;
		h->set_sp_rc = np_ctx_set_reg(ctx, np_reg_lookup("sp"), 0);
		h->set_sp_errno = errno;
	} else if (h->mode == H_SKIP) {
		/* every site is a word without effect: skipping it changes nothing */
		h->set_rc = np_ctx_set_reg(ctx, np_reg_lookup("pc"), np_ctx_pc(ctx) + 4);
	}
}

/* H_CLOBBER, H_SKIP_CLOBBER */
static void clobber_handler(struct np_ctx *ctx, void *data)
{
	struct hstate *h = data;

	h->calls++;
	h->pc = np_ctx_pc(ctx);
	h->sp = np_ctx_sp(ctx);
	clobber_everything();
	if (h->mode == H_SKIP_CLOBBER)
		h->set_rc = np_ctx_set_reg(ctx, np_reg_lookup("pc"), np_ctx_pc(ctx) + 4);
}

struct run {
	enum site site;
	enum np_strategy strategy;
	uint64_t nzcv;
	unsigned probe_flags;
};

static bool args_only(const struct run *r)
{
	return r->site == SITE_ENTRY && (r->probe_flags & NP_PROBE_ARGS_ONLY);
}

static void expected(const struct run *r, uint64_t *want)
{
	for (int i = 0; i < 31; i++)
		want[i] = pattern(i);
	if (r->site == SITE_ENTRY)
		want[30] = (uint64_t)(uintptr_t)regs_call_ret;
}

static int dump_ok(const struct regs_out *o, const struct run *r, const uint64_t *want)
{
	int ok = 1;

	for (int i = 0; i < 31; i++) {
		if (o->gpr[i] != want[i]) {
			fprintf(stderr, "#   x%d = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", i, o->gpr[i],
				want[i]);
			ok = 0;
		}
	}
	/* NZCV is dead at a function entry (AAPCS64): the lean save drops it */
	if (!args_only(r) && o->nzcv != r->nzcv) {
		fprintf(stderr, "#   nzcv = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", o->nzcv, r->nzcv);
		ok = 0;
	}
	if (o->fpsr != FPSR_PATTERN || o->fpcr != FPCR_DN_FZ_RP) {
		fprintf(stderr, "#   fpsr 0x%" PRIx64 " fpcr 0x%" PRIx64 "\n", o->fpsr, o->fpcr);
		ok = 0;
	}
	for (int n = 0; n < 32; n++) {
		if (memcmp(o->vec[n], vec_in[n], 16) != 0) {
			fprintf(stderr, "#   q%d changed\n", n);
			ok = 0;
		}
	}
	return ok;
}

/* Probe one site, run the function once, check the dump against want. */
static void run_one(const struct run *r, struct hstate *h, const uint64_t *want)
{
	void *site = regs_sites[r->site];
	regs_fn *fn = r->site == SITE_ENTRY ? regs_call : regs_run;
	bool clobbers = h->mode == H_CLOBBER || h->mode == H_SKIP_CLOBBER;
	struct np_probe_opts o = e2e_opts(clobbers ? clobber_handler : handler, h, r->strategy);
	struct regs_out out;

	o.flags = r->probe_flags;
	h->calls = 0;
	memset(&out, 0, sizeof out);
	struct np_probe *p = np_probe_attach(site, &o);
	if (!p) {
		fprintf(stderr, "# attach at site %s failed: %s (%s)\n", site_name[r->site],
			strerror(errno), e2e_log_state.last);
		CHECK(p != NULL);
		return;
	}
	fn(&out, r->nzcv, vec_in, FPCR_DN_FZ_RP);
	CHECK_EQ(h->calls, 1);
	if (!dump_ok(&out, r, want)) {
		fprintf(stderr, "# ^ site %s, %s (chosen %s), mode %d, flags %u, nzcv 0x%" PRIx64 "\n",
			site_name[r->site], np_strategy_name(r->strategy),
			np_strategy_name(np_probe_strategy(p)), (int)h->mode, r->probe_flags, r->nzcv);
		CHECK(0);
	}
	CHECK_EQ(h->pc, (uint64_t)(uintptr_t)site);
	CHECK_EQ(h->sp, out.sp - (r->site == SITE_C ? 16 : 0));
	CHECK_EQ(np_probe_hits(p), 1);
	CHECK_EQ(e2e_detach_free(p), 0);
}

static void setup(void)
{
	for (int n = 0; n < 32; n++)
		for (int j = 0; j < 16; j++)
			vec_in[n][j] = (uint8_t)(0x11 * n + 7 * j + 1);
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	e2e_log_capture();
}

static const enum np_strategy strat[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
static const uint64_t usual_nzcv[] = {0xf0000000, 0, 0x60000000, 0x90000000};

/* The sites x {AUTO, TRAP} x NZCV values, with one handler mode. */
static void run_matrix(const enum site *sites, int nsites, enum mode mode, unsigned flags)
{
	struct hstate h = {.mode = mode};
	uint64_t want[31];

	setup();
	for (int s = 0; s < nsites; s++)
		for (int k = 0; k < 2; k++)
			for (int f = 0; f < 4; f++) {
				struct run r = {sites[s], strat[k], usual_nzcv[f], flags};
				expected(&r, want);
				run_one(&r, &h, want);
			}
}

static const enum site mid[] = {SITE_A, SITE_B, SITE_C};
static const enum site entry[] = {SITE_ENTRY};

TEST(unprobed_dump_matches_what_was_loaded)
{
	struct regs_out out;
	struct run r = {SITE_A, NP_STRATEGY_AUTO, 0x90000000, 0};
	uint64_t want[31];

	setup();
	expected(&r, want);
	regs_run(&out, r.nzcv, vec_in, FPCR_DN_FZ_RP);
	CHECK(dump_ok(&out, &r, want));
	r.site = SITE_ENTRY;
	expected(&r, want);
	regs_call(&out, r.nzcv, vec_in, FPCR_DN_FZ_RP);
	CHECK(dump_ok(&out, &r, want));
}

TEST(mid_function_everything_preserved_with_counting_handler)
{
	run_matrix(mid, 3, H_COUNT, 0);
	run_matrix(mid, 3, H_COUNT, NP_PROBE_NO_FPU);
}

TEST(mid_function_everything_preserved_with_clobbering_handler)
{
	run_matrix(mid, 3, H_CLOBBER, 0);
}

TEST(entry_everything_preserved_with_every_save)
{
	static const unsigned flags[] = {0, NP_PROBE_NO_FPU, NP_PROBE_ARGS_ONLY,
					 NP_PROBE_ARGS_ONLY | NP_PROBE_NO_FPU};
	for (int i = 0; i < 4; i++)
		run_matrix(entry, 1, H_COUNT, flags[i]);
	run_matrix(entry, 1, H_CLOBBER, 0);
	run_matrix(entry, 1, H_CLOBBER, NP_PROBE_ARGS_ONLY);
}

static void read_matrix(const enum site *sites, int nsites, unsigned flags)
{
	struct hstate h = {.mode = H_READ};
	uint64_t want[31];

	for (int s = 0; s < nsites; s++)
		for (int k = 0; k < 2; k++) {
			struct run r = {sites[s], strat[k], 0x60000000, flags};
			expected(&r, want);
			memset(h.reg, 0xee, sizeof h.reg);
			run_one(&r, &h, want); /* checks pc and sp too */
			bool lean = args_only(&r) && r.strategy == NP_STRATEGY_AUTO;
			for (int i = 0; i < 31; i++) {
				/* the args-only trampoline does not save x19-x29 */
				uint64_t w = lean && i >= 19 && i <= 29 ? 0 : want[i];
				if (h.reg[i] != w)
					fprintf(stderr, "# site %s %s: x%d read 0x%" PRIx64 "\n",
						site_name[r.site], np_strategy_name(r.strategy), i,
						h.reg[i]);
				CHECK_EQ(h.reg[i], w);
			}
		}
}

TEST(handler_reads_every_register_and_sees_pc_and_sp_of_the_site)
{
	setup();
	for (int i = 0; i < 31; i++) {
		CHECK(np_reg_lookup(xname[i]) >= 0);
		CHECK_STR(np_reg_name(np_reg_lookup(xname[i])), xname[i]);
	}
	CHECK(np_reg_lookup("sp") >= 0);
	CHECK_EQ(np_reg_lookup("no-such-register"), (uint64_t)-1);
	read_matrix(mid, 3, 0);
	read_matrix(entry, 1, 0);
	read_matrix(entry, 1, NP_PROBE_ARGS_ONLY);
}

static void set_matrix(const enum site *sites, int nsites, unsigned flags)
{
	struct hstate h = {.mode = H_SET};
	uint64_t want[31];

	for (int s = 0; s < nsites; s++)
		for (int k = 0; k < 2; k++) {
			struct run r = {sites[s], strat[k], 0x60000000, flags};
			/* args-only leaves x19 out of ctx: not writable (TRAP
			 * saves everything, so it can) */
			bool lean = args_only(&r) && r.strategy == NP_STRATEGY_AUTO;
			expected(&r, want);
			want[0] = 7;
			want[9] = 42;
			want[17] = 0x1717;
			if (!lean)
				want[19] = 0x1234567890abcdefull;
			run_one(&r, &h, want);
			CHECK_EQ(h.set_rc, 0);
			CHECK_EQ(h.set_callee_rc, lean ? (uint64_t)-1 : 0);
			if (lean)
				CHECK_EQ(h.set_callee_errno, EINVAL);
			CHECK_EQ(h.set_sp_rc, (uint64_t)-1); /* sp is read only */
			CHECK_EQ(h.set_sp_errno, EINVAL);
		}
}

TEST(registers_set_by_the_handler_are_seen_by_the_program)
{
	setup();
	set_matrix(mid, 3, 0);
	set_matrix(entry, 1, 0);
	set_matrix(entry, 1, NP_PROBE_ARGS_ONLY);
}

/* A handler that moves pc goes through the redirect routine (every
 * register from ctx, pc and sp included): each save flavour has its own
 * way there, with and without the FP/SIMD state. */
TEST(a_handler_moving_pc_past_the_site_leaves_every_register_as_it_was)
{
	run_matrix(mid, 3, H_SKIP, 0);
	run_matrix(mid, 3, H_SKIP_CLOBBER, 0);
	run_matrix(entry, 1, H_SKIP, 0);
	run_matrix(entry, 1, H_SKIP, NP_PROBE_ARGS_ONLY);
	run_matrix(entry, 1, H_SKIP_CLOBBER, NP_PROBE_ARGS_ONLY);
}

/* NP_PROBE_NO_FPU is the handler's promise: the trampoline then saves no
 * FP/SIMD state at all. A handler that breaks it shows that the lean
 * trampoline is the one that ran (a trap restores everything anyway). */
TEST(no_fpu_trampolines_save_no_vector_state)
{
	static const enum site sites[] = {SITE_A, SITE_ENTRY};
	struct hstate h = {.mode = H_CLOBBER};

	setup();
	for (int s = 0; s < 2; s++)
		for (int args = 0; args < 2; args++) {
			struct run r = {sites[s], NP_STRATEGY_JUMP, 0,
					NP_PROBE_NO_FPU | (args ? NP_PROBE_ARGS_ONLY : 0)};
			struct np_probe_opts o = e2e_opts(clobber_handler, &h, r.strategy);
			struct regs_out out;
			o.flags = r.probe_flags;
			struct np_probe *p = np_probe_attach(regs_sites[r.site], &o);
			CHECK(p);
			if (!p)
				continue;
			(r.site == SITE_ENTRY ? regs_call : regs_run)(&out, 0, vec_in, FPCR_DN_FZ_RP);
			CHECK(memcmp(out.vec[31], vec_in[31], 16) != 0);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
}

TEST_MAIN()

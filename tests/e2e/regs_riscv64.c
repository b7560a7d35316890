/* SPDX-License-Identifier: MIT */
/*
 * riscv64 twin of regs_arm64.c: x1-x31 (gp and tp as the program has
 * them), f0-f31 and fcsr preserved across a probe hit (regs_riscv64.S
 * loads known values, passes a probe site, dumps them), mid-function, at
 * an instruction that changes sp and at a function entry, with handlers
 * that count (proven FP-free by the engine), that clobber everything a C
 * function may clobber (f registers, rounding mode and flags, libc
 * calls), that read the registers, that change some on purpose, and that
 * move pc (the redirect routine), under AUTO and forced TRAP, with and
 * without NP_PROBE_NO_FPU. Each probed run is compared with a run of the
 * same function without the probe, from the same frame (same sp).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "regs_riscv64.h"
#include "test.h"

struct regs_out {
	uint64_t gpr[32]; /* gpr[0] = 0, gpr[2] = sp at the site (c: before it, d: 16 lower) */
	uint64_t fcsr, pad;
	uint64_t fpr[32];
};
_Static_assert(offsetof(struct regs_out, gpr) == OUT_GPR, "layout");
_Static_assert(offsetof(struct regs_out, fcsr) == OUT_FCSR, "layout");
_Static_assert(offsetof(struct regs_out, fpr) == OUT_FPR, "layout");
_Static_assert(sizeof(struct regs_out) == OUT_SIZE, "layout");

typedef void regs_fn(struct regs_out *out, uint64_t fcsr, const uint64_t *fpr);
extern regs_fn regs_run, regs_call;
extern void *regs_sites[5];
extern const char regs_call_ret[];

enum site { SITE_A, SITE_B, SITE_C, SITE_D, SITE_ENTRY };
static const char *const site_name[5] = {"a (nop)", "b (and)", "c (addi sp, -16)",
					 "d (nop, sp-16)", "entry"};
/* sp in the handler, relative to the sp the dump records */
static const int64_t site_sp_delta[5] = {0, 0, 0, -16, 0};

enum mode { H_COUNT, H_CLOBBER, H_READ, H_SET, H_SKIP, H_SKIP_CLOBBER };

struct hstate {
	enum mode mode;
	unsigned calls;
	uint64_t pc, sp;
	uint64_t reg[32];
	int set_rc, set_sp_rc, set_sp_errno, set_zero_rc, set_zero_errno;
};

static uint64_t fpr_in[32];
static FILE *devnull;
static volatile char big[1 << 16];

#define FCSR_CLOBBER 0x41 /* round down, inexact: none of usual_fcsr */

static uint64_t pattern(int n)
{
	return PAT_BASE + (uint64_t)n * PAT_STEP;
}

static const char *const xname[32] = {
	"zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
	"a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
	"s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

/* What a C function may do to the FP state: every f register (the
 * compiler saves fs0-fs11 around the asm, as the convention says), the
 * rounding mode and the flags, libc string and stdio code. */
static __attribute__((noinline)) void clobber_everything(void)
{
	volatile double d = 1.0;

	memset((void *)big, 0x5c, sizeof big);
	for (int i = 0; i < 100; i++)
		d = d * 1.000001 + 0.5;
	fprintf(devnull, "%f %d %s %p\n", (double)d, 42, "clobber", (void *)&d);
	fflush(devnull);
#define F2(a, b) "fmv.d.x f" #a ", t0\n\taddi t0, t0, 1\n\tfmv.d.x f" #b ", t0\n\taddi t0, t0, 1\n\t"
	__asm__ volatile("li t0, 0x7ff4000000000000\n\t"
			 F2(0, 1) F2(2, 3) F2(4, 5) F2(6, 7) F2(8, 9) F2(10, 11) F2(12, 13)
			 F2(14, 15) F2(16, 17) F2(18, 19) F2(20, 21) F2(22, 23) F2(24, 25)
			 F2(26, 27) F2(28, 29) F2(30, 31)
			 "li t0, %0\n\tfscsr t0"
			 :: "i"(FCSR_CLOBBER)
			 : "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10",
			   "f11", "f12", "f13", "f14", "f15", "f16", "f17", "f18", "f19", "f20",
			   "f21", "f22", "f23", "f24", "f25", "f26", "f27", "f28", "f29", "f30",
			   "f31", "t0", "memory");
#undef F2
}

/* Counts and nothing else: the engine proves it FP-free (no call: a call
 * through the PLT is an indirect jump, where the riscv64 proof gives up),
 * so the site needs no FP save. */
static void count_handler(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	((struct hstate *)data)->calls++;
}

/* H_READ, H_SET, H_SKIP. No FP code of its own, but its calls into the
 * library go through the PLT: not proven, the FP state is saved unless
 * NP_PROBE_NO_FPU promises it need not be. */
static void handler(struct np_ctx *ctx, void *data)
{
	struct hstate *h = data;

	h->calls++;
	h->pc = np_ctx_pc(ctx);
	h->sp = np_ctx_sp(ctx);
	if (h->mode == H_READ) {
		for (int i = 0; i < 32; i++)
			h->reg[i] = np_ctx_reg(ctx, np_reg_lookup(xname[i]));
	} else if (h->mode == H_SET) {
		errno = 0;
		h->set_rc = np_ctx_set_reg(ctx, np_reg_lookup("a0"), 7);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("s1"), 42);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("a7"), 0x1717);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("s11"), 0x1234567890abcdefull);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("t6"), 0x3131);
		h->set_sp_rc = np_ctx_set_reg(ctx, np_reg_lookup("sp"), 0);
		h->set_sp_errno = errno;
		errno = 0;
		h->set_zero_rc = np_ctx_set_reg(ctx, np_reg_lookup("zero"), 5);
		h->set_zero_errno = errno;
	} else if (h->mode == H_SKIP) {
		/* every site skipped is an instruction without effect */
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

static np_handler_fn handler_for(enum mode m)
{
	if (m == H_COUNT)
		return count_handler;
	return m == H_CLOBBER || m == H_SKIP_CLOBBER ? clobber_handler : handler;
}

struct run {
	enum site site;
	enum np_strategy strategy;
	uint64_t fcsr;
	unsigned probe_flags;
	bool ret; /* a return probe at the entry: the handler runs at the return */
};

static uint64_t reg_gp(void)
{
	uint64_t v;
	__asm__("mv %0, gp" : "=r"(v));
	return v;
}

static uint64_t reg_tp(void)
{
	uint64_t v;
	__asm__("mv %0, tp" : "=r"(v));
	return v;
}

static int dump_ok(const struct regs_out *o, const struct regs_out *want)
{
	int ok = 1;

	for (int i = 0; i < 32; i++) {
		if (o->gpr[i] != want->gpr[i]) {
			fprintf(stderr, "#   x%d (%s) = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", i,
				xname[i], o->gpr[i], want->gpr[i]);
			ok = 0;
		}
	}
	if (o->fcsr != want->fcsr) {
		fprintf(stderr, "#   fcsr = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", o->fcsr, want->fcsr);
		ok = 0;
	}
	for (int n = 0; n < 32; n++) {
		if (o->fpr[n] != want->fpr[n]) {
			fprintf(stderr, "#   f%d = 0x%" PRIx64 ", want 0x%" PRIx64 "\n", n, o->fpr[n],
				want->fpr[n]);
			ok = 0;
		}
	}
	return ok;
}

static regs_fn *fn_for(enum site s)
{
	return s == SITE_ENTRY ? regs_call : regs_run;
}

/* What the unprobed function dumped, checked against what it loaded. */
static void check_baseline(const struct run *r, const struct regs_out *base)
{
	struct regs_out want;

	memset(&want, 0, sizeof want);
	want.gpr[1] = r->site == SITE_ENTRY ? (uint64_t)(uintptr_t)regs_call_ret : pattern(1);
	want.gpr[2] = base->gpr[2];
	want.gpr[3] = reg_gp();
	want.gpr[4] = reg_tp();
	for (int i = 5; i < 32; i++)
		want.gpr[i] = pattern(i);
	want.fcsr = r->fcsr;
	memcpy(want.fpr, fpr_in, sizeof want.fpr);
	if (!dump_ok(base, &want)) {
		fprintf(stderr, "# ^ unprobed, site %s\n", site_name[r->site]);
		CHECK(0);
	}
}

/* Run the function unprobed, then probed at one site from the same frame
 * (the same sp); the dumps must be equal but for what the handler set. */
static void run_one(const struct run *r, struct hstate *h, struct regs_out *base)
{
	void *site = regs_sites[r->site];
	struct np_probe_opts o = e2e_opts(handler_for(h->mode), h, r->strategy);
	struct regs_out out;

	memset(base, 0, sizeof *base);
	fn_for(r->site)(base, r->fcsr, fpr_in);
	check_baseline(r, base);
	o.flags = r->probe_flags;
	if (r->ret) {
		o.on_return = o.on_entry;
		o.on_entry = NULL;
	}
	h->calls = 0;
	h->pc = h->sp = 0;
	memset(&out, 0, sizeof out);
	struct np_probe *p = np_probe_attach(site, &o);
	if (!p) {
		fprintf(stderr, "# attach at site %s failed: %s (%s)\n", site_name[r->site],
			strerror(errno), e2e_log_state.last);
		CHECK(p != NULL);
		return;
	}
	fn_for(r->site)(&out, r->fcsr, fpr_in);
	CHECK_EQ(h->calls, 1);
	if (h->mode == H_SET) {
		base->gpr[10] = 7;
		base->gpr[9] = 42;
		base->gpr[17] = 0x1717;
		base->gpr[27] = 0x1234567890abcdefull;
		base->gpr[31] = 0x3131;
	}
	if (!dump_ok(&out, base)) {
		fprintf(stderr, "# ^ site %s, %s (chosen %s), mode %d, flags %u, fcsr 0x%" PRIx64 "\n",
			site_name[r->site], np_strategy_name(r->strategy),
			np_strategy_name(np_probe_strategy(p)), (int)h->mode, r->probe_flags, r->fcsr);
		CHECK(0);
	}
	if (h->mode != H_COUNT && !r->ret) { /* the counting handler records nothing */
		CHECK_EQ(h->pc, (uint64_t)(uintptr_t)site);
		CHECK_EQ(h->sp, out.gpr[2] + (uint64_t)site_sp_delta[r->site]);
	}
	CHECK_EQ(np_probe_hits(p), 1);
	CHECK_EQ(e2e_detach_free(p), 0);
}

static void setup(void)
{
	for (int n = 0; n < 32; n++)
		fpr_in[n] = 0x3ff0000000000123ull ^ ((uint64_t)(n + 1) * 0x0101010101010101ull);
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	e2e_log_capture();
}

static const enum np_strategy strat[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
/* frm << 5 | fflags: round up with every flag, nearest-even with none,
 * toward zero with NX|OF, down with UF|DZ|NV. Not max-magnitude (4): the
 * handler runs in the program's FP environment, and glibc's printf of a
 * double aborts under that mode (C has no name for it). */
static const uint64_t usual_fcsr[] = {0x7f, 0, 0x25, 0x5a};

/* The sites x {AUTO, TRAP} x fcsr values, with one handler mode. */
static void run_matrix(const enum site *sites, int nsites, enum mode mode, unsigned flags)
{
	struct hstate h = {.mode = mode};
	struct regs_out base;

	setup();
	for (int s = 0; s < nsites; s++)
		for (int k = 0; k < 2; k++)
			for (int f = 0; f < 4; f++) {
				struct run r = {sites[s], strat[k], usual_fcsr[f], flags, false};
				run_one(&r, &h, &base);
			}
}

static const enum site mid[] = {SITE_A, SITE_B, SITE_C, SITE_D};
/* sites a handler may skip: instructions without effect */
static const enum site skippable[] = {SITE_A, SITE_B, SITE_D, SITE_ENTRY};
static const enum site entry[] = {SITE_ENTRY};

TEST(unprobed_dump_matches_what_was_loaded)
{
	static const enum site fns[] = {SITE_A, SITE_ENTRY}; /* regs_run, regs_call */
	struct regs_out base;

	setup();
	for (int s = 0; s < 2; s++)
		for (int f = 0; f < 4; f++) {
			struct run r = {fns[s], NP_STRATEGY_AUTO, usual_fcsr[f], 0, false};
			memset(&base, 0, sizeof base);
			fn_for(r.site)(&base, r.fcsr, fpr_in);
			check_baseline(&r, &base);
		}
}

/* The trampoline cases below are the JUMP path only where AUTO chose it:
 * say so if the plan changes. */
TEST(auto_places_a_jump_at_every_site)
{
	struct hstate h = {.mode = H_COUNT};

	setup();
	for (int s = SITE_A; s <= SITE_ENTRY; s++) {
		struct np_probe_opts o = e2e_opts(count_handler, &h, NP_STRATEGY_AUTO);
		struct np_probe *p = np_probe_attach(regs_sites[s], &o);
		CHECK(p != NULL);
		if (!p)
			continue;
		if (np_probe_strategy(p) != NP_STRATEGY_JUMP)
			fprintf(stderr, "# site %s: %s\n", site_name[s],
				np_strategy_name(np_probe_strategy(p)));
		CHECK_EQ(np_probe_strategy(p), NP_STRATEGY_JUMP);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

TEST(mid_function_everything_preserved_with_counting_handler)
{
	run_matrix(mid, 4, H_COUNT, 0);
	run_matrix(mid, 4, H_COUNT, NP_PROBE_NO_FPU);
}

TEST(mid_function_everything_preserved_with_clobbering_handler)
{
	run_matrix(mid, 4, H_CLOBBER, 0);
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

/* Every register reads as the program has it: x0 as 0, sp as it is at
 * the site (before site c's own change), gp and tp as the caller's. */
static void read_matrix(const enum site *sites, int nsites, unsigned flags)
{
	struct hstate h = {.mode = H_READ};
	struct regs_out base;

	for (int s = 0; s < nsites; s++)
		for (int k = 0; k < 2; k++) {
			struct run r = {sites[s], strat[k], 0x25, flags, false};
			memset(h.reg, 0xee, sizeof h.reg);
			run_one(&r, &h, &base); /* checks pc and sp too */
			for (int i = 0; i < 32; i++) {
				uint64_t w = base.gpr[i];
				if (i == 2)
					w = base.gpr[2] + (uint64_t)site_sp_delta[r.site];
				if (h.reg[i] != w)
					fprintf(stderr, "# site %s %s: %s read 0x%" PRIx64 "\n",
						site_name[r.site], np_strategy_name(r.strategy),
						xname[i], h.reg[i]);
				CHECK_EQ(h.reg[i], w);
			}
		}
}

TEST(handler_reads_every_register_and_sees_pc_and_sp_of_the_site)
{
	setup();
	for (int i = 0; i < 32; i++) {
		CHECK(np_reg_lookup(xname[i]) == i);
		CHECK_STR(np_reg_name(np_reg_lookup(xname[i])), xname[i]);
	}
	CHECK_EQ(np_reg_lookup("no-such-register"), (uint64_t)-1);
	read_matrix(mid, 4, 0);
	read_matrix(entry, 1, 0);
	read_matrix(mid, 4, NP_PROBE_NO_FPU);
	read_matrix(entry, 1, NP_PROBE_NO_FPU);
}

/* a0, s1, a7, s11 and t6 set by the handler reach the program; sp and the
 * zero register are refused (EINVAL) and stay as they were. */
static void set_matrix(const enum site *sites, int nsites, unsigned flags)
{
	struct hstate h = {.mode = H_SET};
	struct regs_out base;

	for (int s = 0; s < nsites; s++)
		for (int k = 0; k < 2; k++) {
			struct run r = {sites[s], strat[k], 0x5a, flags, false};
			run_one(&r, &h, &base); /* base gets the values set */
			CHECK_EQ(h.set_rc, 0);
			CHECK_EQ(h.set_sp_rc, (uint64_t)-1);
			CHECK_EQ(h.set_sp_errno, EINVAL);
			CHECK_EQ(h.set_zero_rc, (uint64_t)-1);
			CHECK_EQ(h.set_zero_errno, EINVAL);
		}
}

TEST(registers_set_by_the_handler_are_seen_by_the_program)
{
	setup();
	set_matrix(mid, 4, 0);
	set_matrix(entry, 1, 0);
	set_matrix(mid, 4, NP_PROBE_NO_FPU);
	set_matrix(entry, 1, NP_PROBE_NO_FPU);
}

/* A handler that moves pc goes through the redirect routine (every
 * register from ctx, pc and sp included), with the FP state saved (the
 * handler is not proven FP-free, or clobbers it) and without
 * (NP_PROBE_NO_FPU). */
TEST(a_handler_moving_pc_past_the_site_leaves_every_register_as_it_was)
{
	run_matrix(skippable, 4, H_SKIP, 0);
	run_matrix(skippable, 4, H_SKIP, NP_PROBE_NO_FPU);
	run_matrix(skippable, 4, H_SKIP_CLOBBER, 0);
}

/* The return trampoline, with and without the FP state: every register
 * as it was, as the return left it (more than the convention promises). */
TEST(return_probe_everything_preserved)
{
	static const enum mode modes[] = {H_COUNT, H_CLOBBER};
	struct regs_out base;

	setup();
	for (int m = 0; m < 2; m++)
		for (int f = 0; f < 4; f++) {
			struct hstate h = {.mode = modes[m]};
			struct run r = {SITE_ENTRY, NP_STRATEGY_AUTO, usual_fcsr[f], 0, true};
			run_one(&r, &h, &base);
			r.probe_flags = NP_PROBE_NO_FPU;
			if (modes[m] == H_COUNT)
				run_one(&r, &h, &base);
		}
}

/* NP_PROBE_NO_FPU is the handler's promise: the trampoline then saves no
 * FP state at all (np_rv_site_rest_nofp, np_rv_redirect_nofp,
 * np_rv_ret_tramp_nofp). A handler that breaks it shows that the lean
 * code is the one that ran, and that it still keeps every x register.
 * (A trap restores everything anyway: JUMP only.) */
TEST(no_fpu_trampolines_save_no_fp_state)
{
	static const struct {
		enum site site;
		enum mode mode;
		bool ret;
	} cases[] = {
		{SITE_A, H_CLOBBER, false},	  {SITE_D, H_CLOBBER, false},
		{SITE_ENTRY, H_CLOBBER, false},	  {SITE_A, H_SKIP_CLOBBER, false},
		{SITE_ENTRY, H_CLOBBER, true},
	};

	setup();
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct hstate h = {.mode = cases[i].mode};
		struct np_probe_opts o = e2e_opts(clobber_handler, &h, NP_STRATEGY_JUMP);
		struct regs_out base, out;
		regs_fn *fn = fn_for(cases[i].site);

		o.flags = NP_PROBE_NO_FPU;
		if (cases[i].ret) {
			o.on_return = o.on_entry;
			o.on_entry = NULL;
		}
		fn(&base, 0x25, fpr_in);
		struct np_probe *p = np_probe_attach(regs_sites[cases[i].site], &o);
		CHECK(p != NULL);
		if (!p)
			continue;
		fn(&out, 0x25, fpr_in);
		CHECK_EQ(h.calls, 1);
		CHECK(out.fpr[31] != fpr_in[31]); /* ft11: the handler's */
		CHECK_EQ(out.fcsr, FCSR_CLOBBER);
		for (int x = 0; x < 32; x++) {
			if (out.gpr[x] != base.gpr[x])
				fprintf(stderr, "# case %u: %s = 0x%" PRIx64 ", want 0x%" PRIx64 "\n",
					i, xname[x], out.gpr[x], base.gpr[x]);
			CHECK_EQ(out.gpr[x], base.gpr[x]);
		}
		CHECK_EQ(e2e_detach_free(p), 0);
	}
}

TEST_MAIN()

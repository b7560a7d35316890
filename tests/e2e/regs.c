/* SPDX-License-Identifier: MIT */
/*
 * Register, flags, vector and red-zone preservation across a probe hit
 * (regs_x86_64.S loads known values, passes a probe site, dumps them), with
 * handlers that count, that clobber everything a C function may clobber,
 * that read the registers, and that change one on purpose.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"
#include "regs.h"
#include "test.h"

struct regs_out {
	uint64_t gpr[15]; /* rax rbx rcx rdx rsi rdi rbp r8..r15 */
	uint64_t flags;
	uint64_t rsp; /* at the site (sites a and b; site c is 8 lower) */
	uint64_t redzone[16];
	uint8_t vec[16][32];
};
_Static_assert(offsetof(struct regs_out, flags) == OUT_FLAGS, "layout");
_Static_assert(offsetof(struct regs_out, rsp) == OUT_RSP, "layout");
_Static_assert(offsetof(struct regs_out, redzone) == OUT_REDZONE, "layout");
_Static_assert(offsetof(struct regs_out, vec) == OUT_VEC, "layout");
_Static_assert(sizeof(struct regs_out) == OUT_SIZE, "layout");

typedef void regs_run_fn(struct regs_out *out, uint64_t rflags, const void *vec);
extern regs_run_fn regs_run_sse, regs_run_avx;
extern void *regs_sites[6];

static const uint64_t pattern[15] = {
	PAT_RAX, PAT_RBX, PAT_RCX, PAT_RDX, PAT_RSI, PAT_RDI, PAT_RBP, PAT_R8,
	PAT_R9, PAT_R10, PAT_R11, PAT_R12, PAT_R13, PAT_R14, PAT_R15,
};
static const char *const gpr_name[15] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
	"r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

#define FL_CF 0x1
#define FL_PF 0x4
#define FL_AF 0x10
#define FL_ZF 0x40
#define FL_SF 0x80
#define FL_DF 0x400
#define FL_OF 0x800
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)
#define FL_CHECKED (FL_ARITH | FL_DF)

enum variant { SSE, AVX };
static const char *const site_name[3] = {"a (5-byte nop)", "b (1-byte nop)", "c (rsp-8)"};

struct hstate {
	enum { H_COUNT, H_CLOBBER, H_READ, H_SET, H_SKIP, H_SKIP_CLOBBER } mode;
	unsigned calls;
	uint64_t pc, sp;
	uint64_t reg[15];
	uint64_t flags_in_handler;
	int set_rc, set_errno, set_sp_rc, set_sp_errno;
};

static uint8_t vec_in[16][32];
static FILE *devnull;
static volatile char big[1 << 16];

static void clobber_everything(void)
{
	volatile double d = 1.0;

	memset((void *)big, 0x5c, sizeof big);
	for (int i = 0; i < 100; i++)
		d = d * 1.000001 + 0.5;
	fprintf(devnull, "%f %d %s %p\n", (double)d, 42, "clobber", (void *)&d);
	fflush(devnull);
	__asm__ volatile("pxor %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\t"
			 "pxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
			 "pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
			 "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
			 "pcmpeqd %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\t"
			 "pxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
			 "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\t"
			 "pxor %%xmm14, %%xmm14\n\tpcmpeqd %%xmm15, %%xmm15"
			 ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
			   "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
			   "xmm13", "xmm14", "xmm15");
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroall" ::: "xmm0", "xmm1", "xmm2", "xmm3",
				 "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
				 "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
	__asm__ volatile("fldpi\n\tfldpi\n\tfaddp\n\tfstp %%st(0)" ::: "st");
}

static void handler(struct np_ctx *ctx, void *data)
{
	struct hstate *h = data;
	uint64_t fl;

	__asm__ volatile("pushfq\n\tpopq %0" : "=r"(fl));
	h->flags_in_handler = fl;
	h->calls++;
	h->pc = np_ctx_pc(ctx);
	h->sp = np_ctx_sp(ctx);
	switch (h->mode) {
	case H_COUNT:
		break;
	case H_CLOBBER:
		clobber_everything();
		break;
	case H_READ:
		for (int i = 0; i < 15; i++)
			h->reg[i] = np_ctx_reg(ctx, np_reg_lookup(gpr_name[i]));
		break;
	case H_SKIP_CLOBBER:
		clobber_everything();
		/* fall through */
	case H_SKIP:
		/* site a is a 5-byte nop: resuming after it changes nothing */
		h->set_rc = np_ctx_set_reg(ctx, np_reg_lookup("rip"), np_ctx_pc(ctx) + 5);
		break;
	case H_SET:
		errno = 0;
		h->set_rc = np_ctx_set_reg(ctx, np_reg_lookup("rbx"), 0x1234567890abcdefull);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("r12"), 42);
		h->set_rc |= np_ctx_set_reg(ctx, np_reg_lookup("rdi"), 7);
		h->set_errno = errno;
		errno = 0;
		h->set_sp_rc = np_ctx_set_reg(ctx, np_reg_lookup("rsp"), 0);
		h->set_sp_errno = errno;
		break;
	}
}

struct run {
	enum variant v;
	int site; /* 0..2 */
	enum np_strategy strategy;
	uint64_t flags;
	unsigned probe_flags;
};

static int dump_ok(const struct regs_out *o, const struct run *r, const uint64_t *want)
{
	int ok = 1;

	for (int i = 0; i < 15; i++) {
		if (o->gpr[i] != want[i]) {
			fprintf(stderr, "#   %s = 0x%" PRIx64 ", want 0x%" PRIx64 "\n",
				gpr_name[i], o->gpr[i], want[i]);
			ok = 0;
		}
	}
	if ((o->flags & FL_CHECKED) != (r->flags & FL_CHECKED)) {
		fprintf(stderr, "#   rflags = 0x%" PRIx64 ", want 0x%" PRIx64 " under mask\n",
			o->flags, r->flags);
		ok = 0;
	}
	for (int k = 1; k <= 16; k++) {
		if (o->redzone[k - 1] != REDZONE_BASE + (uint64_t)k - 1) {
			fprintf(stderr, "#   red zone slot -%d changed\n", 8 * k);
			ok = 0;
		}
	}
	size_t width = r->v == AVX ? 32 : 16;
	for (int n = 0; n < 16; n++) {
		if (memcmp(o->vec[n], vec_in[n], 16) != 0) {
			fprintf(stderr, "#   xmm%d changed\n", n);
			ok = 0;
		} else if (memcmp(o->vec[n] + 16, vec_in[n] + 16, width - 16) != 0) {
			fprintf(stderr, "#   upper half of ymm%d changed\n", n);
			ok = 0;
		}
	}
	return ok;
}

/* Probe one site, run the function once, check the dump against want (the
 * patterns unless the handler changes registers). */
static void run_one(const struct run *r, struct hstate *h, const uint64_t *want)
{
	void *site = regs_sites[r->v * 3 + r->site];
	regs_run_fn *fn = r->v == AVX ? regs_run_avx : regs_run_sse;
	struct np_probe_opts o = e2e_opts(handler, h, r->strategy);
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
	fn(&out, r->flags, vec_in);
	CHECK_EQ(h->calls, 1);
	if (!dump_ok(&out, r, want)) {
		fprintf(stderr, "# ^ %s site %s, %s (chosen %s), rflags 0x%" PRIx64 "\n",
			r->v == AVX ? "avx" : "sse", site_name[r->site],
			np_strategy_name(r->strategy), np_strategy_name(np_probe_strategy(p)),
			r->flags);
		CHECK(0);
	}
	CHECK_EQ(h->pc, (uint64_t)(uintptr_t)site);
	CHECK_EQ(h->sp, out.rsp - (r->site == 2 ? 8 : 0));
	CHECK_EQ(h->flags_in_handler & FL_DF, 0); /* the ABI the handler expects */
	CHECK_EQ(np_probe_hits(p), 1);
	CHECK_EQ(e2e_detach_free(p), 0);
}

static void setup(void)
{
	for (int n = 0; n < 16; n++)
		for (int j = 0; j < 32; j++)
			vec_in[n][j] = (uint8_t)(0x11 * n + 7 * j + 1);
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	e2e_log_capture();
}

/* Every site x {AUTO, TRAP} x some rflags values, with one handler mode. */
static void run_matrix(enum variant v, int mode, unsigned probe_flags, const uint64_t *flag_set,
		       int nflags)
{
	static const enum np_strategy strat[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	struct hstate h = {.mode = mode};

	setup();
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 2; k++)
			for (int f = 0; f < nflags; f++) {
				struct run r = {v, s, strat[k], flag_set[f] | 0x2, probe_flags};
				run_one(&r, &h, pattern);
			}
}

static const uint64_t usual_flags[] = {FL_ARITH, 0, FL_CF | FL_ZF, FL_SF | FL_OF | FL_PF};

TEST(unprobed_dump_matches_what_was_loaded)
{
	struct regs_out out;
	struct run r = {SSE, 0, NP_STRATEGY_AUTO, FL_ARITH | 0x2, 0};

	setup();
	regs_run_sse(&out, r.flags, vec_in);
	CHECK(dump_ok(&out, &r, pattern));
	if (__builtin_cpu_supports("avx")) {
		r.v = AVX;
		regs_run_avx(&out, r.flags, vec_in);
		CHECK(dump_ok(&out, &r, pattern));
	}
}

TEST(gprs_flags_xmm_redzone_preserved_with_counting_handler)
{
	run_matrix(SSE, H_COUNT, 0, usual_flags, 4);
}

TEST(gprs_flags_xmm_redzone_preserved_with_no_fpu_flag)
{
	run_matrix(SSE, H_COUNT, NP_PROBE_NO_FPU, usual_flags, 4);
}

TEST(gprs_flags_xmm_redzone_preserved_with_clobbering_handler)
{
	run_matrix(SSE, H_CLOBBER, 0, usual_flags, 2);
}

TEST(ymm_state_preserved_with_clobbering_handler)
{
	if (!__builtin_cpu_supports("avx")) {
		printf("# skip: no AVX\n");
		return;
	}
	run_matrix(AVX, H_COUNT, 0, usual_flags, 2);
	run_matrix(AVX, H_CLOBBER, 0, usual_flags, 2);
}

TEST(handler_reads_every_gpr_and_sees_pc_and_sp_of_the_site)
{
	static const enum np_strategy strat[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	struct hstate h = {.mode = H_READ};

	setup();
	for (int i = 0; i < 15; i++) {
		CHECK(np_reg_lookup(gpr_name[i]) >= 0);
		CHECK_STR(np_reg_name(np_reg_lookup(gpr_name[i])), gpr_name[i]);
	}
	CHECK(np_reg_lookup("rsp") >= 0);
	CHECK_EQ(np_reg_lookup("no-such-register"), (uint64_t)-1);
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 2; k++) {
			struct run r = {SSE, s, strat[k], FL_ARITH | 0x2, 0};

			memset(h.reg, 0, sizeof h.reg);
			run_one(&r, &h, pattern); /* checks pc and sp too */
			for (int i = 0; i < 15; i++)
				CHECK_EQ(h.reg[i], pattern[i]);
		}
}

TEST(registers_set_by_the_handler_are_seen_by_the_program)
{
	static const enum np_strategy strat[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	struct hstate h = {.mode = H_SET};
	uint64_t want[15];

	memcpy(want, pattern, sizeof want);
	want[1] = 0x1234567890abcdefull; /* rbx */
	want[11] = 42;                   /* r12 */
	want[5] = 7;                     /* rdi */
	setup();
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 2; k++) {
			struct run r = {SSE, s, strat[k], FL_ARITH | 0x2, 0};

			run_one(&r, &h, want);
			CHECK_EQ(h.set_rc, 0);
			CHECK_EQ(h.set_sp_rc, (uint64_t)-1); /* rsp is read only */
			CHECK_EQ(h.set_sp_errno, EINVAL);
		}
}

/* A handler that moves pc mid-function sends the thread through the
 * redirect routine (JUMP), which loads every register from ctx and must
 * leave the flags and the red zone below the site's rsp as they were. */
TEST(a_handler_moving_pc_past_the_site_leaves_every_register_as_it_was)
{
	static const enum np_strategy strat[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	static const uint64_t flag_set[] = {FL_ARITH, 0, FL_CF | FL_ZF, FL_DF | FL_SF | FL_OF};

	setup();
	for (int mode = H_SKIP; mode <= H_SKIP_CLOBBER; mode++)
		for (int k = 0; k < 2; k++)
			for (int f = 0; f < 4; f++) {
				struct hstate h = {.mode = mode};
				struct run r = {SSE, 0, strat[k], flag_set[f] | 0x2, 0};

				run_one(&r, &h, pattern);
				CHECK_EQ(h.set_rc, 0);
			}
}

/* std ... cld around a probe site is legal code: the program must see DF
 * again afterwards, and the handler (C code: memset, printf) must run with
 * DF clear as the ABI promises it. */
TEST(direction_flag_set_at_site_is_preserved_and_clear_in_handler)
{
	static const uint64_t df_flags[] = {FL_DF, FL_DF | FL_ARITH};

	run_matrix(SSE, H_COUNT, 0, df_flags, 2);
	run_matrix(SSE, H_CLOBBER, 0, df_flags, 2);
}

/* A probe whose handler changes the vector state joins a site whose
 * trampoline does not save it (its one probe promised NP_PROBE_NO_FPU),
 * while another thread keeps hitting the site. Once the new handler list
 * is published, the trampoline in place runs it (its slow path) until the
 * rebuilt one, which saves the state, is in: the engine rebuilds the
 * trampoline to save it before it publishes the list. */
struct keep_hitting {
	volatile int stop;
	unsigned long calls, wrong;
	struct run r;
};

static void *hit_and_check(void *arg)
{
	struct keep_hitting *k = arg;
	struct regs_out out;

	while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
		regs_run_sse(&out, k->r.flags, vec_in);
		k->wrong += !dump_ok(&out, &k->r, pattern);
		k->calls++;
	}
	return NULL;
}

TEST(a_vector_handler_joining_a_lean_site_never_runs_without_the_save)
{
	struct hstate lean_h = {.mode = H_COUNT}, clobber_h = {.mode = H_CLOBBER};
	struct np_probe_opts lean = e2e_opts(handler, &lean_h, NP_STRATEGY_JUMP);
	struct np_probe_opts clobber = e2e_opts(handler, &clobber_h, NP_STRATEGY_AUTO);
	struct keep_hitting k = {.r = {SSE, 0, NP_STRATEGY_JUMP, FL_ARITH | 0x2, 0}};
	unsigned long cycles = 0, before;
	pthread_t t;

	setup();
	lean.flags = NP_PROBE_NO_FPU;
	struct np_probe *p = np_probe_attach(regs_sites[0], &lean);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(pthread_create(&t, NULL, hit_and_check, &k), 0);
	for (; cycles < 200; cycles++) {
		before = __atomic_load_n(&k.calls, __ATOMIC_RELAXED);
		struct np_probe *q = np_probe_attach(regs_sites[0], &clobber);
		CHECK(q != NULL);
		while (__atomic_load_n(&k.calls, __ATOMIC_RELAXED) < before + 20)
			sched_yield();
		if (q)
			CHECK_EQ(e2e_detach_free(q), 0);
	}
	__atomic_store_n(&k.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	printf("# %lu cycles, %lu checked calls, %lu wrong\n", cycles, k.calls, k.wrong);
	CHECK_EQ(k.wrong, 0);
	CHECK(clobber_h.calls > 0);
	CHECK_EQ(e2e_detach_free(p), 0);
}

TEST_MAIN()

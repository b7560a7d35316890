/* SPDX-License-Identifier: MIT */
/*
 * Live patching under load: 2 x nproc threads (at least 2) call small
 * probed functions in a loop and check every result, while this thread
 * attaches and detaches probes on them 10,000 times (NP_TORTURE_CYCLES to
 * change), stopping early after 30 seconds (NP_TORTURE_SECONDS) so the test
 * stays bounded. Every handler counts into its own counter; once a probe is
 * detached its count must equal np_probe_hits exactly, and the function
 * bytes must be the originals again. A wrong result or a crash is
 * reported with the probes of its cycle; NP_TORTURE_SITES (a mask of
 * sites[]) narrows the storm to a few sites.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

extern uint8_t t_short[], t_cmp[], t_loopy[], t_ret1[], t_ret1_caller[], t_rip[];
typedef uint64_t fn2(uint64_t, uint64_t);
#define CALL2(f, a, b) (((fn2 *)(void *)(f))((a), (b)))

static E2E_NOIPA uint64_t t_mix(uint64_t x)
{
	return (x * 2654435761u) ^ (x >> 3);
}
static uint64_t (*volatile t_mix_p)(uint64_t) = t_mix;

struct site {
	uint8_t *fn;
	unsigned off;
};

/* Entries and mid-function boundaries (layouts in torture_<isa>.S). */
static struct site sites[] = {
#if defined(__x86_64__)
	{t_short, 0}, {t_short, 1}, {t_short, 4}, {t_short, 8},
	{t_cmp, 0}, {t_cmp, 2}, {t_cmp, 5},
	{t_loopy, 0}, {t_loopy, 2}, {t_loopy, 8},
	{t_ret1, 0},
	{t_ret1_caller, 0}, {t_ret1_caller, 3},
	{t_rip, 0}, {t_rip, 7},
#elif defined(__aarch64__)
	{t_short, 0}, {t_short, 4}, {t_short, 8}, {t_short, 12},
	{t_cmp, 0}, {t_cmp, 4}, {t_cmp, 8},
	{t_loopy, 0}, {t_loopy, 4}, {t_loopy, 12},
	{t_ret1, 0},
	{t_ret1_caller, 0}, {t_ret1_caller, 4},
	{t_rip, 0}, {t_rip, 4},
#elif defined(__riscv)
	{t_short, 0}, {t_short, 2}, {t_short, 4}, {t_short, 6},
	{t_cmp, 0}, {t_cmp, 4},
	{t_loopy, 0}, {t_loopy, 2}, {t_loopy, 6},
	{t_ret1, 0},
	{t_ret1_caller, 0}, {t_ret1_caller, 4},
	{t_rip, 0}, {t_rip, 4},
#endif
	{NULL, 0}, /* t_mix entry, filled in at run time */
};
#define NSITES (sizeof sites / sizeof sites[0])
#if defined(__x86_64__)
#define FUNC_BYTES 16 /* every asm function, with its padding */
#else
#define FUNC_BYTES 32
#endif

static uint8_t pristine[NSITES][FUNC_BYTES];
static volatile int stop;
static uint64_t wrong_results, calls;
/* which function returned a wrong result, for the report */
static const char *const fn_names[] = {"t_short", "t_cmp", "t_loopy", "t_ret1_caller", "t_rip",
				       "t_mix"};
static uint64_t wrong_by[6];

/* What a wrong result was and what the main thread was doing then: the
 * cycle (its sites and strategies are kept in 'cycles_seen'), and the
 * argument as a copy in memory kept it, against a register that may be
 * what went wrong. */
struct wrong {
	int which;
	unsigned long cycle;
	uint64_t arg, saved_arg, got, want;
};
#define NWRONG 16
static struct wrong wrongs[NWRONG];
static unsigned nwrong;
static volatile unsigned long cur_cycle;

static uint64_t check(int which, uint64_t got, uint64_t want, uint64_t arg,
		      const volatile uint64_t *saved_arg)
{
	if (got == want)
		return 0;
	__atomic_fetch_add(&wrong_by[which], 1, __ATOMIC_RELAXED);
	unsigned k = __atomic_fetch_add(&nwrong, 1, __ATOMIC_RELAXED);
	if (k < NWRONG)
		wrongs[k] = (struct wrong){which, cur_cycle, arg, *saved_arg, got, want};
	return 1;
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1, n = 0, wrong = 0;
	volatile uint64_t saved;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t y = x >> 40, k = 1 + (x & 7);

		saved = y;
		wrong += check(0, CALL2(t_short, y, 0), y + 1, y, &saved);
		wrong += check(1, CALL2(t_cmp, y, y ^ 1), y < (y ^ 1), y, &saved);
		wrong += check(2, CALL2(t_loopy, y, k), y * k, y, &saved);
		wrong += check(3, CALL2(t_ret1_caller, y, 0), y, y, &saved);
		wrong += check(4, CALL2(t_rip, y, 0), y + 0x1234567, y, &saved);
		wrong += check(5, t_mix_p(y), (y * 2654435761u) ^ (y >> 3), y, &saved);
		n++;
	}
	__atomic_fetch_add(&wrong_results, wrong, __ATOMIC_RELAXED);
	__atomic_fetch_add(&calls, n, __ATOMIC_RELAXED);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What each cycle attached, for the report of a wrong result: the sites
 * (indices into sites[], a bit each) and which of them went in as TRAP. */
struct cycle_seen {
	unsigned long cycle;
	uint32_t sites, trap;
};
#define NSEEN 4096
static struct cycle_seen cycles_seen[NSEEN];

#define BATCH_CYCLE (1ul << 30) /* batch cycles are numbered from here */

static void cycle_phase(unsigned long i, unsigned phase)
{
	__atomic_store_n(&cur_cycle, i << 2 | phase, __ATOMIC_SEQ_CST);
}

static void cycle_note(unsigned long i, const struct site *s, const struct np_probe *p)
{
	struct cycle_seen *c = &cycles_seen[i % NSEEN];

	if (c->cycle != i)
		*c = (struct cycle_seen){i, 0, 0};
	c->sites |= 1u << (s - sites);
	if (p && np_probe_strategy(p) == NP_STRATEGY_TRAP)
		c->trap |= 1u << (s - sites);
}

struct stats {
	unsigned long attaches, eagain, failures, miscounts, corrupted, jump, trap;
	uint64_t hits;
};

static const char *site_name(uint64_t addr, char *buf)
{
	static const struct {
		uint8_t *fn;
		const char *name;
	} names[] = {{t_short, "t_short"}, {t_cmp, "t_cmp"}, {t_loopy, "t_loopy"},
		     {t_ret1, "t_ret1"}, {t_ret1_caller, "t_ret1_caller"}, {t_rip, "t_rip"},
		     {(uint8_t *)(uintptr_t)t_mix, "t_mix"}};
	snprintf(buf, 64, "0x%" PRIx64, addr);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (addr >= (uintptr_t)names[i].fn && addr < (uintptr_t)names[i].fn + FUNC_BYTES)
			snprintf(buf, 64, "%s+%u", names[i].name,
				 (unsigned)(addr - (uintptr_t)names[i].fn));
	return buf;
}

static void print_cycle(unsigned long i)
{
	const struct cycle_seen *c = &cycles_seen[i % NSEEN];
	char b[64];

	fprintf(stderr, " [%s%lu:", i >= BATCH_CYCLE ? "batch " : "",
		i >= BATCH_CYCLE ? i - BATCH_CYCLE : i);
	for (size_t j = 0; c->cycle == i && j < NSITES; j++)
		if (c->sites >> j & 1)
			fprintf(stderr, " %s%s", site_name((uintptr_t)(sites[j].fn + sites[j].off), b),
				c->trap >> j & 1 ? " TRAP" : "");
	fprintf(stderr, "]");
}

/* Each wrong result: the call, its values, the phase of the cycle it came
 * in, that cycle's probes and those of the two before it. */
static void report_wrongs(void)
{
	static const char *const phases[] = {"attaching", "attached", "detaching", "detached"};

	for (unsigned k = 0; k < nwrong && k < NWRONG; k++) {
		const struct wrong *w = &wrongs[k];
		unsigned long i = w->cycle >> 2;

		fprintf(stderr, "# wrong: %s(0x%" PRIx64 ", in memory 0x%" PRIx64 ") = 0x%" PRIx64
			", want 0x%" PRIx64 "; %s, cycles", fn_names[w->which], w->arg, w->saved_arg,
			w->got, w->want, phases[w->cycle & 3]);
		for (unsigned long d = i % BATCH_CYCLE < 2 ? i % BATCH_CYCLE : 2; d + 1 > 0; d--)
			print_cycle(i - d);
		fprintf(stderr, "\n");
	}
}

/* What the code around a crash held: t_short's bytes (its sites are
 * patched in every storm), the mapping the pc lies in and, when that is
 * readable, the bytes around the pc (a jump's upper half, trampoline
 * memory nothing was written to). */
static void crash_context(uint64_t pc)
{
	char line[512], perms[8] = "";
	FILE *f = fopen("/proc/self/maps", "re");
	fprintf(stderr, "# t_short at %p:", (void *)t_short);
	for (unsigned k = 0; k < 12; k++)
		fprintf(stderr, " %02x", t_short[k]);
	fprintf(stderr, "\n");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && pc >= lo + 16 &&
		    pc + 16 <= hi) {
			fprintf(stderr, "# pc in %s", line);
			break;
		}
		perms[0] = 0;
	}
	if (f)
		fclose(f);
	if (perms[0] != 'r')
		return;
	fprintf(stderr, "# at pc-16:");
	for (int k = -16; k < 16; k++)
		fprintf(stderr, " %02x", ((const volatile uint8_t *)(uintptr_t)pc)[k]);
	fprintf(stderr, "\n");
}

/* A worker that crashes says where, and in which cycles: pc, the return
 * address and sp tell a wrong jump. Only to report and die (stdio in a
 * signal handler). */
static void crashed(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;
	uint64_t pc = 0, ra = 0, sp = 0;
	char b[2][64];

#if defined(__riscv)
	pc = uc->uc_mcontext.__gregs[0];
	ra = uc->uc_mcontext.__gregs[1];
	sp = uc->uc_mcontext.__gregs[2];
#elif defined(__aarch64__)
	pc = uc->uc_mcontext.pc;
	ra = uc->uc_mcontext.regs[30];
	sp = uc->uc_mcontext.sp;
#elif defined(__x86_64__)
	pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#endif
	unsigned long i = __atomic_load_n(&cur_cycle, __ATOMIC_RELAXED);
	fprintf(stderr, "# thread %ld: signal %d at pc %s (ra %s, sp 0x%" PRIx64 ", address %p), "
		"phase %lu, cycles", (long)syscall(SYS_gettid), sig, site_name(pc, b[0]),
		site_name(ra, b[1]), sp, si->si_addr, i & 3);
	i >>= 2;
	for (unsigned long d = i % BATCH_CYCLE < 2 ? i % BATCH_CYCLE : 2; d + 1 > 0; d--)
		print_cycle(i - d);
	fprintf(stderr, "\n");
	crash_context(pc);
#if defined(__riscv)
	for (int r = 1; r < 32; r++)
		fprintf(stderr, "x%d=%llx%s", r, (unsigned long long)uc->uc_mcontext.__gregs[r],
			r % 8 ? " " : "\n");
	fprintf(stderr, "\n");
#endif
	_exit(128 + sig);
}

static void report_crashes(void)
{
	struct sigaction sa = {.sa_sigaction = crashed, .sa_flags = SA_SIGINFO};

	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static int bytes_restored(const struct site *s)
{
	return memcmp(pristine[s - sites], s->fn, FUNC_BYTES) == 0;
}

/* Let the workers run until every counter moved, or a short while. Sleep
 * rather than sched_yield(): on a full machine a yield gives away a whole
 * time slice, a short sleep wakes up soon. */
static void wait_for_hits(struct e2e_counter *c, int n)
{
	for (int spin = 0; spin < 500; spin++) {
		int all = 1;

		for (int i = 0; i < n; i++)
			all &= __atomic_load_n(&c[i].hits, __ATOMIC_RELAXED) > 0;
		if (all)
			return;
		nanosleep(&(struct timespec){0, 20000}, NULL);
	}
}

/* The sites the cycles take turns on: every one, or those whose bit is set
 * in NP_TORTURE_SITES (indices into sites[]), to chase one failure. */
static struct site *pick_site(unsigned long k)
{
	static size_t use[NSITES], n;

	if (!n) {
		const char *env = getenv("NP_TORTURE_SITES");
		unsigned long mask = env ? strtoul(env, NULL, 0) : 0;

		for (size_t j = 0; j < NSITES; j++)
			if (!mask || (mask >> j & 1))
				use[n++] = j;
		if (!n)
			use[n++] = 0;
	}
	return &sites[use[k % n]];
}

/* One cycle: attach one or two probes, let them fire, detach, check. */
static void cycle(unsigned long i, struct stats *st)
{
	int n = 1 + (int)(i & 1);
	struct site *s[2] = {pick_site(i * 7), pick_site(i * 7 + 1)};
	enum np_strategy strat = n == 1 && i % 4 == 2 ? NP_STRATEGY_TRAP : NP_STRATEGY_AUTO;
	struct e2e_counter c[2];
	struct np_probe *p[2] = {NULL, NULL};

	memset(c, 0, sizeof c);
	cycle_phase(i, 0);
	for (int k = 0; k < n; k++) {
		struct np_probe_opts o = e2e_opts(e2e_count, &c[k], strat);

		c[k].addr = (uintptr_t)(s[k]->fn + s[k]->off);
		p[k] = np_probe_attach(s[k]->fn + s[k]->off, &o);
		cycle_note(i, s[k], p[k]);
		if (!p[k] && errno == EAGAIN) {
			st->eagain++;
		} else if (!p[k]) {
			if (!st->failures++)
				fprintf(stderr, "# attach %p: %s; log: %s\n", s[k]->fn + s[k]->off,
					strerror(errno), e2e_log_state.last);
		} else {
			st->attaches++;
			if (np_probe_strategy(p[k]) == NP_STRATEGY_JUMP)
				st->jump++;
			else
				st->trap++;
		}
	}
	cycle_phase(i, 1);
	wait_for_hits(c, n);
	cycle_phase(i, 2);
	for (int j = 0; j < n; j++) {
		int k = i & 2 ? n - 1 - j : j;

		if (!p[k])
			continue;
		if (np_probe_detach(p[k]) != 0) {
			if (!st->failures++)
				fprintf(stderr, "# detach %p: %s; log: %s\n", (void *)c[k].addr,
					strerror(errno), e2e_log_state.last);
			np_probe_free(p[k]);
			continue;
		}
		uint64_t hits = np_probe_hits(p[k]);
		if (hits != __atomic_load_n(&c[k].hits, __ATOMIC_RELAXED) || c[k].bad_pc) {
			char b1[64], b2[64];

			if (!st->miscounts++)
				fprintf(stderr, "# %s: np_probe_hits %" PRIu64 ", handler %" PRIu64
					", %" PRIu64 " with wrong pc (last %s)\n", site_name(c[k].addr, b1),
					hits, c[k].hits, c[k].bad_pc, site_name(c[k].last_bad_pc, b2));
		}
		st->hits += hits;
		np_probe_free(p[k]);
	}
	cycle_phase(i, 3);
	for (int k = 0; k < n; k++)
		if (!bytes_restored(s[k]) && !st->corrupted++)
			fprintf(stderr, "# bytes at %p differ after detach\n", (void *)s[k]->fn);
}

/* A batch cycle: a different subset of the sites each time, attached in
 * one np_probe_attach_many (sites inside another's displaced bytes join
 * its region in the middle of the batch), removed in one
 * np_probe_detach_many, in an order of their own. */
static void batch_cycle(unsigned long i, struct stats *st)
{
	struct e2e_counter c[NSITES];
	struct np_probe_opts o[NSITES];
	const struct np_probe_opts *op[NSITES];
	void *addrs[NSITES];
	struct np_probe *p[NSITES], *rev[NSITES];
	struct site *s[NSITES];
	int errs[NSITES], n = 0;
	uint64_t bits = (i + 1) * 0x9e3779b97f4a7c15ull;

	bits ^= bits >> 29;
	for (size_t k = 0; k < NSITES; k++)
		if ((bits >> k) & 1)
			s[n++] = &sites[k];
	memset(c, 0, sizeof c);
	for (int k = 0; k < n; k++) {
		o[k] = e2e_opts(e2e_count, &c[k], NP_STRATEGY_AUTO);
		op[k] = &o[k];
		addrs[k] = s[k]->fn + s[k]->off;
		c[k].addr = (uintptr_t)addrs[k];
	}
	unsigned long id = BATCH_CYCLE + i;
	cycle_phase(id, 0);
	struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(.cnt = (size_t)n, .addrs = addrs,
							  .opts = op, .probes = p, .errs = errs);
	int placed = np_probe_attach_many(&mo);
	CHECK(placed >= 0);
	for (int k = 0; k < n; k++) {
		cycle_note(id, s[k], p[k]);
		if (p[k]) {
			st->attaches++;
			if (np_probe_strategy(p[k]) == NP_STRATEGY_JUMP)
				st->jump++;
			else
				st->trap++;
		} else if (errs[k] == EAGAIN) {
			st->eagain++;
		} else if (!st->failures++) {
			fprintf(stderr, "# batch attach %p: %s; log: %s\n", addrs[k],
				strerror(errs[k]), e2e_log_state.last);
		}
		CHECK_EQ(!p[k], errs[k] != 0);
	}
	cycle_phase(id, 1);
	wait_for_hits(c, n);
	cycle_phase(id, 2);
	for (int k = 0; k < n; k++)
		rev[k] = p[i & 1 ? n - 1 - k : k];
	if (np_probe_detach_many(rev, (size_t)n) != 0 && !st->failures++)
		fprintf(stderr, "# batch %lu detach: %s; log: %s\n", i, strerror(errno),
			e2e_log_state.last);
	for (int k = 0; k < n; k++) {
		if (!p[k])
			continue;
		uint64_t hits = np_probe_hits(p[k]);
		if ((hits != c[k].hits || c[k].bad_pc) && !st->miscounts++)
			fprintf(stderr, "# batch %p: np_probe_hits %" PRIu64 ", handler %" PRIu64 "\n",
				addrs[k], hits, c[k].hits);
		st->hits += hits;
		np_probe_free(p[k]);
	}
	cycle_phase(id, 3);
	for (int k = 0; k < n; k++)
		if (!bytes_restored(s[k]) && !st->corrupted++)
			fprintf(stderr, "# bytes at %p differ after a batch detach\n", (void *)s[k]->fn);
}

TEST(asm_targets_have_the_expected_layout)
{
#if defined(__x86_64__)
	static const uint8_t short_bytes[10] = {0x53, 0x48, 0x89, 0xfb, 0x48,
						0x8d, 0x43, 0x01, 0x5b, 0xc3};

	CHECK(memcmp(t_short, short_bytes, sizeof short_bytes) == 0);
	CHECK_EQ(t_ret1[0], 0xc3);
	CHECK_EQ(t_ret1_caller[3], 0xe8);
#elif defined(__aarch64__)
	static const uint32_t short_words[4] = {
		0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! */
		0x91000400, /* add x0, x0, #1 */
		0xa8c17bfd, /* ldp x29, x30, [sp], #16 */
		0xd65f03c0, /* ret */
	};
	uint32_t w;

	CHECK(memcmp(t_short, short_words, sizeof short_words) == 0);
	memcpy(&w, t_ret1, 4);
	CHECK_EQ(w, 0xd65f03c0);
	memcpy(&w, t_ret1_caller + 4, 4);
	CHECK_EQ(w >> 26, 0x25); /* bl */
#elif defined(__riscv)
	static const uint16_t short_parcels[6] = {0x717d, 0xe406, 0x0505, 0x60a2, 0x6141, 0x8082};
	uint32_t w;

	CHECK(memcmp(t_short, short_parcels, sizeof short_parcels) == 0);
	CHECK_EQ(t_ret1[0] | t_ret1[1] << 8, 0x8082); /* c.jr ra */
	memcpy(&w, t_ret1_caller + 4, 4);
	CHECK_EQ(w & 0xfff, 0x0ef); /* jal ra */
#endif
	CHECK_EQ(CALL2(t_loopy, 3, 5), 15);
	CHECK_EQ(CALL2(t_rip, 1, 0), 0x1234568);
}

/* A jump written over a site whose handler a thread is running: that
 * thread's trampoline context holds the site's address on its stack, like
 * the signal frame of a program's handler that interrupted it there would.
 * Taken for one, it made the patch wait for the handler to end and, on a
 * busy site, give up: AUTO fell back to TRAP after a few hundred ms
 * (e2e-torture's cycles over t_short+1 and +4 took 2.5 s each). */
#if defined(__x86_64__)
#define INNER 4 /* t_short+4: the lea, inside the jump a probe at +1 writes */
#define OUTER 1
#elif defined(__riscv)
#define INNER 2 /* t_short+2: c.sdsp, inside the jal a probe at +0 writes */
#define OUTER 0
#endif
#ifdef INNER
static volatile int in_inner, release_inner;

static void hold_in_handler(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
	__atomic_store_n(&in_inner, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&release_inner, __ATOMIC_SEQ_CST))
		sched_yield();
}

static void *call_short_once(void *arg)
{
	return (void *)(uintptr_t)(CALL2(t_short, (uint64_t)(uintptr_t)arg, 0) ==
				   (uint64_t)(uintptr_t)arg + 1);
}

TEST(a_jump_goes_in_over_a_site_whose_handler_is_running)
{
	struct e2e_counter c = {0};
	struct np_probe_opts hold = e2e_opts(hold_in_handler, NULL, NP_STRATEGY_JUMP);
	struct np_probe_opts count = e2e_opts(e2e_count, &c, NP_STRATEGY_AUTO);
	uint8_t before[FUNC_BYTES];
	memcpy(before, t_short, sizeof before);
	struct np_probe *inner = np_probe_attach(t_short + INNER, &hold);
	pthread_t t;
	void *ok;

	CHECK(inner != NULL);
	CHECK_EQ(pthread_create(&t, NULL, call_short_once, (void *)(uintptr_t)41), 0);
	while (!__atomic_load_n(&in_inner, __ATOMIC_SEQ_CST))
		sched_yield();
	c.addr = (uintptr_t)(t_short + OUTER);
	struct np_probe *outer = np_probe_attach(t_short + OUTER, &count);
	CHECK(outer != NULL);
	CHECK_EQ(np_probe_strategy(outer), NP_STRATEGY_JUMP);
	__atomic_store_n(&release_inner, 1, __ATOMIC_SEQ_CST);
	CHECK_EQ(pthread_join(t, &ok), 0);
	CHECK(ok != NULL); /* t_short(41) == 42 through the old trampoline */
	CHECK_EQ(CALL2(t_short, 7, 0), 8);
	CHECK_EQ(c.hits, 1);
	CHECK_EQ(e2e_detach_free(outer), 0);
	CHECK_EQ(e2e_detach_free(inner), 0);
	CHECK(memcmp(before, t_short, sizeof before) == 0);
}
#endif

TEST(attach_detach_storm_keeps_results_right_and_counts_exact)
{
	const char *env = getenv("NP_TORTURE_CYCLES");
	unsigned long cycles = env ? strtoul(env, NULL, 0) : 10000;
	const char *nw = getenv("NP_TORTURE_WORKERS"); /* default: 2 x cores */
	int nworkers = nw ? atoi(nw) : 2 * e2e_ncpus();
	pthread_t *w;
	struct stats st = {0};
	const char *secs = getenv("NP_TORTURE_SECONDS");
	double start = now(), deadline = start + (secs ? atof(secs) : 30.0);
	unsigned long i;

	if (nworkers < 2)
		nworkers = 2;
	report_crashes();
	sites[NSITES - 1].fn = (uint8_t *)(uintptr_t)t_mix;
	for (size_t k = 0; k < NSITES; k++)
		memcpy(pristine[k], sites[k].fn, FUNC_BYTES);
	e2e_log_capture();
	w = calloc((size_t)nworkers, sizeof *w);
	stop = 0;
	for (int k = 0; k < nworkers; k++)
		CHECK_EQ(pthread_create(&w[k], NULL, worker, (void *)(uintptr_t)(k + 1)), 0);

	/* 'cycles' attach/detach pairs in total; cycles with two probes count two. */
	for (i = 0; st.attaches + st.failures + st.eagain < cycles; i++) {
		if (now() > deadline) {
			printf("# stopping at the time limit after %lu attaches\n", st.attaches);
			break;
		}
		cycle(i, &st);
	}
	stop = 1;
	for (int k = 0; k < nworkers; k++)
		pthread_join(w[k], NULL);
	free(w);

	printf("# %d workers, %lu cycles in %.1fs: %lu attached (%lu JUMP, %lu TRAP), "
	       "%lu EAGAIN, %" PRIu64 " hits, %" PRIu64 " checked calls\n",
	       nworkers, i, now() - start, st.attaches, st.jump, st.trap, st.eagain, st.hits,
	       calls);
	report_wrongs();
	for (int k = 0; k < 6; k++)
		if (wrong_by[k])
			fprintf(stderr, "# %s: %llu wrong results\n", fn_names[k],
				(unsigned long long)wrong_by[k]);
	CHECK_EQ(wrong_results, 0);
	CHECK_EQ(st.failures, 0);
	CHECK_EQ(st.miscounts, 0);
	CHECK_EQ(st.corrupted, 0);
	CHECK(st.attaches >= (st.attaches + st.eagain) / 2); /* EAGAIN stays rare */
	CHECK(st.hits > 0);
	for (size_t k = 0; k < NSITES; k++)
		CHECK(bytes_restored(&sites[k]));
}

TEST(attach_detach_storm_in_batches_keeps_results_right_and_counts_exact)
{
	const char *env = getenv("NP_TORTURE_BATCHES");
	unsigned long cycles = env ? strtoul(env, NULL, 0) : 1000;
	int nworkers = 2 * e2e_ncpus();
	pthread_t w[64];
	struct stats st = {0};
	double start = now(), deadline = start + 30.0;
	unsigned long i;

	nworkers = nworkers < 2 ? 2 : nworkers > 64 ? 64 : nworkers;
	report_crashes(); /* also when this case runs alone */
	sites[NSITES - 1].fn = (uint8_t *)(uintptr_t)t_mix;
	for (size_t k = 0; k < NSITES; k++)
		memcpy(pristine[k], sites[k].fn, FUNC_BYTES);
	e2e_log_capture();
	stop = 0;
	wrong_results = calls = 0;
	nwrong = 0;
	for (int k = 0; k < nworkers; k++)
		CHECK_EQ(pthread_create(&w[k], NULL, worker, (void *)(uintptr_t)(k + 1)), 0);
	for (i = 0; i < cycles && now() < deadline; i++)
		batch_cycle(i, &st);
	stop = 1;
	for (int k = 0; k < nworkers; k++)
		pthread_join(w[k], NULL);
	printf("# %d workers, %lu batches in %.1fs: %lu attached (%lu JUMP, %lu TRAP), "
	       "%lu EAGAIN, %" PRIu64 " hits, %" PRIu64 " checked calls\n",
	       nworkers, i, now() - start, st.attaches, st.jump, st.trap, st.eagain, st.hits,
	       calls);
	report_wrongs();
	CHECK_EQ(wrong_results, 0);
	CHECK_EQ(st.failures, 0);
	CHECK_EQ(st.miscounts, 0);
	CHECK_EQ(st.corrupted, 0);
	CHECK(st.attaches >= (st.attaches + st.eagain) / 2);
	CHECK(st.hits > 0);
	for (size_t k = 0; k < NSITES; k++)
		CHECK(bytes_restored(&sites[k]));
}

TEST_MAIN()

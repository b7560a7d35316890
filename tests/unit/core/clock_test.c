/* SPDX-License-Identifier: MIT */
/*
 * core/clock.c: the line from the counter to CLOCK_MONOTONIC is exact
 * arithmetic at any uptime, each new line starts where the last one was
 * (time never goes back at a recalibration), the steering brings it onto
 * a CLOCK_MONOTONIC that NTP slews; and the process's clock reads the
 * vDSO when asked to, the counter where the kernel vouches for it, the
 * same time either way, never backwards on a thread while it is
 * recalibrated as fast as it can be.
 *
 * The arithmetic is checked with made-up counters; the runtime cases
 * compare with libc's clock_gettime to within 1 ms, which only a wrong
 * unit or a torn line misses (no timing is asserted).
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "core/clock.h"
#include "host/host.h"
#include "core/nolibc.h"
#include "test.h"

static uint64_t libc_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) /* xorshift64: the same cases every run */
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static uint64_t exact_scale(uint64_t d, uint32_t mult, uint32_t shift)
{
	return (uint64_t)(((unsigned __int128)d * mult) >> shift);
}

TEST(scale_is_exact_wherever_the_result_fits)
{
	for (int i = 0; i < 200000; i++) {
		uint32_t shift = (uint32_t)(rnd() % 33), mult = (uint32_t)rnd();
		uint64_t d = rnd() >> (rnd() % 64);
		if ((((unsigned __int128)d * mult) >> shift) >> 64)
			continue; /* past 2^64 ns: 584 years */
		CHECK_EQ(np_clock_scale(d, mult, shift), exact_scale(d, mult, shift));
	}
	/* the extremes: the whole counter range at the slowest and fastest
	 * rates a line may have */
	CHECK_EQ(np_clock_scale(~0ull, 0x7fffffffu, 32), exact_scale(~0ull, 0x7fffffffu, 32));
	CHECK_EQ(np_clock_scale(~0ull, 1, 0), ~0ull);
	CHECK_EQ(np_clock_scale(0, 0xffffffffu, 0), 0);
}

TEST(rate_takes_the_largest_shift_below_2_31)
{
	uint32_t mult, shift;
	/* 2445.406 MHz (this project's guests): 0.409 ns per cycle */
	CHECK_EQ(np_clock_rate(2445406000ull, 1000000000ull, &mult, &shift), 0);
	CHECK_EQ(shift, 32);
	CHECK_EQ(mult, (uint32_t)((1000000000ull << 32) / 2445406000ull));
	/* 1 GHz: 1 ns per cycle, 2^30 at shift 30 */
	CHECK_EQ(np_clock_rate(1000, 1000, &mult, &shift), 0);
	CHECK_EQ(mult, 1u << 30);
	CHECK_EQ(shift, 30);
	/* 25 MHz (an arm64 generic timer): 40 ns per cycle */
	CHECK_EQ(np_clock_rate(25000000, 1000000000, &mult, &shift), 0);
	CHECK(mult < 1u << 31 && mult >= 1u << 30);
	CHECK_EQ(exact_scale(25000000, mult, shift), 1000000000);
	/* nothing to say it */
	CHECK_EQ(np_clock_rate(0, 1000, &mult, &shift), -ERANGE);
	CHECK_EQ(np_clock_rate(1000, 0, &mult, &shift), -ERANGE);
	CHECK_EQ(np_clock_rate(1, 1ull << 32, &mult, &shift), -ERANGE);
}

TEST(line_holds_over_long_uptimes)
{
	uint32_t mult, shift;
	CHECK_EQ(np_clock_rate(2445406000ull, 1000000000ull, &mult, &shift), 0);
	struct np_clock_line l = {1000, 5000, mult, shift};
	/* ten years of cycles after the line's start: the exact product,
	 * nothing wrapped, and within the rounding of mult (2^-32 ns per
	 * cycle) of cycles / 2.445406 */
	uint64_t d = 10ull * 365 * 86400 * 2445406000ull;
	uint64_t ns = np_clock_line_ns(&l, 1000 + d);
	CHECK_EQ(ns, 5000 + exact_scale(d, mult, shift));
	uint64_t want = (uint64_t)((unsigned __int128)d * 1000000000u / 2445406000u);
	CHECK(ns - 5000 <= want && want - (ns - 5000) <= (d >> 32) + 1);
	/* the counter's whole range */
	CHECK_EQ(np_clock_line_ns(&l, 999), 5000); /* before the start: the start */
	CHECK_EQ(np_clock_line_ns(&l, 1000 + (1ull << 63) - 1),
		 5000 + exact_scale((1ull << 63) - 1, mult, shift));
}

TEST(line_before_its_start_reads_its_start)
{
	struct np_clock_line l = {1ull << 40, 777, 1u << 30, 30};
	CHECK_EQ(np_clock_line_ns(&l, (1ull << 40) - 1), 777);
	CHECK_EQ(np_clock_line_ns(&l, 0), 777);
	CHECK_EQ(np_clock_line_ns(&l, 1ull << 40), 777);
	CHECK_EQ(np_clock_line_ns(&l, (1ull << 40) + 10), 787);
}

/* The new line starts where the old one was at its first cycle, and
 * from there lies at or above the old one's value at any earlier cycle:
 * a thread that read the old line and then the new one never goes back
 * (unless the line stepped back, which the caller says). */
static void check_continues(const struct np_clock_line *cur, const struct np_clock_line *next)
{
	uint64_t at = next->cycles0, before = np_clock_line_ns(cur, at);
	CHECK(next->ns0 >= before);
	for (uint64_t k = 0; k < 64; k++) {
		uint64_t c1 = at - (rnd() % (1u << 20)), c2 = at + (rnd() % (1u << 20));
		CHECK(np_clock_line_ns(next, c2) >= np_clock_line_ns(cur, c1));
	}
}

TEST(next_line_steers_a_small_error_without_going_back)
{
	uint32_t rate, shift;
	CHECK_EQ(np_clock_rate(2445406000ull, 1000000000ull, &rate, &shift), 0);
	struct np_clock_line cur = {0, 1000000000, rate, shift};
	uint64_t at = 24454060; /* 10 ms on */
	uint64_t mono = np_clock_line_ns(&cur, at);
	/* the line 50 µs ahead: continuous, slower by 50 µs over 100 ms */
	struct np_clock_line next = np_clock_line_next(&cur, at, mono - 50000, rate, shift);
	CHECK_EQ(next.cycles0, at);
	CHECK_EQ(next.ns0, mono);
	CHECK(next.mult < rate && next.mult >= rate - rate / 1000);
	CHECK_EQ(next.mult, rate - (uint32_t)((uint64_t)rate * 50000 / 100000000));
	check_continues(&cur, &next);
	/* 50 µs behind: continuous, faster */
	next = np_clock_line_next(&cur, at, mono + 50000, rate, shift);
	CHECK_EQ(next.ns0, mono);
	CHECK(next.mult > rate && next.mult <= rate + rate / 1000);
	check_continues(&cur, &next);
	/* 5 ms ahead: continuous, at most 1000 ppm slower */
	next = np_clock_line_next(&cur, at, mono - 5000000, rate, shift);
	CHECK_EQ(next.ns0, mono);
	CHECK_EQ(next.mult, rate - rate / 1000);
	check_continues(&cur, &next);
}

TEST(next_line_steps_forward_when_far_behind)
{
	uint32_t rate, shift;
	CHECK_EQ(np_clock_rate(2445406000ull, 1000000000ull, &rate, &shift), 0);
	struct np_clock_line cur = {0, 1000000000, rate, shift};
	uint64_t at = 24454060, mono = np_clock_line_ns(&cur, at) + 3000000; /* 3 ms behind */
	struct np_clock_line next = np_clock_line_next(&cur, at, mono, rate, shift);
	CHECK_EQ(next.ns0, mono);
	CHECK_EQ(next.mult, rate);
	check_continues(&cur, &next);
	/* no line yet: the measurement itself */
	struct np_clock_line none = {0, 0, 0, 0};
	next = np_clock_line_next(&none, at, mono, rate, shift);
	CHECK_EQ(next.cycles0, at);
	CHECK_EQ(next.ns0, mono);
}

TEST(next_line_steps_back_only_past_a_suspend_sized_error)
{
	uint32_t rate, shift;
	CHECK_EQ(np_clock_rate(2445406000ull, 1000000000ull, &rate, &shift), 0);
	struct np_clock_line cur = {0, 1000000000, rate, shift};
	uint64_t at = 24454060, here = np_clock_line_ns(&cur, at);
	/* 9 ms ahead: steered, never back */
	struct np_clock_line next = np_clock_line_next(&cur, at, here - 9000000, rate, shift);
	CHECK_EQ(next.ns0, here);
	/* 2 s ahead (the counter ran through a suspend CLOCK_MONOTONIC did
	 * not count): CLOCK_MONOTONIC's value again */
	next = np_clock_line_next(&cur, at, here - 2000000000, rate, shift);
	CHECK_EQ(next.ns0, here - 2000000000);
	CHECK_EQ(next.mult, rate);
}

/*
 * A session's calibration as clock.c runs it, against a made-up
 * CLOCK_MONOTONIC: a 2445.406 MHz counter, samples with ±60 ns of noise,
 * the first line after 1 ms, a tick every 10 ms; after 3 s NTP makes
 * CLOCK_MONOTONIC 50 ppm faster. Every line continues the last one; the
 * line stays within 0.1% of the rate, and within a few µs of
 * CLOCK_MONOTONIC once settled, also after the change.
 */
static double mono_at(uint64_t cycles)
{
	const double hz = 2445406000.0, change = 3.0 * hz;
	double c = (double)cycles;
	double ns = c / hz * 1e9;
	if (c > change)
		ns += (c - change) / hz * 1e9 * 50e-6;
	return 5e12 + ns;
}

static uint64_t noisy_mono(uint64_t cycles)
{
	return (uint64_t)(mono_at(cycles) + (double)(rnd() % 121) - 60.0);
}

TEST(steering_follows_clock_monotonic_through_an_ntp_change)
{
	const uint64_t tick = 24454060; /* 10 ms of cycles */
	uint64_t c0 = 1000, n0 = noisy_mono(c0), c1 = c0 + tick / 10, n1 = noisy_mono(c1);
	uint32_t rate, shift;
	CHECK_EQ(np_clock_rate(c1 - c0, n1 - n0, &rate, &shift), 0);
	struct np_clock_line line = np_clock_line_next(&(struct np_clock_line){0}, c1, n1, rate,
						       shift);
	double worst_settled = 0;
	for (int i = 1; i <= 800; i++) { /* 8 s */
		uint64_t c = c1 + (uint64_t)i * tick, n = noisy_mono(c);
		/* the rate over the last 4 s at most (clock.c's baseline moves on) */
		uint64_t from = i > 400 ? c - 400 * tick : c0;
		CHECK_EQ(np_clock_rate(c - from, n - (uint64_t)mono_at(from), &rate, &shift), 0);
		struct np_clock_line next = np_clock_line_next(&line, c, n, rate, shift);
		check_continues(&line, &next);
		double slope = (double)next.mult / (double)(1ull << next.shift);
		double want = (double)rate / (double)(1ull << shift);
		CHECK(slope >= want * (1 - 1.001e-3) && slope <= want * (1 + 1.001e-3));
		line = next;
		double err = (double)np_clock_line_ns(&line, c + tick / 2) - mono_at(c + tick / 2);
		if ((i > 100 && i < 300) || i > 720) /* 1 s on; the rate's baseline past the change */
			worst_settled = err < 0 ? (-err > worst_settled ? -err : worst_settled)
						: (err > worst_settled ? err : worst_settled);
		CHECK(err < 20000 && err > -20000); /* even while the change is worked off */
	}
	CHECK(worst_settled < 2000);
	if (worst_settled >= 2000)
		fprintf(stderr, "worst error once settled: %.0f ns\n", worst_settled);
}

/* --- the process's clock ----------------------------------------------------- */

struct bracket {
	uint64_t before, clock, after;
};

static void *read_bracketed(void *arg)
{
	struct bracket *b = arg;
	b->before = libc_clock_ns();
	b->clock = np_clock_ns();
	b->after = libc_clock_ns();
	return NULL;
}

/* np_clock_ns on a thread of its own (whose last time is 0), between two
 * reads of libc's clock: within 1 ms, or exactly between them. */
static struct bracket bracketed(void)
{
	struct bracket b;
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, read_bracketed, &b), 0);
	pthread_join(t, NULL);
	return b;
}

TEST(asked_for_the_vdso_reads_the_vdso)
{
	CHECK_EQ(np_nolibc_init(), 0);
	np_clock_begin(false);
	np_clock_settle();
	struct np_clock_info info;
	np_clock_describe(&info);
	CHECK(!info.counter);
	CHECK_EQ(info.hz, 0);
	CHECK(strstr(info.why, "asked for the vDSO") != NULL);
	np_clock_tick(); /* ticks do not bring the counter back */
	np_clock_describe(&info);
	CHECK(!info.counter);
	/* the vDSO's CLOCK_MONOTONIC is libc's: exactly between */
	for (int i = 0; i < 20; i++) {
		struct bracket b = bracketed();
		CHECK(b.before <= b.clock && b.clock <= b.after);
	}
}

TEST(the_counter_reads_clock_monotonic_where_the_kernel_vouches_for_it)
{
	char why[96];
	CHECK_EQ(np_nolibc_init(), 0);
	if (np_host_counter_check(why, sizeof(why))) {
		printf("# no counter here (%s): the vDSO case above covers this host\n", why);
		np_clock_begin(true);
		np_clock_settle();
		struct np_clock_info info;
		np_clock_describe(&info);
		CHECK(!info.counter);
		CHECK_STR(info.why, why);
		return;
	}
	np_clock_begin(true);
	np_clock_settle();
	struct np_clock_info info;
	np_clock_describe(&info);
	CHECK(info.counter);
	CHECK(info.hz > 1000000 && info.hz < 100000000000ull);
	CHECK_STR(info.why, "");
	for (int i = 0; i < 20; i++) {
		np_clock_tick();
		struct bracket b = bracketed();
		CHECK(b.clock + 1000000 >= b.before && b.clock <= b.after + 1000000);
	}
	np_clock_end(); /* the session is over: the vDSO until the next */
	np_clock_describe(&info);
	CHECK(!info.counter);
	struct bracket b = bracketed();
	CHECK(b.before <= b.clock && b.clock <= b.after);
}

static void *read_twice_across(void *arg)
{
	uint64_t *v = arg;
	struct np_clock_line a = {NP_HOST_COUNTER(), v[0], 0, 0}, b = a, c = a;
	a.mult = b.mult = c.mult = 1; /* a line, flat to within a ns per 2^32 cycles */
	a.shift = b.shift = c.shift = 32;
	b.ns0 -= 5;        /* a new line a few ns below where the old one was */
	c.ns0 -= 20000000; /* one 20 ms back: a step back after a suspend */
	np_clock_publish(&a);
	v[1] = np_clock_ns();
	np_clock_publish(&b);
	v[2] = np_clock_ns();
	np_clock_publish(&c);
	v[3] = np_clock_ns();
	return NULL;
}

TEST(a_thread_never_reads_back_a_few_ns_but_does_a_step_back)
{
	/* a thread that read the old line past the new one's start, then
	 * the new line (lower there when it is slower): its time stays */
	uint64_t v[4] = {libc_clock_ns()};
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, read_twice_across, v), 0);
	pthread_join(t, NULL);
	CHECK(v[1] >= v[0] && v[1] <= v[0] + 1);
	CHECK_EQ(v[2], v[1]);
	CHECK(v[3] < v[0] - 19000000); /* CLOCK_MONOTONIC's own meaning */
	np_clock_begin(false);
}

#define READERS 2
static int stop_readers;

static void *read_monotonic(void *arg)
{
	uint64_t *bad = arg, prev = np_clock_ns(), reads = 0;
	while (!__atomic_load_n(&stop_readers, __ATOMIC_ACQUIRE) || reads < 1000) {
		uint64_t now = np_clock_ns();
		*bad += now < prev;
		prev = now;
		reads++;
	}
	/* and still CLOCK_MONOTONIC (a torn line would be far off) */
	uint64_t before = libc_clock_ns(), now = np_clock_ns(), after = libc_clock_ns();
	*bad += now + 1000000 < before || now > after + 1000000;
	return NULL;
}

TEST(no_thread_goes_back_while_the_line_is_recalibrated)
{
	CHECK_EQ(np_nolibc_init(), 0);
	np_clock_begin(true); /* the vDSO where there is no counter: the same test */
	np_clock_settle();
	pthread_t t[READERS];
	uint64_t bad[READERS] = {0};
	stop_readers = 0;
	for (int i = 0; i < READERS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, read_monotonic, &bad[i]), 0);
	for (int i = 0; i < 3000; i++) /* a publish each, as fast as it goes */
		np_clock_tick();
	__atomic_store_n(&stop_readers, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(bad[i], 0);
	}
}

TEST_MAIN()

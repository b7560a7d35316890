/* SPDX-License-Identifier: MIT */
/*
 * The hit paths' clock.
 *
 * latency reads the clock twice per call and trace once per event. Read
 * through the vDSO, CLOCK_MONOTONIC costs 34 ns of cpu time on this
 * project's KVM guests (60 to 100 ns of a busy machine's time), most of
 * those hits' cost (docs/performance.md, issue 19). When the kernel's
 * clocksource is the TSC, the vDSO itself reads the TSC: ordered (lfence
 * then rdtsc, or rdtscp), inside a seqlock, then scaled. Here the process
 * keeps a line of its own from the counter to CLOCK_MONOTONIC and reads
 * the counter unordered: one rdtsc, a few loads, two multiplies.
 *
 * Where. Only where the kernel vouches for the counter
 * (np_host_counter_check: on x86-64, its own clocksource is "tsc", which
 * its watchdog takes away from a TSC it finds unstable, and the cpu flags
 * say constant_tsc and nonstop_tsc). Every other host reads the vDSO,
 * which on arm64 and riscv64 reads the counter itself with the kernel's
 * errata work-arounds; so does a session that asks for it
 * (NANOPROBE_CLOCK=vdso), and a session whose probes never read the
 * clock (count) calibrates nothing.
 *
 * Calibration. The counter's rate is measured against CLOCK_MONOTONIC
 * itself, so that the time stamps keep its meaning (trace prints them as
 * seconds; the command compares them with its own clock): a sample is the
 * counter read between two vDSO reads, the closest pair of a few. The
 * agent takes a session's first sample once its probes have arrived and
 * publishes the first line at least 1 ms later, when they are placed
 * (placing them takes that long or longer; what is left is slept): the
 * rate is then known to about 1e-4. Until then the vDSO is read. Every
 * tick of the session thread (10 ms) takes another sample: the rate is
 * measured again over a baseline that grows to 8-16 s (about 1e-8), and
 * the line is steered onto CLOCK_MONOTONIC, which NTP slews: continuous
 * where the new line starts, the error worked off over 100 ms with a
 * slope at most 0.1% off the rate (np_clock_line_next). The time stamps
 * stay within a few µs of CLOCK_MONOTONIC; a duration is off by about
 * 0.1% at most. No CPUID leaf gives the rate on every machine (this
 * project's AMD guests have neither leaf 0x15 nor the hypervisor's
 * 0x40000010), and the perf mmap page's time_mult is not offered under
 * a paravirtual sched_clock, so the rate is always measured.
 *
 * Publication. Readers never wait for the writer: two copies of the line
 * and a sequence number whose low bit says which one is current (the
 * kernel's seqcount latch). The writer fills the copy readers are not
 * sent to, then moves the number; a reader that saw the number move while
 * it read takes the line again. A writer preempted halfway holds up no
 * one, and a signal handler on the writer's thread reads the other copy.
 *
 * Ordering. The counter is read without lfence (lfence; rdtsc costs
 * 25 ns here, rdtsc alone 13, np_clock_ns 15). An unordered rdtsc may
 * run a few dozen cycles before the instructions ahead of it finish, or
 * after some that follow it start: a time stamp is off by at most that
 * out-of-order window, the order of the probe's own cost (which a
 * latency includes anyway) and far inside the power-of-two buckets it is
 * counted in. What ordering would buy is never seeing time go back
 * between two reads; np_clock_ns gives that per thread another way
 * (tls_last), which also covers what no fence would: a thread that moves
 * to a cpu whose TSC is a little behind, or reads the old line a little
 * past the new one's start.
 */
#include "core/clock.h"
#include "host/host.h" /* NP_HOST_COUNTER, np_host_counter_check */
#include "core/nolibc.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

int np_clock_rate(uint64_t dcycles, uint64_t dns, uint32_t *mult, uint32_t *shift)
{
	if (!dcycles || !dns)
		return -ERANGE;
	unsigned __int128 m = ((unsigned __int128)dns << 32) / dcycles;
	uint32_t s = 32;
	for (; m >= 1u << 31; m >>= 1, s--)
		if (!s)
			return -ERANGE;
	if (!m)
		return -ERANGE;
	*mult = (uint32_t)m;
	*shift = s;
	return 0;
}

struct np_clock_line np_clock_line_next(const struct np_clock_line *cur, uint64_t cycles,
					uint64_t ns, uint32_t rate_mult, uint32_t rate_shift)
{
	struct np_clock_line next = {cycles, ns, rate_mult, rate_shift};
	if (!cur->mult)
		return next;
	uint64_t here = np_clock_line_ns(cur, cycles);
	int64_t err = (int64_t)(here - ns); /* > 0: the line is ahead */
	if (err < -NP_CLOCK_SLEW_MAX_NS || err > NP_CLOCK_STEP_BACK_NS)
		return next; /* a step: too far to steer */
	if (err > NP_CLOCK_SLEW_MAX_NS)
		err = NP_CLOCK_SLEW_MAX_NS; /* ahead: steered at the steepest */
	next.ns0 = here;
	/* at most 2^31 * 10^5 < 2^48 */
	next.mult = (uint32_t)((int64_t)rate_mult -
			       (int64_t)rate_mult * err / (int64_t)NP_CLOCK_HORIZON_NS);
	return next;
}

/* --- the line readers use ------------------------------------------------- */

static struct {
	uint32_t seq; /* line[seq & 1] is current */
	struct np_clock_line line[2];
} latch;

void np_clock_publish(const struct np_clock_line *l)
{
	uint32_t seq = latch.seq; /* only the writer stores it */
	struct np_clock_line *w = &latch.line[(seq + 1) & 1];
	/* a reader that sees any word below also sees seq as it is now, and
	 * so knows it raced this publish if it still holds an older one */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&w->cycles0, l->cycles0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->ns0, l->ns0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->mult, l->mult, __ATOMIC_RELAXED);
	__atomic_store_n(&w->shift, l->shift, __ATOMIC_RELAXED);
	__atomic_store_n(&latch.seq, seq + 1, __ATOMIC_RELEASE);
}

/* The line's time now, or the vDSO's without a line. */
static uint64_t read_line(void)
{
	for (;;) {
		uint32_t seq = __atomic_load_n(&latch.seq, __ATOMIC_ACQUIRE);
		const struct np_clock_line *r = &latch.line[seq & 1];
		struct np_clock_line l = {__atomic_load_n(&r->cycles0, __ATOMIC_RELAXED),
					  __atomic_load_n(&r->ns0, __ATOMIC_RELAXED),
					  __atomic_load_n(&r->mult, __ATOMIC_RELAXED),
					  __atomic_load_n(&r->shift, __ATOMIC_RELAXED)};
		if (!l.mult) /* no line (or one half written: the vDSO is right too) */
			return np_vdso_clock_ns();
		uint64_t cycles = NP_HOST_COUNTER();
		__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the loads above before the check */
		if (__atomic_load_n(&latch.seq, __ATOMIC_RELAXED) == seq)
			return np_clock_line_ns(&l, cycles);
	}
}

/* The last time this thread read. Each line starts where the one before
 * it was at its sample, but a thread may still read the old line a
 * little past that point (its counter read runs out of order, or the
 * writer is preempted between its sample and the publish) and then read
 * the new one, whose slope may be lower: a few ns back at most. So may a
 * thread that moves to a cpu whose TSC is a little behind, or that read
 * the vDSO just before the first line. Its time then stays where it was.
 * Further back than a step back of the line (a system suspend) is
 * CLOCK_MONOTONIC's own meaning, and is passed on. */
static __thread uint64_t tls_last __attribute__((tls_model("initial-exec")));

uint64_t np_clock_ns(void)
{
	uint64_t now = read_line(), last = tls_last;
	if (now < last && last - now < (uint64_t)NP_CLOCK_STEP_BACK_NS)
		now = last;
	tls_last = now;
	return now;
}

/* --- calibration (the session thread) -------------------------------------- */

/* The counter between two reads of CLOCK_MONOTONIC: ns the middle of the
 * two, ns_hi the later. The vDSO orders its own counter reads (lfence or
 * rdtscp), which keeps ours between them to within a few cycles. */
struct sample {
	uint64_t cycles, ns, ns_hi;
};
#define SAMPLE_TRIES 5
/* The rate's baseline moves on every 8 s (to follow NTP's changes of
 * CLOCK_MONOTONIC's rate); it is then 8 to 16 s long. */
#define REBASE_NS 8000000000ull
/* The kernel's word on the counter is asked again every second (its
 * watchdog may take the clocksource away from the TSC). */
#define RECHECK_TICKS 100

static struct {
	bool counter; /* this session reads the counter */
	struct sample base[2]; /* the rate is measured from base[0] */
	struct np_clock_line line; /* the one published */
	uint32_t rate_mult, rate_shift;
	uint64_t hz;
	unsigned ticks;
	char why[96];
} w;

static void sample(struct sample *s)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < SAMPLE_TRIES; i++) {
		uint64_t a = np_vdso_clock_ns();
		uint64_t c = NP_HOST_COUNTER();
		uint64_t b = np_vdso_clock_ns();
		if (i == 0 || b - a < best) { /* the first always: s is set */
			best = b - a;
			*s = (struct sample){c, a + (b - a) / 2, b};
		}
	}
}

/* The rate from `from` to `to` into w. 0 or -ERANGE. */
static int fit(const struct sample *from, const struct sample *to)
{
	if (to->cycles <= from->cycles || to->ns <= from->ns ||
	    np_clock_rate(to->cycles - from->cycles, to->ns - from->ns, &w.rate_mult,
			  &w.rate_shift))
		return -ERANGE;
	w.hz = (uint64_t)((unsigned __int128)(to->cycles - from->cycles) * 1000000000u /
			  (to->ns - from->ns));
	return 0;
}

static void drop_counter(const char *why)
{
	static const struct np_clock_line none;
	if (why)
		snprintf(w.why, sizeof(w.why), "%s", why);
	w.counter = false;
	w.line = none;
	w.hz = 0;
	np_clock_publish(&none);
}

void np_clock_begin(bool want_counter)
{
	drop_counter(NULL); /* the vDSO until np_clock_settle */
	w.ticks = 0;
	w.why[0] = 0;
	if (!want_counter)
		snprintf(w.why, sizeof(w.why), "the session asked for the vDSO");
	else if (np_host_counter_check(w.why, sizeof(w.why)) == 0)
		w.counter = true;
	if (w.counter) {
		sample(&w.base[0]);
		w.base[1] = w.base[0];
	}
}

void np_clock_settle(void)
{
	if (!w.counter || w.line.mult)
		return;
	uint64_t since = np_vdso_clock_ns() - w.base[0].ns;
	if (since < NP_CLOCK_BASELINE_NS) {
		uint64_t left = NP_CLOCK_BASELINE_NS - since;
		struct timespec ts = {0, (long)left};
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	struct sample s;
	sample(&s);
	if (fit(&w.base[0], &s)) {
		drop_counter("the counter did not advance with CLOCK_MONOTONIC");
		return;
	}
	/* from the later read: a thread that read the vDSO before it never
	 * reads less from the line */
	w.line = (struct np_clock_line){s.cycles, s.ns_hi, w.rate_mult, w.rate_shift};
	np_clock_publish(&w.line);
}

void np_clock_tick(void)
{
	if (!w.counter || !w.line.mult)
		return;
	if (++w.ticks % RECHECK_TICKS == 0) {
		char why[sizeof(w.why)];
		if (np_host_counter_check(why, sizeof(why))) {
			drop_counter(why);
			return;
		}
	}
	struct sample s;
	sample(&s);
	if (s.ns - w.base[1].ns >= REBASE_NS) {
		w.base[0] = w.base[1];
		w.base[1] = s;
	}
	if (fit(&w.base[0], &s))
		return; /* the counter went back: keep the line we have */
	w.line = np_clock_line_next(&w.line, s.cycles, s.ns, w.rate_mult, w.rate_shift);
	np_clock_publish(&w.line);
}

void np_clock_end(void)
{
	drop_counter("no session is timed");
}

void np_clock_describe(struct np_clock_info *out)
{
	out->counter = w.counter && w.line.mult;
	out->hz = out->counter ? w.hz : 0;
	snprintf(out->why, sizeof(out->why), "%s", out->counter ? "" : w.why);
}

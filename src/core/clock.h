/* SPDX-License-Identifier: MIT */
/*
 * The hit paths' clock (see clock.c): CLOCK_MONOTONIC in nanoseconds,
 * read from the host's counter through a calibrated line where the kernel
 * vouches for the counter, through the vDSO otherwise.
 *
 * The line's arithmetic is pure and kept here, so that tests can check it
 * with made-up counters: ns = ns0 + (cycles - cycles0) * mult / 2^shift.
 */
#ifndef NP_CLOCK_H
#define NP_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A line from counter cycles to CLOCK_MONOTONIC ns. mult 0: no line (the
 * vDSO is read instead). mult < 2^32, shift <= 32. */
struct np_clock_line {
	uint64_t cycles0, ns0;
	uint32_t mult, shift;
};

/* Steering a line onto CLOCK_MONOTONIC (np_clock_line_next): an error up
 * to NP_CLOCK_SLEW_MAX_NS is worked off over NP_CLOCK_HORIZON_NS by a
 * slope at most 1000 ppm off the measured rate, so a duration is never
 * off by more than 0.1%; further behind, the line steps forward; further
 * ahead than NP_CLOCK_STEP_BACK_NS it steps back (only the counter ran
 * while CLOCK_MONOTONIC did not: a system suspend). */
#define NP_CLOCK_HORIZON_NS 100000000ull  /* 100 ms */
#define NP_CLOCK_SLEW_MAX_NS 100000ll     /* 1000 ppm of the horizon */
#define NP_CLOCK_STEP_BACK_NS 10000000ll  /* 10 ms */

/* d * mult / 2^shift, exactly, without 128-bit arithmetic: with
 * d = hi * 2^32 + lo, d * mult / 2^shift = hi * mult * 2^(32 - shift) +
 * lo * mult / 2^shift, whose first term is whole for shift <= 32. Neither
 * product overflows (each factor < 2^32); the sum does only when the
 * result is past 2^64 ns (584 years). */
static inline uint64_t np_clock_scale(uint64_t d, uint32_t mult, uint32_t shift)
{
	uint64_t hi = d >> 32, lo = d & 0xffffffffu;
	return ((hi * mult) << (32 - shift)) + ((lo * mult) >> shift);
}

/* The line's time at `cycles`. A counter read before cycles0 gives ns0:
 * a thread may read the counter a little before it sees the line a later
 * calibration published, and must not wrap to the far future. */
static inline uint64_t np_clock_line_ns(const struct np_clock_line *l, uint64_t cycles)
{
	if ((int64_t)(cycles - l->cycles0) <= 0)
		return l->ns0;
	return l->ns0 + np_clock_scale(cycles - l->cycles0, l->mult, l->shift);
}

/* The rate of dns per dcycles as mult / 2^shift, mult < 2^31 (room for
 * np_clock_line_next's correction), shift as large as that allows, at
 * most 32. 0, or -ERANGE when no pair says it: no cycles, no time, or
 * 2^31 ns per cycle or more. */
int np_clock_rate(uint64_t dcycles, uint64_t dns, uint32_t *mult, uint32_t *shift);

/* The line from (cycles, ns) on, a new measurement of CLOCK_MONOTONIC at
 * that counter value, given the current line and the measured rate.
 * Continuous with `cur` at `cycles` (its value there is the new ns0), so
 * that no thread sees time go back, and steered as NP_CLOCK_HORIZON_NS
 * says; a step where the error is too large to steer. */
struct np_clock_line np_clock_line_next(const struct np_clock_line *cur, uint64_t cycles,
					uint64_t ns, uint32_t rate_mult, uint32_t rate_shift);

/* --- the process's clock (clock.c) ----------------------------------------- */

/* CLOCK_MONOTONIC in ns: np_clock_ns (nolibc.h). No syscall (unless the
 * process has no vDSO), no lock, no allocation; any thread, any time. */

/* The agent's session thread times its sessions with these, one caller at
 * a time. A session starts on the vDSO: np_clock_begin takes a first
 * sample when the counter may be used (want_counter, and the host's
 * kernel says it is reliable: np_host_counter_check); np_clock_settle,
 * at least NP_CLOCK_BASELINE_NS later (it sleeps the rest), fits the
 * counter's rate and publishes the first line; np_clock_tick, every few
 * ms, steers it onto CLOCK_MONOTONIC again; np_clock_end goes back to the
 * vDSO. */
#define NP_CLOCK_BASELINE_NS 1000000ull /* 1 ms */
void np_clock_begin(bool want_counter);
void np_clock_settle(void);
void np_clock_tick(void);
/* The vDSO again: the session is over, its line no longer steered. */
void np_clock_end(void);

/* Make l the line every thread reads (mult 0: the vDSO). The writer's
 * own: np_clock_begin, _settle and _tick call it; tests too. */
void np_clock_publish(const struct np_clock_line *l);

/* What the clock reads: the counter (and its rate) or the vDSO, and why
 * not the counter. */
struct np_clock_info {
	bool counter;
	uint64_t hz; /* the counter's measured rate, 0 without */
	char why[96]; /* why the vDSO, "" with the counter */
};
void np_clock_describe(struct np_clock_info *out);

#endif /* NP_CLOCK_H */

/* SPDX-License-Identifier: MIT */
/*
 * What the hit paths use instead of libc.
 *
 * With a probe on every function of libc (`nanoprobe count 'c:*'`), any
 * libc call made while a hit is handled lands on a probe from inside the
 * engine. The recursion guard turns that into a missed hit at best; at
 * worst the SIGTRAP handler, reading errno through __errno_location with a
 * breakpoint on it, re-entered itself until the stack ran out. So the code
 * between a probe firing and the program resuming calls none: these
 * helpers reach errno, the clock and the cpu number directly, and copy
 * bytes with their own loops (nolibc.c is built so that the compiler does
 * not turn those back into memcpy calls).
 */
#ifndef NP_NOLIBC_H
#define NP_NOLIBC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libc's errno is initial-exec TLS: one offset from the thread pointer,
 * the same in every thread. np_nolibc_init measures it; until then (a
 * program calling np_read_user before any attach) errno is libc's own
 * (the offset is never 0: the thread control block is there). */
extern ptrdiff_t np_errno_offset;

static inline int *np_errno(void)
{
	ptrdiff_t off = np_errno_offset;
	return off ? (int *)((char *)__builtin_thread_pointer() + off) : &errno;
}

/* Once, at engine initialisation (libc may be called there). 0. */
int np_nolibc_init(void);

/* CLOCK_MONOTONIC in ns: the host's counter scaled by a calibrated line
 * where the kernel vouches for the counter and a session has calibrated
 * it, else np_vdso_clock_ns (core/clock.c, clock.h). */
uint64_t np_clock_ns(void);
/* CLOCK_MONOTONIC in ns: the vDSO's clock_gettime, else the syscall. */
uint64_t np_vdso_clock_ns(void);

/* The cpu this thread runs on: the rseq area glibc registers, else the
 * vDSO's getcpu, else the syscall. -1 if none says. */
int np_cpu(void);

/* Sleep while *word == expect (or until woken); wake every sleeper. */
void np_futex_wait(uint32_t *word, uint32_t expect);
void np_futex_wake(uint32_t *word);

void np_copy(void *dst, const void *src, size_t n);
void np_zero(void *dst, size_t n);
bool np_same(const void *a, const void *b, size_t n);
/* The first byte c in s[0, n), or NULL. */
const void *np_find_byte(const void *s, int c, size_t n);

#endif /* NP_NOLIBC_H */

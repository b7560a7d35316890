/* SPDX-License-Identifier: MIT */
/* Functions the tests probe keep their calls, arguments and signatures:
 * gcc's noipa, or clang's nearest, optnone. */
#ifndef NP_PROGS_H
#define NP_PROGS_H
#if defined(__clang__)
#define NOINLINE __attribute__((noinline, optnone, used))
#else
#define NOINLINE __attribute__((noinline, noipa, used))
#endif
#endif

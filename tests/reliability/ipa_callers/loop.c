/* SPDX-License-Identifier: MIT */
/*
 * The loop of issue 17: `for (i = 0; i < n; i++) s += h(i);`, where GCC
 * keeps n and s in rcx and rsi (x86-64) across the call to h, which uses
 * neither; and a second loop that walks an array through a pointer kept
 * across calls to two functions.
 */
#include "ipa_callers.h"

static NOIPA_CALLEE long h(long i)
{
	return i * 3 + 1;
}

static NOIPA_CALLEE unsigned mix(unsigned x)
{
	x ^= x >> 7;
	return x * 0x9e3779b1u;
}

static NOIPA_CALLEE unsigned fold(unsigned acc, unsigned x)
{
	return (acc << 5 | acc >> 27) + x;
}

static NOIPA_CALLEE void loop_run(struct ipa_out *o, long scale)
{
	long n = 1000 * scale, s = 0;
	static unsigned data[509];
	unsigned acc = 0;

	for (long i = 0; i < n; i++)
		s += h(i);
	for (unsigned i = 0; i < 509; i++)
		data[i] = i * 7 + 3;
	for (long r = 0; r < scale; r++)
		for (const unsigned *p = data, *end = data + 509; p < end; p++)
			acc = fold(acc, mix(*p));
	ipa_printf(o, "loop: s=%ld acc=%08x\n", s, acc);
}

static void *const funcs[] = {(void *)loop_run, (void *)h, (void *)mix, (void *)fold, NULL};
static const char *const names[] = {"loop_run", "h", "mix", "fold", NULL};
const struct ipa_workload ipa_loop = {"loop", loop_run, funcs, names};

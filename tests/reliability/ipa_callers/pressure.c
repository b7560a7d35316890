/* SPDX-License-Identifier: MIT */
/*
 * More values live across each call than there are callee-saved
 * registers: twelve accumulators updated around calls to tiny functions,
 * so GCC keeps some in r8-r11, rdi and rsi (x86-64) or x9-x15 (arm64)
 * across the calls, wherever the callee leaves them alone.
 */
#include "ipa_callers.h"

static NOIPA_CALLEE unsigned long step(unsigned long x)
{
	return x * 6364136223846793005ul + 1442695040888963407ul;
}

static NOIPA_CALLEE unsigned long pick(unsigned long x, unsigned k)
{
	return x >> (k & 31);
}

static NOIPA_CALLEE void pressure_run(struct ipa_out *o, long scale)
{
	unsigned long a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;
	unsigned long i = 9, j = 10, k = 11, l = 12, x = 42;

	for (long n = 0; n < 200 * scale; n++) {
		x = step(x);
		a += x;
		b ^= a;
		c += b >> 3;
		d -= c;
		x = step(x ^ d);
		e += pick(x, (unsigned)a);
		f ^= e + d;
		g += f * 3;
		h -= g ^ c;
		x = step(x + h);
		i += pick(x, (unsigned)h) ^ a;
		j ^= i + b;
		k += j >> 1;
		l -= k ^ e;
	}
	ipa_printf(o, "pressure: %lx %lx %lx %lx %lx %lx %lx %lx %lx %lx %lx %lx\n", a, b, c,
		   d, e, f, g, h, i, j, k, l);
}

static void *const funcs[] = {(void *)pressure_run, (void *)step, (void *)pick, NULL};
static const char *const names[] = {"pressure_run", "step", "pick", NULL};
const struct ipa_workload ipa_pressure = {"pressure", pressure_run, funcs, names};

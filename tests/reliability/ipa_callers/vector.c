/* SPDX-License-Identifier: MIT */
/*
 * Floating-point values live across calls to integer-only functions: GCC
 * knows the callee leaves every vector register alone and keeps the
 * doubles in xmm registers (x86-64; v registers on arm64, f registers on
 * riscv64) across the call, where the ABI would make it spill them. And
 * one function takes and returns doubles: a probe must leave its argument
 * and return registers alone as well.
 */
#include "ipa_callers.h"

static NOIPA_CALLEE long hash(long x)
{
	return (x * 2654435761l) % 1000003;
}

static NOIPA_CALLEE long clamp(long x, long lo, long hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/* Doubles in and out: the argument and return registers themselves. */
static NOIPA_CALLEE double blend(double x, double y, long k)
{
	return x * 0.75 + y * 0.25 + (double)(k & 3);
}

static NOIPA_CALLEE void vector_run(struct ipa_out *o, long scale)
{
	double a = 0.5, b = 1.0, c = 0.0, d = 2.0, e = 0.25, f = 1.5;

	for (long i = 0; i < 300 * scale; i++) {
		long k = hash(i);
		a += (double)k * 1e-6;
		b *= 1.0000001;
		c += a * b;
		k = clamp(k, 1000, 900000);
		d = d * 0.999 + (double)k * 1e-7;
		e += d * c * 1e-9;
		f = f * 0.5 + e;
		f = blend(f, a, k) * 1e-3;
	}
	ipa_printf(o, "vector: %.9g %.9g %.9g %.9g %.9g %.9g\n", a, b, c, d, e, f);
}

static void *const funcs[] = {(void *)vector_run, (void *)hash, (void *)clamp, (void *)blend,
			      NULL};
static const char *const names[] = {"vector_run", "hash", "clamp", "blend", NULL};
const struct ipa_workload ipa_vector = {"vector", vector_run, funcs, names};

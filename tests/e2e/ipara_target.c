/* SPDX-License-Identifier: MIT */
/*
 * Targets of ipara_arm64.c, compiled by GCC at -O2 with -fipa-ra (on at
 * -O2; spelt out in meson.build): ipa_caller keeps twelve values in x1..x13
 * across its call to ipa_leaf, which writes only x0, x16 and x17, so GCC
 * knows the call leaves them alone. At ipa_leaf_site x16 and x17 hold
 * ipa_leaf's own values; by the calling convention alone x9..x15 would be
 * free there (never written by ipa_leaf).
 */
#include <stdint.h>

uint64_t ipa_caller(const uint64_t *p);

/* static: not interposable even in PIC code, so GCC uses its clobber set */
static __attribute__((noinline)) uint64_t ipa_leaf(uint64_t x)
{
	register uint64_t a asm("x16") = x * 3;
	register uint64_t b asm("x17") = x + 7;

	/* x16 and x17 live here: the probe site */
	asm volatile(".globl ipa_leaf_site\nipa_leaf_site:" : "+r"(a), "+r"(b));
	return a + b + x;
}

/* not reassociable: each value must survive the call on its own */
#define MIX(r, v) ((r) = ((r) ^ (v)) * 0x9e3779b97f4a7c15ull)

__attribute__((noinline)) uint64_t ipa_caller(const uint64_t *p)
{
	uint64_t v0 = p[0], v1 = p[1], v2 = p[2], v3 = p[3], v4 = p[4], v5 = p[5], v6 = p[6],
		 v7 = p[7], v8 = p[8], v9 = p[9], v10 = p[10], v11 = p[11];
	uint64_t r = ipa_leaf(p[12]);

	MIX(r, v0), MIX(r, v1), MIX(r, v2), MIX(r, v3), MIX(r, v4), MIX(r, v5);
	MIX(r, v6), MIX(r, v7), MIX(r, v8), MIX(r, v9), MIX(r, v10), MIX(r, v11);
	return r;
}

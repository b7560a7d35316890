/* SPDX-License-Identifier: MIT */
#include "libtarget.h"

uint64_t lib_calls;

uint64_t lib_mix(uint64_t a, uint64_t b)
{
	lib_calls++;
	return a * 31 + (b ^ 0x5555);
}

/* A hidden alias: taking its address cannot resolve to a canonical PLT
 * entry of a non-PIE executable. */
extern __typeof__(lib_mix) lib_mix_local __attribute__((alias("lib_mix"), visibility("hidden")));

void *lib_mix_address(void)
{
	return (void *)lib_mix_local;
}

/* SPDX-License-Identifier: MIT */
/*
 * The host contract's defaults (host/host.h): what a host without the
 * feature does. A runtime that has it defines the function itself, which
 * replaces the weak one here at link time.
 */

#include <errno.h>
#include <stdio.h>

#include "host/host.h"
#include "host/layout.h"
#include "host/pieces.h"

/* No page protection beyond what /proc/self/maps shows (arm64 has BTI). */
__attribute__((weak)) int np_host_code_prot(uint64_t addr)
{
	(void)addr;
	return 0;
}

/* Return addresses are kept as they are (arm64 signs them, pac-ret). */
__attribute__((weak)) uint64_t np_host_ret_strip(uint64_t word)
{
	return word;
}

__attribute__((weak)) uint64_t np_host_ret_sign(uint64_t ret, uint64_t slot, unsigned pac)
{
	(void)slot;
	(void)pac;
	return ret;
}

/* The clock is the vDSO's (core/clock.c): no counter of the host's. */
__attribute__((weak)) int np_host_counter_check(char *why, size_t len)
{
	snprintf(why, len, "this host's vDSO reads the counter itself");
	return -EOPNOTSUPP;
}

/* Relocated code may clobber what the region's free-register analysis
 * found dead (arm64 narrows it). */
__attribute__((weak)) struct np_reloc_scratch np_host_tramp_scratch(const struct np_region *r)
{
	return r->scratch;
}

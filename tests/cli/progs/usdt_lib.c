/* SPDX-License-Identifier: MIT */
/* libusdt_lib.so: a USDT probe with a semaphore in a shared library, where
 * both the site and the semaphore move with the library's load address. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "progs.h"
#include "usdt.h"

unsigned short usdt_lib_lib_probe_semaphore __attribute__((unused, section(".probes")));
static long runs;

NOINLINE long usdt_lib_round(long r)
{
	if (*(volatile unsigned short *)&usdt_lib_lib_probe_semaphore) {
		STAP_PROBE2(usdt_lib, lib_probe, r, r * r);
		runs++;
	}
	return r;
}

long usdt_lib_runs(void)
{
	return runs;
}

unsigned usdt_lib_semaphore(void)
{
	return *(volatile unsigned short *)&usdt_lib_lib_probe_semaphore;
}

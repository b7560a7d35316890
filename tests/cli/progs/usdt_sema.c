/* SPDX-License-Identifier: MIT */
/* A USDT probe with a semaphore, as `dtrace -G` builds them: its arguments
 * are set up and its nop reached only while a tracer has raised the 16-bit
 * counter in the .probes section. A file of its own: <sys/sdt.h> gives
 * every probe of a translation unit a semaphore or none.
 *
 * The probe comes before the count: with the count first, GCC puts the
 * nop last before the `ret` the test of the semaphore jumps to, a branch
 * target 1 byte after it, where no jump fits and the probe is a TRAP
 * (docs/scripts.md, "USDT probes"). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "progs.h"
#include "usdt.h"

unsigned short usdt_sema_guarded_semaphore __attribute__((unused, section(".probes")));
static long runs;

NOINLINE long usdt_guarded(long r)
{
	if (*(volatile unsigned short *)&usdt_sema_guarded_semaphore) {
		STAP_PROBE1(usdt_sema, guarded, r);
		runs++;
	}
	return r;
}

long usdt_guarded_runs(void)
{
	return runs;
}

unsigned usdt_guarded_semaphore(void)
{
	return *(volatile unsigned short *)&usdt_sema_guarded_semaphore;
}

/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (<sys/sdt.h>, Debian's systemtap-sdt-dev) for the tests of
 * `nanoprobe run`'s usdt probes (test_usdt.py, test_scripts.py). Every hit
 * and argument depends only on the round number r:
 *
 *   usdt_test:tick     no argument                       once per round
 *   usdt_test:args     -r (int), r * 1000 (unsigned long), r - 5 (short)
 *   usdt_test:twice    r, then r + 100: one probe at two sites
 *   usdt_asm:forms     every operand form of x86-64 (usdt_x86_64.S); and
 *   usdt_asm:args      six of them (a second provider with a probe "args")
 *   usdt_sema:guarded  r, only while its semaphore is raised (usdt_sema.c)
 *   usdt_lib:lib_probe r, r * r, in a library, with a semaphore (usdt_lib.c)
 *
 *   usdt [ROUNDS]      ROUNDS rounds, then a summary line
 *   usdt --serve       a line "N" runs N more rounds and answers with the
 *                      summary; "sema" says the semaphores' values
 *
 * The summary counts how often each guarded probe saw its semaphore
 * raised: a tracer raises it while it is attached, and lowers it after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

#include "progs.h"
#include "usdt.h"

NOINLINE long tick(long r)
{
	STAP_PROBE(usdt_test, tick);
	return r;
}

NOINLINE long args(int a, unsigned long b, short c)
{
	STAP_PROBE3(usdt_test, args, a, b, c);
	return a + (long)b + c;
}

/* inlined twice: one probe name, two sites */
static inline __attribute__((always_inline)) long twice_site(long v)
{
	STAP_PROBE1(usdt_test, twice, v);
	return v;
}

NOINLINE long twice(long r)
{
	return twice_site(r) + twice_site(r + 100);
}

static long round_of(long r)
{
	long acc = tick(r) + args((int)-r, (unsigned long)r * 1000, (short)(r - 5)) + twice(r);
#if defined(__x86_64__)
	acc += usdt_forms(r);
#endif
	return acc + usdt_guarded(r) + usdt_lib_round(r);
}

static long rounds_done, sum;

static void run(long n)
{
	for (long i = 0; i < n; i++)
		sum += round_of(rounds_done++);
}

static void summary(void)
{
	printf("usdt: rounds=%ld guarded=%ld lib_guarded=%ld sum=%ld\n", rounds_done,
	       usdt_guarded_runs(), usdt_lib_runs(), sum);
}

int main(int argc, char **argv)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || strcmp(argv[1], "--serve")) {
		run(argc > 1 ? atol(argv[1]) : 10);
		summary();
		return 0;
	}
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "sema", 4)) {
			printf("sema=%u lib_sema=%u\n", usdt_guarded_semaphore(), usdt_lib_semaphore());
			continue;
		}
		run(atol(line));
		summary();
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* leap(depth) calls itself down to 0 and, from there, longjmps back to
 * main: its calls never return, N rounds of them; then one round that
 * returns. The command's report must say why the returns were not seen. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

static jmp_buf env;
static volatile int jump = 1;
static long (*volatile leap_p)(long); /* a real call per level */

NOINLINE long leap(long depth)
{
	if (depth == 0) {
		if (jump)
			longjmp(env, 1);
		return 0;
	}
	return 1 + leap_p(depth - 1);
}
static long (*volatile leap_p)(long) = leap;

int main(int argc, char **argv)
{
	volatile long n = argc > 1 ? atol(argv[1]) : 100, jumps = 0;
	for (volatile long i = 0; i < n; i++)
		if (setjmp(env) == 0)
			leap(3);
		else
			jumps++;
	jump = 0;
	printf("jumper: %ld jumps, then leap(3) = %ld\n", (long)jumps, leap(3));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* A long-running process for -p tests, started without nanoprobe: it reads
 * one number per line on stdin, passes it to handle(), and answers "ok N"
 * on stdout; at end of input it prints how many it handled and a checksum. */
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

NOINLINE long handle(long v)
{
	return v * v + 1;
}

int main(void)
{
	char line[64];
	long n = 0, sum = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		sum += handle(atol(line));
		printf("ok %ld\n", ++n);
	}
	printf("server: handled=%ld sum=%ld\n", n, sum);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* A program that calls a function of a library it is linked with (an
 * import: an undefined symbol of its .dynsym), found through its
 * DT_RUNPATH as the build tree gives it: `importer N` calls imported_fn
 * N times. The library also defines other_fn, which this program never
 * calls. */
#include <stdio.h>
#include <stdlib.h>

long imported_fn(long v);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1, sum = 0;
	for (long i = 0; i < n; i++)
		sum += imported_fn(i);
	printf("importer: n=%ld sum=%ld\n", n, sum);
	return 0;
}

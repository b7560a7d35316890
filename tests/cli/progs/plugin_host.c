/* SPDX-License-Identifier: MIT */
/* Loads PLUGIN with dlopen after main has started and calls plugin_fn N
 * times; with ROUNDS, does that ROUNDS times, unloading it with dlclose in
 * between (it may come back at another address). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static long run_round(const char *path, long n)
{
	long sum = 0;
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	int (*fn)(int) = (int (*)(int))dlsym(h, "plugin_fn");
	for (long i = 0; fn && i < n; i++)
		sum += fn((int)i);
	dlclose(h);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: plugin_host PLUGIN.so [N [ROUNDS]]\n");
		return 2;
	}
	long n = argc > 2 ? atol(argv[2]) : 100, rounds = argc > 3 ? atol(argv[3]) : 1, sum = 0;
	for (long r = 0; r < rounds; r++)
		sum += run_round(argv[1], n);
	printf("plugin_host: n=%ld rounds=%ld sum=%ld\n", n, rounds, sum);
	return 0;
}

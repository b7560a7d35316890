/* SPDX-License-Identifier: MIT */
/* Loads PLUGIN with dlopen after main has started, calls plugin_fn N times. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: plugin_host PLUGIN.so [N]\n");
		return 2;
	}
	long n = argc > 2 ? atol(argv[2]) : 100, sum = 0;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*fn)(int) = (int (*)(int))dlsym(h, "plugin_fn");
	for (long i = 0; fn && i < n; i++)
		sum += fn((int)i);
	printf("plugin_host: n=%ld sum=%ld\n", n, sum);
	dlclose(h);
	return 0;
}

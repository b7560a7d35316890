/* SPDX-License-Identifier: MIT */
/* libunload.so: loaded and unloaded with dlopen/dlclose by api.c. */
#include <stdint.h>

__attribute__((noinline)) uint64_t unload_mix(uint64_t a)
{
	return a * 2654435761u + 17;
}

/* SPDX-License-Identifier: MIT */
/* What every harness shares: the libFuzzer entry point, and an invariant
 * check that aborts (libFuzzer and the replay driver both report it). */
#ifndef NP_FUZZ_H
#define NP_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                    \
	do {                                                                                     \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                         \
		}                                                                                    \
	} while (0)
#endif

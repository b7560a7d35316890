/* SPDX-License-Identifier: MIT */
/* Patches no longer than the breakpoint (word_write.c), for placing one
 * region (region_write.c) and a batch of them (batch.c). */
#ifndef NP_CORE_WORD_WRITE_H
#define NP_CORE_WORD_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct np_region;

/* Patches of n regions, each no longer than the breakpoint (bytes[i] at
 * r[i]->start), written breakpoint first, step by step for all of them,
 * the other threads stopped once per step that needs it.
 * errs[i]: 0 or -errno per region. Engine lock held. */
void np_patch_words(struct np_region *const *r, const uint8_t *const *bytes, size_t n, int *errs);

#endif

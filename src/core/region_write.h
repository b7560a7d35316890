/* SPDX-License-Identifier: MIT */
/* Writing one region's patch over running code (region_write.c), for
 * placing and removing regions (region.c, batch.c). */
#ifndef NP_CORE_REGION_WRITE_H
#define NP_CORE_REGION_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_region;

/* len bytes (the jump, the breakpoint, or the original code) written at
 * region->start while other threads run: breakpoint first, or with the
 * other threads stopped where that is needed. move_threads: a thread
 * stopped strictly inside the bytes goes to its instruction's block in
 * the region's trampoline. 0, or -EAGAIN (a thread could not be moved or
 * stopped) or -errno; engine lock held. */
int np_patch_region(struct np_region *region, const uint8_t *bytes, size_t len, bool move_threads);
/* Would these bytes change what a thread coming back from a (retired)
 * trampoline lands on? Such a patch is written with the other threads
 * stopped, once none is on that way (np_threads_stop_clear). */
bool np_patch_lands_inside(const struct np_region *region, const uint8_t *bytes, size_t len);
/* A region's hop (src/plan/hop.c): its jump to the trampoline, bytes
 * (the ISA's jump_len) written breakpoint first at region->hop, with a
 * trap table entry there (the caller's); and the original bytes back once
 * the region's start holds its own code again, a thread waiting at the
 * hop moved to the site. 0, or -EAGAIN (a thread could not be moved) or
 * -errno; engine lock held. */
int np_patch_hop(struct np_region *region, const uint8_t *bytes);
int np_restore_hop(struct np_region *region);

#endif

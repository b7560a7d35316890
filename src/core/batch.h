/* SPDX-License-Identifier: MIT */
/* Batches of patches written in one pass of the patching protocol. */
#ifndef NP_CORE_BATCH_H
#define NP_CORE_BATCH_H

#include <stdbool.h>
#include <stddef.h>

struct np_region;
struct np_site;

/* Batches (batch.c, engine lock held): between begin and end, region.c
 * queues the regions it places or removes, and one pass of the patching
 * protocol writes them all (at end, or at a flush when something must see
 * them in place first). A queued region that cannot be placed is undone
 * (np_region_abandon) and failed() is told about each of its sites;
 * np_batch_end returns the first error of a removal. */
void np_batch_begin(void (*failed)(struct np_site *site, int err));
int np_batch_end(void);
bool np_batch_active(void);
bool np_batch_pending(const struct np_region *r);
void np_batch_flush(void);
int np_batch_install(struct np_region *r, bool move_threads); /* r->patch */
int np_batch_remove(struct np_region *r, size_t len);         /* r->orig */
void np_region_abandon(struct np_region *r, int err,
		       void (*failed)(struct np_site *site, int err));
void np_region_forget(struct np_region *r); /* removed: unlink, retire */

#endif

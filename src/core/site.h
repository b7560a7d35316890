/* SPDX-License-Identifier: MIT */
/* Sites and regions (probe.c, region.c, region_index.c), engine lock held. */
#ifndef NP_CORE_SITE_H
#define NP_CORE_SITE_H

#include <stdbool.h>
#include <stdint.h>

#include "host/layout.h"

struct np_site *np_site_get(uint64_t addr);
struct np_site *np_site_new(uint64_t addr);
void np_site_release(struct np_site *site);
struct np_region *np_region_find(uint64_t addr);       /* start <= addr < end */
struct np_region *np_region_overlapping(uint64_t start, uint64_t end);
/* The index of the regions in place (region_index.c). np_region_each calls
 * fn on every region overlapping [lo, hi), the latest linked first in each
 * page, until fn returns true (then it returns true); fn must not link or
 * unlink. */
int np_region_link(struct np_region *r); /* 0 or -ENOMEM */
void np_region_unlink(struct np_region *r);
/* Out of the index by its start only: a hop left in place (region.c). */
void np_region_unlink_start(struct np_region *r);
/* The region whose hop (its jump's dead bytes elsewhere, src/plan/hop.c)
 * overlaps [lo, hi), the lowest such hop, or NULL. */
struct np_region *np_region_hop_over(uint64_t lo, uint64_t hi);
bool np_region_each(uint64_t lo, uint64_t hi, bool (*fn)(struct np_region *r, void *cookie),
		    void *cookie);
/* Which of r's displaced instructions starts at pc, or -1. */
int np_region_insn_index(const struct np_region *r, uint64_t pc);
int np_region_place(struct np_site *site, struct np_probe *probe, const char *who);
int np_region_place_trap(struct np_site *site, struct np_probe *probe, const char *who);
int np_region_remove_site(struct np_site *site);
int np_region_refresh(struct np_region *region);
int np_region_refresh_after_detach(struct np_region *region); /* never fails */
int np_site_publish(struct np_site *site);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef NP_MAPS_H
#define NP_MAPS_H
#include <stdbool.h>
#include <stdint.h>

struct np_map {
	uint64_t start, end, offset;
	bool r, w, x;
	char path[256]; /* empty for anonymous memory */
};

/* Snapshot of /proc/self/maps, sorted by address (engine lock held). */
struct np_maps {
	struct np_map *v;
	int n;
};

int np_maps_read(struct np_maps *m);
void np_maps_free(struct np_maps *m);
/* The mapping that contains addr, from a snapshot refreshed when needed. */
int np_maps_lookup(uint64_t addr, struct np_map *out);
void np_maps_invalidate(void);
#endif

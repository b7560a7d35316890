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
/* The same from the snapshot as it is (read only if there is none), for
 * questions where a stale answer errs on the safe side. */
int np_maps_lookup_cached(uint64_t addr, struct np_map *out);
/* That snapshot itself, read if need be (NULL on error): valid until the
 * next np_maps_* call. */
const struct np_maps *np_maps_cached(void);
void np_maps_invalidate(void);
/* An API call that may write code begins (np_code_begin)... */
void np_maps_call_begin(void);
/* ...and wants the map as the program has it now: read again, unless it
 * was read during this call already. */
void np_maps_expire_old(void);
#endif

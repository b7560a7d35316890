/* SPDX-License-Identifier: MIT */
/*
 * The regions by address. Every attach asks which region holds an address
 * and which overlap a range, and every read of the original code (the
 * planner reads whole functions and their neighbours) overlays the bytes
 * of the regions it covers: with the regions in one list, attaching the
 * n-th probe cost O(n) and 10,000 probes took 10 s. Here a region is kept
 * in the bucket of the 4 KiB page its start lies in; as a region spans at
 * most sizeof(orig) bytes, the regions overlapping [lo, hi) are all in the
 * buckets of the pages from lo - sizeof(orig) to hi - 1, so a query looks
 * at a handful of buckets whatever the number of regions. Buckets keep
 * their regions in the order they were added and are never freed (a
 * program's code spans a bounded number of pages).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/site.h"
#include "host/layout.h"

#define PAGE_SHIFT 12
#define NHEADS 1024
#define MAX_SPAN sizeof(((struct np_region *)0)->orig)

struct bucket {
	uint64_t page;
	struct np_region **v;
	size_t n, cap;
	struct bucket *next;
};

static struct bucket *heads[NHEADS];

static struct bucket *bucket_of(uint64_t page, bool create)
{
	struct bucket **pp = &heads[(page ^ (page >> 10)) % NHEADS];
	for (struct bucket *b = *pp; b; b = b->next)
		if (b->page == page)
			return b;
	struct bucket *b = create ? calloc(1, sizeof(*b)) : NULL;
	if (b) {
		b->page = page;
		b->next = *pp;
		*pp = b;
	}
	return b;
}

int np_region_link(struct np_region *r)
{
	struct bucket *b = bucket_of(r->start >> PAGE_SHIFT, true);
	if (!b)
		return -ENOMEM;
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct np_region **v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->v = v, b->cap = cap;
	}
	b->v[b->n++] = r;
	return 0;
}

void np_region_unlink(struct np_region *r)
{
	struct bucket *b = bucket_of(r->start >> PAGE_SHIFT, false);
	for (size_t i = 0; b && i < b->n; i++)
		if (b->v[i] == r) {
			memmove(&b->v[i], &b->v[i + 1], (b->n - i - 1) * sizeof(*b->v));
			b->n--;
			return;
		}
}

bool np_region_each(uint64_t lo, uint64_t hi, bool (*fn)(struct np_region *r, void *cookie),
		    void *cookie)
{
	if (hi <= lo)
		return false;
	uint64_t first = (lo > MAX_SPAN ? lo - MAX_SPAN : 0) >> PAGE_SHIFT;
	for (uint64_t page = first; page <= (hi - 1) >> PAGE_SHIFT; page++) {
		struct bucket *b = bucket_of(page, false);
		for (size_t i = b ? b->n : 0; i-- > 0;) {
			struct np_region *r = b->v[i];
			if (r->start < hi && r->end + r->pun > lo && fn(r, cookie))
				return true;
		}
	}
	return false;
}

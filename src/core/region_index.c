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
 *
 * A region of the hop form (src/plan/hop.c) owns a second run of bytes,
 * its hop, away from its start: it is kept a second time, by the hop's
 * page, in a table of its own, which np_region_hop_over asks.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/site.h"
#include "host/host.h"
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

static struct bucket *heads[NHEADS], *hop_heads[NHEADS];

static struct bucket *bucket_in(struct bucket **table, uint64_t page, bool create)
{
	struct bucket **pp = &table[(page ^ (page >> 10)) % NHEADS];
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

static struct bucket *bucket_of(uint64_t page, bool create)
{
	return bucket_in(heads, page, create);
}

static int add_to(struct bucket *b, struct np_region *r)
{
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

static void drop_from(struct bucket *b, struct np_region *r)
{
	for (size_t i = 0; b && i < b->n; i++)
		if (b->v[i] == r) {
			memmove(&b->v[i], &b->v[i + 1], (b->n - i - 1) * sizeof(*b->v));
			b->n--;
			return;
		}
}

int np_region_link(struct np_region *r)
{
	int err = add_to(bucket_of(r->start >> PAGE_SHIFT, true), r);
	if (!err && r->hop && (err = add_to(bucket_in(hop_heads, r->hop >> PAGE_SHIFT, true), r)))
		drop_from(bucket_of(r->start >> PAGE_SHIFT, false), r);
	return err;
}

void np_region_unlink(struct np_region *r)
{
	drop_from(bucket_of(r->start >> PAGE_SHIFT, false), r);
	if (r->hop)
		drop_from(bucket_in(hop_heads, r->hop >> PAGE_SHIFT, false), r);
}

void np_region_unlink_start(struct np_region *r)
{
	drop_from(bucket_of(r->start >> PAGE_SHIFT, false), r);
}

/* The lowest hop overlapping [lo, hi) (reads of the original code walk
 * them in order). A hop is jump_len bytes, less than a page: it lies in
 * the page of its first byte or of its last. */
struct np_region *np_region_hop_over(uint64_t lo, uint64_t hi)
{
	unsigned len = np_host_isa->jump_len;
	struct np_region *best = NULL;
	if (hi <= lo)
		return NULL;
	for (uint64_t page = (lo > len ? lo - len : 0) >> PAGE_SHIFT;
	     page <= (hi - 1) >> PAGE_SHIFT; page++) {
		struct bucket *b = bucket_in(hop_heads, page, false);
		for (size_t i = 0; b && i < b->n; i++) {
			struct np_region *r = b->v[i];
			if (r->hop < hi && r->hop + len > lo && (!best || r->hop < best->hop))
				best = r;
		}
	}
	return best;
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

/* SPDX-License-Identifier: MIT */
/*
 * Reading the maps the probes write (src/agent/vm.c has the writer's
 * side). A key's slot is in the shared table; an aggregation's value is
 * the sum of every thread's entry for that slot that carries the slot's
 * current epoch (older entries were voided by delete, clear or zero).
 * Threads that exited had their entries folded into the command's own
 * area first. The memory is the program's: everything is copied before
 * use, and only offsets from our own program index it.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static const struct np_vm_map *map_desc(const struct script_rt *rt, int map)
{
	return &np_vm_maps(rt->comp->prog)[map];
}

static const uint8_t *slot_at(const struct script_rt *rt, const struct np_vm_map *m, uint32_t i)
{
	return rt->shared + m->shared_off + sizeof(struct np_vm_map_header) +
	       (uint64_t)i * m->slot_size;
}

void map_each_area(const struct script_rt *rt, void (*fn)(const uint8_t *area, void *c), void *c)
{
	if (rt->fold)
		fn(rt->fold, c);
	for (uint32_t i = 0; rt->shm && i < rt->nrings; i++) {
		struct np_ring *r = np_shm_ring(rt->shm, rt->nprobes, rt->stride, i);
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != NP_RING_FREE)
			fn(np_ring_extra(r, rt->nprobes, rt->ring_bytes), c);
	}
}

/* from's words into to's, as the aggregation combines them */
static void combine(const struct np_vm_map *m, uint64_t *to, const uint64_t *from)
{
	uint32_t words = np_vm_agg_words(m);
	switch (m->agg) {
	case VM_AGG_MIN:
	case VM_AGG_MAX:
		if (!from[0])
			return;
		if (!to[0] || (m->agg == VM_AGG_MIN ? (int64_t)from[1] < (int64_t)to[1]
						      : (int64_t)from[1] > (int64_t)to[1]))
			to[1] = from[1];
		to[0] = 1;
		return;
	default:
		for (uint32_t w = 0; w < words; w++)
			to[w] += from[w];
	}
}

struct gather {
	const struct np_vm_map *m;
	uint32_t slot, epoch;
	uint64_t *sum;
};

static void gather_area(const uint8_t *area, void *cookie)
{
	struct gather *g = cookie;
	const struct np_vm_map *m = g->m;
	uint64_t entry[1 + NP_VM_LHIST_MAX + 2];
	memcpy(entry, area + m->thread_off + (uint64_t)g->slot * m->entry_size, m->entry_size);
	if (entry[0] == g->epoch)
		combine(m, g->sum, entry + 1);
}

static int64_t sort_value(const struct np_vm_map *m, const uint64_t *w)
{
	switch (m->agg) {
	case VM_AGG_MIN: case VM_AGG_MAX: return (int64_t)w[1];
	case VM_AGG_AVG: case VM_AGG_STATS: return w[0] ? (int64_t)w[1] / (int64_t)w[0] : 0;
	case VM_AGG_HIST: case VM_AGG_LHIST: {
		int64_t total = 0;
		for (uint32_t i = 0; i < np_vm_agg_words(m); i++)
			total += (int64_t)w[i];
		return total;
	}
	}
	return (int64_t)w[0];
}

struct sort_ctx {
	const struct script_rt *rt;
	const struct map_info *mi;
	bool by_value, is_signed;
};
static struct sort_ctx sorting;

static int by_key(const struct row *a, const struct row *b)
{
	const struct map_info *mi = sorting.mi;
	uint32_t pos = 0;
	for (int k = 0; k < mi->nkeys; k++) {
		const struct type *t = &mi->keys[k];
		uint32_t size = type_size(t);
		int c;
		if (t->t == T_STR) {
			c = strncmp((const char *)a->key + pos, (const char *)b->key + pos, size);
		} else if (t->t == T_INT) {
			int64_t x, y;
			memcpy(&x, a->key + pos, 8);
			memcpy(&y, b->key + pos, 8);
			c = t->is_signed ? (x > y) - (x < y) : ((uint64_t)x > (uint64_t)y) - ((uint64_t)x < (uint64_t)y);
		} else {
			c = memcmp(a->key + pos, b->key + pos, size);
		}
		if (c)
			return c;
		pos += size;
	}
	return 0;
}

static int compare_rows(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (sorting.by_value && a->sortv != b->sortv) {
		if (sorting.is_signed)
			return a->sortv < b->sortv ? -1 : 1;
		return (uint64_t)a->sortv < (uint64_t)b->sortv ? -1 : 1;
	}
	return by_key(a, b); /* ties in key order: the same output every run */
}

size_t map_rows(const struct script_rt *rt, int map, struct row **rows, void **buf)
{
	const struct np_vm_map *m = map_desc(rt, map);
	const struct map_info *mi = &rt->prog->maps[map];
	uint32_t words = m->kind == VM_MAP_AGG ? np_vm_agg_words(m) : m->value_size / 8;
	size_t rowbytes = m->key_size + 8ull * words, n = 0;
	*rows = NULL;
	*buf = NULL;
	if (!rt->shared)
		return 0;
	uint8_t *store = malloc((size_t)m->nslots * rowbytes + 1);
	struct row *out = calloc(m->nslots, sizeof(*out));
	if (!store || !out) {
		free(store);
		free(out);
		return 0;
	}
	for (uint32_t i = 0; i < m->nslots; i++) {
		struct np_vm_slot s;
		const uint8_t *slot = slot_at(rt, m, i);
		memcpy(&s, slot, sizeof(s));
		if (s.state != VM_SLOT_READY || !s.present)
			continue;
		uint8_t *at = store + n * rowbytes;
		memcpy(at, slot + sizeof(s), m->key_size);
		uint64_t *w = (uint64_t *)(at + m->key_size);
		if (m->kind == VM_MAP_VALUE) {
			memcpy(w, slot + sizeof(s) + m->key_size, m->value_size);
		} else {
			memset(w, 0, 8ull * words);
			struct gather g = {m, i, s.epoch, w};
			map_each_area(rt, gather_area, &g);
		}
		out[n].key = at;
		out[n].words = w;
		out[n].sortv = m->kind == VM_MAP_AGG ? sort_value(m, w) : (int64_t)w[0];
		n++;
	}
	bool int_value = m->kind == VM_MAP_VALUE && mi->value.t == T_INT;
	sorting = (struct sort_ctx){rt, mi, m->kind == VM_MAP_AGG || int_value,
				   m->kind == VM_MAP_AGG
					   ? (m->agg == VM_AGG_SUM ? mi->sum_signed
								   : m->agg != VM_AGG_COUNT &&
									     m->agg != VM_AGG_HIST &&
									     m->agg != VM_AGG_LHIST)
					   : mi->value.is_signed};
	qsort(out, n, sizeof(*out), compare_rows);
	*rows = out;
	*buf = store;
	return n;
}

struct fold_ctx {
	struct script_rt *rt;
	const uint8_t *area;
};

void map_fold_area(struct script_rt *rt, const uint8_t *area)
{
	const struct np_vm_prog *prog = rt->comp->prog;
	for (uint32_t k = 0; rt->shared && rt->fold && k < prog->nmaps; k++) {
		const struct np_vm_map *m = &np_vm_maps(prog)[k];
		if (m->kind != VM_MAP_AGG)
			continue;
		for (uint32_t i = 0; i < m->nslots; i++) {
			struct np_vm_slot s;
			memcpy(&s, slot_at(rt, m, i), sizeof(s));
			if (s.state != VM_SLOT_READY)
				continue;
			uint64_t from[1 + NP_VM_LHIST_MAX + 2];
			memcpy(from, area + m->thread_off + (uint64_t)i * m->entry_size, m->entry_size);
			if (from[0] != s.epoch)
				continue;
			uint64_t *to = (uint64_t *)(rt->fold + m->thread_off + (uint64_t)i * m->entry_size);
			if (to[0] != s.epoch) {
				memset(to, 0, m->entry_size);
				to[0] = s.epoch;
			}
			combine(m, to + 1, from + 1);
		}
	}
}

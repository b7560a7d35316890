/* SPDX-License-Identifier: MIT */
/*
 * Branches from the functions around a site into it.
 *
 * The planner decodes the probed function for branch targets, but
 * hand-written code also jumps into the middle of its neighbours: glibc's
 * __mempcpy_avx512_unaligned_erms ends with a jump to the second
 * instruction of __memmove_avx512_unaligned_erms. A patch displacing that
 * instruction would send the jump into the middle of our jmp. So the
 * functions near the site are decoded too, found through the module's
 * .eh_frame_hdr search table (every function with unwind info, named or
 * not, stripped or not), and their direct branches that land just after
 * the site count as targets of the probed function.
 *
 * Only the common encoding of the table is read (what GNU ld and lld
 * write); anything else means no neighbour scan, as before.
 */
#include "core/internal.h"
#include "core/plan.h" /* np_read_original */

#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define RADIUS 4096           /* bytes of neighbours scanned on each side */
#define MAX_NEIGHBOUR 16384   /* bytes decoded of one neighbour at most */

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30

struct hdr_lookup {
	uint64_t addr;
	uint64_t hdr; /* runtime address of .eh_frame_hdr, 0 if none */
	unsigned long long adds, subs; /* modules loaded and unloaded so far */
};

static int find_hdr(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct hdr_lookup *l = cookie;
	bool mine = false;
	uint64_t hdr = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && l->addr >= lo && l->addr < lo + ph->p_memsz)
			mine = true;
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = lo;
	}
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		l->adds = info->dlpi_adds;
		l->subs = info->dlpi_subs;
	}
	if (mine)
		l->hdr = hdr;
	return mine;
}

struct fde_table {
	const int32_t *e; /* pairs: initial location, FDE; relative to base */
	uint64_t base;
	uint32_t n;
};

static bool read_table(uint64_t hdr, struct fde_table *t)
{
	const uint8_t *h = (const uint8_t *)(uintptr_t)hdr;
	if (h[0] != 1 || h[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) ||
	    h[2] != DW_EH_PE_udata4 || h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return false;
	memcpy(&t->n, h + 8, sizeof(t->n));
	t->e = (const int32_t *)(h + 12);
	t->base = hdr;
	return true;
}

static uint64_t entry_start(const struct fde_table *t, uint32_t i)
{
	return t->base + (uint64_t)(int64_t)t->e[2 * i];
}

/* The first entry starting at or after addr. */
static uint32_t first_at(const struct fde_table *t, uint64_t addr)
{
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (entry_start(t, mid) < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* --- the cache ------------------------------------------------------------
 * Attaching to every function of a library would decode each one about
 * RADIUS*2 / (function size) times. So each function is decoded once, and
 * what it branches to outside itself is kept (sorted) until a module comes
 * or goes (dl_phdr_info's adds/subs counters say when). Engine lock held. */
struct cache {
	uint64_t *scanned; /* function starts already decoded, sorted */
	size_t nscanned, cap_s;
	uint64_t *targets; /* their branches out of themselves, sorted */
	size_t ntargets, cap_t;
	unsigned long long adds, subs;
};
static struct cache cache;

static bool push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		uint64_t *nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return false;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* v[0, sorted) is sorted; sort v[sorted, n) and merge the two runs. */
static void sort_tail(uint64_t *v, size_t n, size_t sorted)
{
	qsort(v + sorted, n - sorted, sizeof(*v), cmp_u64);
	uint64_t *tmp = sorted ? malloc(n * sizeof(*v)) : NULL;
	if (!tmp) {
		if (sorted)
			qsort(v, n, sizeof(*v), cmp_u64);
		return;
	}
	size_t a = 0, b = sorted, k = 0;
	while (a < sorted || b < n)
		tmp[k++] = b >= n || (a < sorted && v[a] <= v[b]) ? v[a++] : v[b++];
	memcpy(v, tmp, n * sizeof(*v));
	free(tmp);
}

static size_t lower_bound(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool scanned(uint64_t start, size_t nsorted)
{
	size_t i = lower_bound(cache.scanned, nsorted, start);
	return i < nsorted && cache.scanned[i] == start;
}

static void cache_reset_if_stale(unsigned long long adds, unsigned long long subs)
{
	if (adds == cache.adds && subs == cache.subs)
		return;
	cache.nscanned = cache.ntargets = 0;
	cache.adds = adds;
	cache.subs = subs;
}

struct range {
	uint64_t lo, hi; /* the function being decoded */
	bool ok;
};

static void keep_outside(void *cookie, uint64_t target)
{
	struct range *r = cookie;
	if ((target < r->lo || target >= r->hi) &&
	    !push(&cache.targets, &cache.ntargets, &cache.cap_t, target))
		r->ok = false;
}

static int read_code(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_read_original(addr, dst, len);
}

/* Decode [start, end) once; its outward branches join the cache. */
static void scan(uint64_t start, uint64_t end)
{
	size_t len = end - start < MAX_NEIGHBOUR ? end - start : MAX_NEIGHBOUR;
	uint8_t *code = malloc(len);
	struct range r = {start, start + len, true};
	if (!code)
		return;
	size_t before = cache.ntargets;
	if (np_read_original(start, code, len) == 0)
		np_host_isa->branch_targets(code, len, start,
					    &(struct np_mem){read_code, NULL, NULL}, keep_outside,
					    &r);
	free(code);
	if (!r.ok || !push(&cache.scanned, &cache.nscanned, &cache.cap_s, start))
		cache.ntargets = before; /* decode it again next time */
}

void np_neighbor_targets(uint64_t addr, size_t span, void (*add)(void *, uint64_t),
			 void *cookie)
{
	struct hdr_lookup l = {addr, 0, 0, 0};
	struct fde_table t;
	dl_iterate_phdr(find_hdr, &l);
	if (!l.hdr || !read_table(l.hdr, &t) || t.n == 0)
		return;
	cache_reset_if_stale(l.adds, l.subs);
	uint32_t i = first_at(&t, addr > RADIUS ? addr - RADIUS : 0);
	size_t sorted = cache.nscanned; /* scanned() searches the sorted part */
	size_t targets_sorted = cache.ntargets;
	for (; i < t.n && entry_start(&t, i) < addr + RADIUS; i++) {
		uint64_t start = entry_start(&t, i);
		uint64_t end = i + 1 < t.n ? entry_start(&t, i + 1) : start + 64;
		if (end > start && !scanned(start, sorted))
			scan(start, end); /* the site's own too: its bounds may be shorter */
	}
	if (cache.nscanned != sorted) {
		sort_tail(cache.scanned, cache.nscanned, sorted);
		sort_tail(cache.targets, cache.ntargets, targets_sorted);
	}
	for (size_t k = lower_bound(cache.targets, cache.ntargets, addr + 1);
	     k < cache.ntargets && cache.targets[k] < addr + span; k++)
		add(cookie, cache.targets[k]);
}

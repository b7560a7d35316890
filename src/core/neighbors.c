/* SPDX-License-Identifier: MIT */
/*
 * The module's branches into its functions, and its register summaries,
 * for the plans made in this process (plan_host.c).
 *
 * Every function of a module is decoded once, at the first attach in it,
 * found through the module's .eh_frame_hdr search table (fde.c: every
 * function with unwind info, named or not, stripped or not), and what it
 * branches to outside itself is kept (src/plan/targets.c): glibc's
 * __mempcpy_avx512_unaligned_erms ends with a jump to the second
 * instruction of __memmove_avx512_unaligned_erms, which a patch must not
 * displace. A table fde.c cannot read means no neighbour scan.
 *
 * That decode costs about 0.1 s for libc, and every traced process paid it
 * at its start, every exec'd one again: its result is kept between
 * processes by scan_cache.c, per module build, and read back instead
 * whenever everything it was made from is what this process has.
 *
 * On ISAs whose plans need free registers (np_isa.relocate_via) the same
 * scan can feed the module's register summaries (src/arch/regsum.h):
 * which functions some code of the module calls or jumps to directly, and
 * what each may write, over its exact FDE range, with the code between
 * them in the file's executable sections. That decodes the whole module
 * again with its registers (seconds for a libc under qemu), so it is made
 * only when a long jump lacks a register without it (np_neighbor_regsum).
 * Where any range or code cannot be read, or the file has no section
 * headers, there is no summary, and the free-register analysis assumes
 * the least.
 */
#include "arch/regsum.h"
#include "core/modules.h"
#include "core/plan_host.h" /* np_read_original */
#include "core/scan_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --- the cache ------------------------------------------------------------
 * The targets of every module scanned, sorted, in one array. A module
 * loaded later does not change the code of those already scanned; one
 * unloaded may have its addresses reused, so then everything is forgotten
 * (dl_phdr_info's subs counter says when). Engine lock held. */
struct cache {
	struct np_targets targets; /* branches out of their function */
	uint64_t *modules; /* .eh_frame_hdr of the modules scanned */
	size_t nmodules, cap_m;
	struct np_regsum **sums; /* each module's, or NULL: cap_m of them */
	bool *summed;            /* summarise() was tried for it */
	unsigned long long subs;
};
static struct cache cache;

static struct {
	unsigned scanned, loaded; /* modules decoded, read from the scan cache */
} stats;

void np_neighbor_stats(unsigned *scanned, unsigned *loaded)
{
	*scanned = stats.scanned;
	*loaded = stats.loaded;
}

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

static void cache_reset_if_stale(unsigned long long subs)
{
	if (subs == cache.subs)
		return;
	for (size_t i = 0; i < cache.nmodules && cache.sums; i++)
		np_regsum_free(cache.sums[i]);
	cache.targets.n = cache.nmodules = 0;
	cache.subs = subs;
}

/* Modules whose every function has been decoded (by .eh_frame_hdr
 * address): the index into cache.modules, or -1. */
static long module_scanned(uint64_t hdr)
{
	for (size_t i = 0; i < cache.nmodules; i++)
		if (cache.modules[i] == hdr)
			return (long)i;
	return -1;
}

#define MAX_SUMMARISED (16u << 20) /* code longer in one piece: no summary */

/* Bytes [lo, hi) to rs, a function or code no FDE bounds. */
static int add_bytes(struct np_regsum *rs, uint64_t lo, uint64_t hi, bool anon)
{
	if (hi <= lo)
		return 0;
	uint8_t *code = hi - lo <= MAX_SUMMARISED ? malloc(hi - lo) : NULL;
	int err = code ? np_read_original(lo, code, hi - lo) : -E2BIG;
	if (!err)
		err = anon ? np_regsum_add_code(rs, code, hi - lo, lo)
			   : np_regsum_add(rs, code, hi - lo, lo);
	free(code);
	return err;
}

/* Every FDE's exact range, the code between them in the executable
 * sections, the PLT sections. -errno where something cannot be read, or
 * the file's sections are unknown. */
static int summarise_into(struct np_regsum *rs, const struct np_fde_table *t)
{
	uint64_t lo[8], hi[8];
	int err = 0, n = np_symbol_sections(t->base, true, lo, hi, 8);
	for (int i = 0; i < n && !err; i++)
		err = np_regsum_add_stubs(rs, lo[i], hi[i]);
	n = np_symbol_sections(t->base, false, lo, hi, 8);
	if (n <= 0)
		return -ENOENT;
	for (int a = 1; a < n; a++) /* by address, as the FDEs are */
		for (int b = a; b > 0 && lo[b] < lo[b - 1]; b--) {
			uint64_t l = lo[b], h = hi[b];
			lo[b] = lo[b - 1], hi[b] = hi[b - 1];
			lo[b - 1] = l, hi[b - 1] = h;
		}
	uint32_t i = 0;
	for (int k = 0; k < n && !err; k++) { /* sections and FDEs: both sorted */
		uint64_t at = lo[k];
		for (; i < t->n && !err && np_fde_table_start(t, i) < hi[k]; i++) {
			uint64_t start = np_fde_table_start(t, i), end = np_fde_table_end(t, i);
			if (end < start)
				return -EINVAL;
			if (start > at)
				err = add_bytes(rs, at, start, true);
			if (!err && start >= lo[k])
				err = add_bytes(rs, start, end, false);
			at = end > at ? end : at;
		}
		if (!err && at < hi[k])
			err = add_bytes(rs, at, hi[k], true);
	}
	return err;
}

/* The module's register summaries (regsum.h); NULL where its code cannot
 * be read whole, or memory runs out. */
static struct np_regsum *summarise(const struct np_fde_table *t)
{
	struct np_regsum *rs = np_regsum_new(np_host_isa);
	if (rs && (summarise_into(rs, t) || np_regsum_finish(rs))) {
		np_regsum_free(rs);
		rs = NULL;
	}
	return rs;
}

/* Every function of the module decoded once, or read from the scan
 * cache: a branch may come from anywhere in it (a hot function and its
 * .cold part are far apart). */
static void scan_module(const struct np_fde_table *t)
{
	size_t cap = cache.cap_m;
	bool loaded;
	int err = np_module_scan(t, &cache.targets, &loaded);
	stats.loaded += loaded;
	stats.scanned += !loaded;
	if (err)
		np_logf(NP_LOG_DEBUG, "neighbour scan of the module at 0x%llx: %s",
			(unsigned long long)t->base, strerror(-err));
	if (!push(&cache.modules, &cache.nmodules, &cache.cap_m, t->base))
		return;
	if (cache.cap_m != cap || !cache.sums) {
		struct np_regsum **v = realloc(cache.sums, cache.cap_m * sizeof(*v));
		bool *b = v ? realloc(cache.summed, cache.cap_m * sizeof(*b)) : NULL;
		if (v)
			cache.sums = v;
		if (!b) { /* forget the module: it is scanned again next time */
			cache.nmodules--;
			return;
		}
		cache.summed = b;
	}
	cache.sums[cache.nmodules - 1] = NULL;
	cache.summed[cache.nmodules - 1] = false;
}

/* The module's cache slot around addr, scanning it the first time; -1
 * when it has no table fde.c can read. */
static long module_of(uint64_t addr, struct np_fde_table *t)
{
	if (!np_fde_table(addr, t) || t->n == 0)
		return -1;
	cache_reset_if_stale(t->subs);
	long m = module_scanned(t->base);
	if (m < 0) {
		scan_module(t);
		m = module_scanned(t->base);
	}
	return m;
}

const struct np_regsum *np_neighbor_regsum(uint64_t addr)
{
	struct np_fde_table t;
	long m = module_of(addr, &t);
	if (m < 0)
		return NULL;
	if (!cache.summed[m]) {
		cache.sums[m] = np_host_isa->relocate_via ? summarise(&t) : NULL;
		cache.summed[m] = true;
	}
	return cache.sums[m];
}

void np_neighbor_targets(uint64_t addr, size_t span, void (*add)(void *, uint64_t),
			 void *cookie)
{
	struct np_fde_table t;
	if (module_of(addr, &t) >= 0)
		np_targets_each(&cache.targets, addr, addr + span, add, cookie);
}

bool np_neighbor_formed(uint64_t addr, size_t span, void (*add)(void *, uint64_t), void *cookie)
{
	struct np_fde_table t;
	if (module_of(addr, &t) < 0)
		return false;
	np_targets_each_formed(&cache.targets, addr, addr + span, add, cookie);
	return true;
}

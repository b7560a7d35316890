/* SPDX-License-Identifier: MIT */
/*
 * A module's branch targets (neighbors.c), from the scan cache where it
 * holds them (scan_cache.c).
 *
 * What the decode of one function finds is a function of the bytes it
 * read: the function's own code, and the memory its jump tables and its
 * jumps through a slot name. Where every byte it read lies in the
 * module's read-only image, which the cache's key hashes (module_id.c),
 * it finds the same in every process that maps the same image: those
 * targets are kept. A function that read anything else is decoded again
 * in every process, and the file keeps only its index: a PLT entry's
 * `jmp *slot(%rip)`, or a call compiled with -fno-plt, whose GOT slot
 * holds what the loader put there for this process (where the other
 * modules landed, how the symbol was bound, which ifunc implementation
 * this CPU got). libc has a few such functions of its 3,713. The kept
 * targets and the ones decoded again are together exactly what decoding
 * the whole module here and now gives.
 */
#include "core/modules.h" /* np_fde_table */
#include "core/plan_host.h" /* np_read_original */
#include "core/scan_cache.h"
#include "host/host.h" /* np_host_isa */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Reads the original code, noting a read outside the module's image. */
struct reader {
	const struct np_module_id *id;
	bool outside;
};

static int read_noting(void *cookie, uint64_t addr, void *dst, size_t len)
{
	struct reader *r = cookie;
	if (r->id && !np_module_image_holds(r->id, addr, len))
		r->outside = true;
	return np_read_original(addr, dst, len);
}

static uint64_t *function_starts(const struct np_fde_table *t)
{
	uint64_t *starts = malloc((t->n ? t->n : 1) * sizeof(*starts));
	for (uint32_t i = 0; starts && i < t->n; i++)
		starts[i] = np_fde_table_start(t, i);
	return starts;
}

/* The kept targets, and the volatile functions decoded now, into out. */
static int from_kept(const struct np_scan_kept *kept, const uint64_t *starts, uint32_t n,
		     struct np_targets *out)
{
	struct np_mem mem = {read_noting, NULL, &(struct reader){NULL, false}};
	size_t before = out->n;
	int err = np_targets_merge(out, kept->targets, kept->count);
	for (size_t k = 0; k < kept->nvolatile && !err; k++) {
		uint32_t i = kept->volatile_fns[k];
		err = np_targets_add_function(out, np_host_isa, &mem, starts[i],
					      np_targets_function_end(starts, n, i));
	}
	np_targets_sort(out, before);
	return err;
}

/* Decode every function into out; kept gets the targets of those that
 * read only the image, and the indices of the others. */
static int scan_all(const struct np_scan_key *k, const uint64_t *starts, uint32_t n,
		    struct np_targets *out, struct np_scan_kept *kept)
{
	struct reader r = {&k->mod, false};
	struct np_mem mem = {read_noting, NULL, &r};
	struct np_targets image = {0}, rest = {0};
	uint32_t *fns = malloc((n ? n : 1) * sizeof(*fns));
	size_t nfns = 0;
	int err = fns ? 0 : -ENOMEM;
	np_targets_code_range(&image, starts, n);
	for (uint32_t i = 0; i < n && !err; i++) {
		size_t before = image.n;
		r.outside = false;
		err = np_targets_add_function(&image, np_host_isa, &mem, starts[i],
					      np_targets_function_end(starts, n, i));
		if (!err && r.outside) { /* its targets go with the others */
			fns[nfns++] = i;
			err = np_targets_merge(&rest, image.v + before, image.n - before);
			image.n = before;
		}
	}
	np_targets_sort(&image, 0);
	if (!err)
		err = np_targets_merge(out, image.v, image.n);
	if (!err)
		err = np_targets_merge(out, rest.v, rest.n);
	np_targets_free(&rest);
	*kept = (struct np_scan_kept){image.v, image.n, fns, nfns};
	if (err)
		np_scan_kept_free(kept);
	return err;
}

int np_module_scan(const struct np_fde_table *t, struct np_targets *out, bool *loaded)
{
	struct np_scan_key key;
	struct np_scan_kept kept = {0};
	uint64_t *starts = function_starts(t);
	int err = starts ? 0 : -ENOMEM;
	*loaded = false;
	if (!err)
		np_targets_code_range(out, starts, t->n); /* where formed addresses count */
	if (!err && np_scan_cache_key(t->base, t->n, &key) != 0) {
		struct np_mem mem = {read_noting, NULL, &(struct reader){NULL, false}};
		err = np_targets_add_module(out, np_host_isa, &mem, starts, t->n);
	} else if (!err && np_scan_cache_load(&key, &kept) == 0) {
		err = from_kept(&kept, starts, t->n, out);
		*loaded = true;
	} else if (!err && (err = scan_all(&key, starts, t->n, out, &kept)) == 0) {
		np_scan_cache_store(&key, &kept);
	}
	np_scan_kept_free(&kept);
	free(starts);
	return err;
}

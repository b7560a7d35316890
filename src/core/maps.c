/* SPDX-License-Identifier: MIT */
/* /proc/self/maps, parsed into a sorted array and cached between attaches. */
#include "core/maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_line(const char *line, struct np_map *m)
{
	char perms[8] = "";
	int path_at = 0;
	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m->start, &m->end,
		   perms, &m->offset, &path_at) < 4)
		return -EINVAL;
	m->r = perms[0] == 'r';
	m->w = perms[1] == 'w';
	m->x = perms[2] == 'x';
	if (path_at > 0) {
		snprintf(m->path, sizeof(m->path), "%s", line + path_at);
		m->path[strcspn(m->path, "\n")] = 0;
	}
	return 0;
}

int np_maps_read(struct np_maps *m)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int cap = 0;

	m->v = NULL;
	m->n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (m->n == cap) {
			cap = cap ? cap * 2 : 256;
			struct np_map *v = realloc(m->v, (size_t)cap * sizeof(*v));
			if (!v) {
				fclose(f);
				np_maps_free(m);
				return -ENOMEM;
			}
			m->v = v;
		}
		if (parse_line(line, &m->v[m->n]) == 0)
			m->n++;
	}
	fclose(f);
	return 0;
}

void np_maps_free(struct np_maps *m)
{
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static struct np_maps cache;
static bool cache_valid;
/* API calls begun, and the one during which the cache was read: under
 * qemu-user a read of /proc/self/maps costs about a millisecond, and one
 * attach of thousands of probes asked for it fresh thousands of times
 * (every batch flush, every search for a chunk's gap). */
static unsigned calls, read_in = ~0u;

void np_maps_call_begin(void)
{
	calls++;
}

void np_maps_expire_old(void)
{
	if (read_in != calls)
		cache_valid = false;
}

void np_maps_invalidate(void)
{
	cache_valid = false;
}

static const struct np_map *find(const struct np_maps *m, uint64_t addr)
{
	int lo = 0, hi = m->n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (addr < m->v[mid].start)
			hi = mid - 1;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

static int cache_read(void)
{
	np_maps_free(&cache);
	int err = np_maps_read(&cache);
	cache_valid = !err;
	read_in = calls;
	return err;
}

const struct np_maps *np_maps_cached(void)
{
	return cache_valid || cache_read() == 0 ? &cache : NULL;
}

int np_maps_lookup_cached(uint64_t addr, struct np_map *out)
{
	const struct np_map *m = np_maps_cached() ? find(&cache, addr) : NULL;
	if (!m)
		return -ENOENT;
	*out = *m;
	return 0;
}

int np_maps_lookup(uint64_t addr, struct np_map *out)
{
	for (int pass = 0; pass < 2; pass++) {
		if (!cache_valid || pass == 1) {
			int err = cache_read();
			if (err)
				return err;
		}
		const struct np_map *m = find(&cache, addr);
		/* A cached answer that is not code may be stale (the program
		 * unmapped a module and mapped code there since): look again. */
		if (m && (m->x || pass == 1)) {
			*out = *m;
			return 0;
		}
	}
	return -ENOENT;
}

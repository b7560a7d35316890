/* SPDX-License-Identifier: MIT */
/*
 * core/maps.c: the cached map of the address space. Within one API call
 * that may write code (np_maps_call_begin), a map read during the call
 * serves every question that wants it current (np_maps_expire_old); the
 * next call reads it again. Under qemu-user each read costs about a
 * millisecond, and one attach of thousands of probes used to read it
 * thousands of times (docs/reliability.md, the riscv64 runs).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "core/maps.h"
#include "test.h"

static bool mapped(const struct np_maps *m, uint64_t addr)
{
	for (int i = 0; i < m->n; i++)
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return true;
	return false;
}

static uint64_t map_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? 0 : (uint64_t)p;
}

TEST(a_map_read_in_this_call_serves_the_rest_of_it)
{
	np_maps_call_begin();
	np_maps_expire_old();
	const struct np_maps *m = np_maps_cached();
	CHECK(m != NULL);
	uint64_t page = map_page();
	CHECK(page != 0);
	np_maps_expire_old(); /* read during this call: kept */
	m = np_maps_cached();
	CHECK(m && !mapped(m, page));
	np_maps_call_begin(); /* the next call sees the page */
	np_maps_expire_old();
	m = np_maps_cached();
	CHECK(m && mapped(m, page));
	munmap((void *)page, 4096);
}

TEST(invalidate_reads_again_within_a_call)
{
	np_maps_call_begin();
	np_maps_expire_old();
	CHECK(np_maps_cached() != NULL);
	uint64_t page = map_page();
	np_maps_invalidate(); /* as after the engine maps a chunk */
	const struct np_maps *m = np_maps_cached();
	CHECK(m && mapped(m, page));
	munmap((void *)page, 4096);
}

TEST(the_cached_lookup_does_not_read_again_for_an_unknown_address)
{
	np_maps_call_begin();
	np_maps_expire_old();
	CHECK(np_maps_cached() != NULL);
	uint64_t page = map_page();
	struct np_map m;
	CHECK(np_maps_lookup_cached(page, &m) != 0); /* not in the map read before */
	CHECK_EQ(np_maps_lookup(page, &m), 0);       /* the full lookup reads again */
	CHECK(m.start <= page && page < m.end && m.r && !m.x);
	CHECK_EQ(np_maps_lookup_cached(page, &m), 0); /* and the cache has it now */
	munmap((void *)page, 4096);
}

TEST_MAIN()

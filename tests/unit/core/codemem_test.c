/* SPDX-License-Identifier: MIT */
/*
 * core/codemem.c: where trampoline memory goes. Above the program break
 * lies the heap's room to grow by brk; a chunk there makes the program's
 * malloc find brk failing and fall back to mmap, a change in what the
 * program does. So the room is left alone while any other gap is in
 * reach, and when none is (arm64's 128 MiB from a non-PIE program), the
 * chunk goes to the far end of the reach, not next to the break.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "core/maps.h"
#include "host/host.h"
#include "test.h"

#define CHUNK (256u * 1024) /* codemem.c's: a whole one is always a new chunk */
#define REACH (32ull << 20)

static uint64_t program_break(void)
{
	return (uint64_t)sbrk(0);
}

/* Every free page in [lo, hi) mapped PROT_NONE, so no chunk fits there. */
static void fill_gaps(uint64_t lo, uint64_t hi)
{
	struct np_maps m;
	CHECK_EQ(np_maps_read(&m), 0);
	uint64_t at = lo;
	for (int i = 0; i <= m.n && at < hi; i++) {
		uint64_t next = i < m.n ? m.v[i].start : hi;
		uint64_t end = next < hi ? next : hi;
		if (end > at)
			CHECK(mmap((void *)at, end - at, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
				   0) == (void *)at);
		if (i < m.n && m.v[i].end > at)
			at = m.v[i].end;
	}
	np_maps_free(&m);
	np_maps_invalidate();
}

TEST(the_heaps_room_is_left_alone_while_another_gap_is_in_reach)
{
	uint64_t brk = program_break();
	uint64_t at = np_codemem_alloc(brk, CHUNK, REACH);
	CHECK(at != 0);
	CHECK(at + CHUNK <= brk || at >= brk + REACH);
}

TEST(a_chunk_in_the_heaps_room_goes_to_the_far_end_of_the_reach)
{
	uint64_t brk = program_break();
	fill_gaps(brk - REACH, brk); /* nothing below the break in reach */
	uint64_t at = np_codemem_alloc(brk, CHUNK, REACH);
	CHECK(at >= brk + REACH - 2 * CHUNK);
	CHECK(at + CHUNK <= brk + REACH);
	/* the heap still grows by brk, by more than a few pages */
	CHECK(sbrk(16 << 20) != (void *)-1);
}

TEST_MAIN()

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

struct filter {
	uint64_t lo, hi;
	void (*add)(void *, uint64_t);
	void *cookie;
};

static void keep_if_inside(void *cookie, uint64_t target)
{
	struct filter *f = cookie;
	if (target > f->lo && target < f->hi)
		f->add(f->cookie, target);
}

static int read_code(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_read_original(addr, dst, len);
}

static void scan(uint64_t start, uint64_t end, struct filter *f)
{
	size_t len = end - start < MAX_NEIGHBOUR ? end - start : MAX_NEIGHBOUR;
	uint8_t *code = malloc(len);
	if (!code)
		return;
	if (np_read_original(start, code, len) == 0)
		np_host_isa->branch_targets(code, len, start,
					    &(struct np_mem){read_code, NULL, NULL},
					    keep_if_inside, f);
	free(code);
}

void np_neighbor_targets(uint64_t addr, size_t span, void (*add)(void *, uint64_t),
			 void *cookie)
{
	struct hdr_lookup l = {addr, 0};
	struct fde_table t;
	dl_iterate_phdr(find_hdr, &l);
	if (!l.hdr || !read_table(l.hdr, &t) || t.n == 0)
		return;
	struct filter f = {addr, addr + span, add, cookie};
	uint32_t i = first_at(&t, addr > RADIUS ? addr - RADIUS : 0);
	for (; i < t.n && entry_start(&t, i) < addr + RADIUS; i++) {
		uint64_t start = entry_start(&t, i);
		uint64_t end = i + 1 < t.n ? entry_start(&t, i + 1) : start + 64;
		if (end > start)
			scan(start, end, &f); /* the site's own too: its bounds may be shorter */
	}
}

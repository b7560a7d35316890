/* SPDX-License-Identifier: MIT */
/*
 * The code pointers each module holds, for the plans made in this
 * process (plan_host.c's held_targets).
 *
 * An indirect jump through a pointer loaded from memory (a tail call
 * `jmp *0x80(%rax)`) lands where some pointer the program holds points:
 * one the module's data held from the start (its relocations, applied
 * now, or a position-dependent executable's absolute words), or one code
 * formed and stored (the planner has those from the scans of code). So,
 * the first time a plan in a module meets such a jump (src/plan/view.c
 * asks only then), every aligned word of its PT_LOAD segments as they are
 * in memory is read, and those that point into its executable segments
 * are kept (src/plan/targets.c np_targets_add_held):
 * the planner keeps them out of the bytes a patch displaces. A segment
 * that cannot be read leaves the module unknown, and its loaded jumps
 * unresolved (docs/design.md, "Indirect jumps").
 *
 * The cache is the engine's, under its lock: one sorted set for every
 * module scanned; a module unloaded may have its addresses reused, so
 * then everything is forgotten (dl_phdr_info's subs counter says when).
 */
#include "core/code_write.h" /* np_code_read */
#include "core/modules.h"

#include <link.h>
#include <stddef.h>

struct module {
	uint64_t lo, hi; /* its PT_LOAD segments, first to last */
	bool known;      /* every segment read */
};

static struct {
	struct np_targets held;
	struct module *m;
	size_t n, cap;
	unsigned long long subs;
} cache;

static int read_mem(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_code_read(addr, dst, len);
}

struct lookup {
	uint64_t addr;
	struct dl_phdr_info info; /* of the module holding addr */
	bool found;
	unsigned long long subs;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct lookup *l = cookie;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		l->subs = info->dlpi_subs;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && l->addr >= lo && l->addr < lo + ph->p_memsz) {
			l->info = *info;
			l->found = true;
			return 1;
		}
	}
	return 0;
}

/* Every PT_LOAD segment's words that point into an executable one. */
static struct module scan(const struct dl_phdr_info *info)
{
	struct module m = {UINT64_MAX, 0, true};
	uint64_t code_lo = UINT64_MAX, code_hi = 0;
	struct np_mem mem = {read_mem, NULL, NULL};
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type != PT_LOAD)
			continue;
		m.lo = lo < m.lo ? lo : m.lo;
		m.hi = hi > m.hi ? hi : m.hi;
		if (ph->p_flags & PF_X) {
			code_lo = lo < code_lo ? lo : code_lo;
			code_hi = hi > code_hi ? hi : code_hi;
		}
	}
	for (int i = 0; i < info->dlpi_phnum && m.known; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD &&
		    np_targets_add_held(&cache.held, &mem, lo, lo + ph->p_memsz, code_lo, code_hi))
			m.known = false;
	}
	return m;
}

/* The cache's module holding addr, scanned the first time; NULL when no
 * module holds it or memory runs out. */
static const struct module *module_of(uint64_t addr)
{
	struct lookup l = {.addr = addr};
	dl_iterate_phdr(find_module, &l);
	if (!l.found)
		return NULL;
	if (l.subs != cache.subs) {
		cache.held.n = cache.n = 0;
		cache.subs = l.subs;
	}
	for (size_t i = 0; i < cache.n; i++)
		if (addr >= cache.m[i].lo && addr < cache.m[i].hi)
			return &cache.m[i];
	if (!np_grow(&cache.m, &cache.cap, cache.n, sizeof(*cache.m)))
		return NULL;
	cache.m[cache.n] = scan(&l.info);
	return &cache.m[cache.n++];
}

bool np_held_targets(uint64_t lo, uint64_t hi, void (*add)(void *, uint64_t), void *cookie)
{
	const struct module *m = module_of(lo);
	if (!m || !m->known || hi > m->hi)
		return false;
	np_targets_each(&cache.held, lo, hi, add, cookie);
	return true;
}

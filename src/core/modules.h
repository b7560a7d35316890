/* SPDX-License-Identifier: MIT */
/* What the program's modules say of its code: function entries (entry.c),
 * bounds and sections (symbols.c), neighbours' branches (neighbors.c), the
 * code pointers they hold (held.c), the unwind tables (fde.c). */
#ifndef NP_CORE_MODULES_H
#define NP_CORE_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h" /* np_module_features, which the runtime uses too */
#include "plan/plan.h"

/* Where an entry probe goes (entry.c): addr is a function's entry (the
 * bounds the caller gave, else the ELF symbol's); site is addr, or the
 * instruction after the entry's landing pads (arm64 bti c, paciasp). */
struct np_entry {
	uint64_t site;
	uint8_t pad;     /* the last pad's kind: enum np_landing_pad */
	uint8_t pad_len; /* site - addr */
	uint8_t ret_pac; /* the key the function signs its return address with */
	uint64_t func_end; /* the function's end, or its start when unknown */
};
bool np_entry_find(uint64_t addr, uint64_t func_start, size_t func_size, struct np_entry *out);

/* Function bounds (struct np_func_bounds: plan/plan.h). */
int np_symbol_bounds(uint64_t addr, struct np_func_bounds *out);
/* Room for one more element in the array *v (n used of *cap), doubling
 * it; false when out of memory (symbols.c). */
bool np_grow(void *v, size_t *cap, size_t n, size_t size);
/* addr is the entry of setjmp, vfork or another function that returns
 * twice (by its ELF symbol name). */
bool np_symbol_returns_twice(uint64_t addr);
/* The functions named in names[] (NULL-terminated) that the module in the
 * file path, loaded with this bias (the loader's l_addr), defines, local
 * ones included: their addresses in out[] (0: none). unnamed_unwinder: the
 * module carries a stack unwinder of its own (a static libgcc_eh, LLVM's
 * libunwind) and no symbol table to find it by. 0, or -errno. Reads only
 * the file: callable without the engine lock. */
int np_module_functions(const char *path, uint64_t bias, const char *const *names,
			uint64_t *out, bool *unnamed_unwinder);
/* Direct branches of the functions around addr (neighbors.c) that land in
 * (addr, addr + span): passed to add. */
void np_neighbor_targets(uint64_t addr, size_t span, void (*add)(void *, uint64_t),
			 void *cookie);
/* The code addresses the functions around addr form in others (the same
 * scan) that land in (addr, addr + span): passed to add; false when the
 * module was not scanned. */
bool np_neighbor_formed(uint64_t addr, size_t span, void (*add)(void *, uint64_t), void *cookie);
/* The code pointers the module around lo holds (held.c) that land in
 * (lo, hi): passed to add; false when they are not known. */
bool np_held_targets(uint64_t lo, uint64_t hi, void (*add)(void *, uint64_t), void *cookie);
/* What the functions of the module mapped at addr do to each other's
 * registers (src/arch/regsum.h), for ISAs whose plans need free
 * registers; NULL when unknown (the analysis then assumes the least). */
struct np_regsum;
const struct np_regsum *np_neighbor_regsum(uint64_t addr);
/* Modules whose neighbours were decoded, and read from the scan cache
 * (scan_cache.c), in this process so far. */
void np_neighbor_stats(unsigned *scanned, unsigned *loaded);
/* The executable sections of the ELF file mapped at addr (stubs: only
 * its PLT sections), at run-time addresses: how many were written to
 * lo[], hi[] (at most max); 0 when unknown (no section headers). */
int np_symbol_sections(uint64_t addr, bool stubs, uint64_t *lo, uint64_t *hi, int max);
/* The .eh_frame_hdr search table of the module mapped at addr (fde.c):
 * false when it has none that can be read. */
struct np_fde_table {
	const int32_t *e;        /* pairs: FDE start, FDE; relative to base */
	uint64_t base;           /* runtime address of .eh_frame_hdr */
	uint32_t n;
	unsigned long long subs; /* modules unloaded so far (dl_phdr_info) */
};
bool np_fde_table(uint64_t addr, struct np_fde_table *t);
uint64_t np_fde_table_start(const struct np_fde_table *t, uint32_t i);
/* Where the code of entry i's FDE ends (its pc_range), 0 when unreadable. */
uint64_t np_fde_table_end(const struct np_fde_table *t, uint32_t i);
/* The FDE whose range holds addr: [start, end), and where the next FDE
 * starts (0: none). Says nothing of how its code is entered. */
struct np_fde_range {
	uint64_t start, end, next;
};
bool np_fde_around(uint64_t addr, struct np_fde_range *out);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The planner (src/plan/plan.h) run on an ELF file, for `list` and
 * `analyze`: what a probe at each instruction would get, with nothing
 * attached, for any ISA this build has a pure layer for, whatever the
 * host. The plans are the engine's; what a file cannot tell is modelled:
 *   - the functions' bounds: the symbol's size, stopped at the next
 *     function's entry (as resolve.c's bounds for the engine are) and at
 *     the end of its executable section (what follows may be data, or
 *     another section's code);
 *   - no probe placed yet: no region to absorb;
 *   - the neighbours' branches from every function of the file's
 *     .eh_frame_hdr table, as the engine scans a loaded module's;
 *   - the code pointers the file holds: its segments' words and its
 *     RELA relocations' values, as the engine reads a loaded module's
 *     words after relocation;
 *   - the module's register summaries from every function of the file;
 *   - trampolines in the page below the module and the page after it
 *     (src/plan/model.c), where the engine's allocator looks first.
 */
#ifndef NP_CLI_PLAN_FILE_H
#define NP_CLI_PLAN_FILE_H
#include "plan/plan.h"
#include "symtab.h"

#define PLAN_FILE_NEXEC 16

struct plan_file {
	const struct np_symtab *st;
	const struct np_isa *isa;
	struct np_plan_places places;
	/* executable sections: padding past a function never extends beyond
	 * its section */
	uint64_t exec_lo[PLAN_FILE_NEXEC], exec_hi[PLAN_FILE_NEXEC];
	unsigned nexec;
	uint64_t eh_frame_hdr; /* its vaddr, 0: none */
	struct np_plan_host host;
	struct np_plan_realise realise;
	struct np_targets neighbors; /* with the addresses formed, tagged */
	bool scanned, neighbors_known;
	struct np_targets held; /* the code pointers the file holds */
	bool held_scanned, held_known;
	struct np_regsum *sums;
	bool summed;
};

/* The ISA of ELF machine 'machine' with a layer in this build; want, when
 * not NULL, names the one it must be. NULL with the reason in err. */
const struct np_isa *plan_file_isa(int machine, const char *want, char *err, size_t len);
/* The ISA names this build plans for: "x86_64, arm64 or riscv64". */
const char *plan_file_isa_names(void);
/* Ready f to plan st's functions for isa. 0, or -errno (its segments
 * cannot be read). */
int plan_file_open(struct plan_file *f, const struct np_symtab *st, const struct np_isa *isa);
void plan_file_close(struct plan_file *f);
/* The view of fn (flags: enum np_view_flag). 0; -ENOENT when it has no
 * bytes to plan (no size and no room, or none in the file); else -errno. */
int plan_file_view(struct plan_file *f, const struct np_sym *fn, unsigned flags,
		   struct np_fn_view *v);
/* The bytes of fn planned: [fn->addr, *end) its body, up to *limit its
 * padding. */
void plan_file_bounds(const struct plan_file *f, const struct np_sym *fn, uint64_t *end,
		      uint64_t *limit);
/* What AUTO would choose at pc of v's function. */
int plan_file_site(struct plan_file *f, struct np_fn_view *v, uint64_t pc, struct np_site_plan *s);
/* The module's register summaries (src/arch/regsum.h), made at the first
 * ask; NULL when the ISA has no register table or they cannot be made. */
const struct np_regsum *plan_file_module(struct plan_file *f);
#endif

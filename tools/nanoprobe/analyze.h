/* SPDX-License-Identifier: MIT */
/*
 * `nanoprobe analyze`: the strategy every instruction of a binary would
 * get, planned over the file's bytes for any ISA the build has a pure
 * layer for (src/arch/<isa>/), whatever the host.
 *
 * analyze_site.c plans one function; cmd_analyze.c walks the files and
 * prints. The planner follows the engine's rules (src/core/plan.c), made
 * ISA-neutral through struct np_isa, and adds what the RISC-V patch needs:
 * the free-register analysis (src/arch/freereg.h) and the two JUMP forms.
 */
#ifndef NP_CLI_ANALYZE_H
#define NP_CLI_ANALYZE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "arch/freereg.h"

enum an_kind { AN_JUMP, AN_TRAP_SIM, AN_TRAP_OOL, AN_REJECT, AN_NKINDS };

/* Where trampolines could go: the pages just below the module's first
 * and just above its last segment, which the engine's allocator tries
 * first. A file cannot tell whether they will be free; this assumes so. */
struct an_layout {
	uint64_t below, above;
	uint64_t far; /* a place beyond jal's reach, or 0: 64 MiB past the site */
	/* executable sections: padding past a function never extends beyond
	 * its section (what follows .text in the segment may be data) */
	uint64_t exec_lo[16], exec_hi[16];
	unsigned nexec;
};

/* One function: its bytes [start, limit), of which [start, end) is its
 * body (limit - end: padding up to the next symbol). */
struct an_func {
	const struct np_isa *isa;
	const struct an_layout *layout;
	uint64_t start, end, limit;
	const uint8_t *code;
	uint64_t *targets;
	size_t ntargets, cap;
	int unresolved;
	struct np_freereg fr;    /* liveness and the entry convention */
	struct np_freereg plain; /* liveness alone, as the paper's scan */
	bool have_fr;
};

struct an_site {
	uint64_t pc;
	uint8_t len;
	enum an_kind kind;
	const char *form;  /* JUMP's form: "jal", "auipc+jalr", "b", "adrp+add+br",
			    * "jmp rel32" */
	uint64_t free_in;  /* registers free at the site */
	uint64_t free_back; /* free where the jump back lands */
	uint64_t free_plain; /* free at the site by liveness alone */
	uint64_t start;     /* JUMP: where the jump goes: pc, or the instruction
			     * before when none fits at pc (plan.c) */
	uint64_t end;       /* JUMP: the displaced bytes are [start, end) */
	uint64_t place;     /* JUMP: the trampoline address planned with;
			     * TRAP out of line: the copy's */
	bool falls;         /* JUMP: the displaced code falls through to end */
	bool trap_back;     /* TRAP out of line: the copy cannot jump back and
			     * ends with a breakpoint (a second trap per hit) */
	char why[224];     /* why not JUMP (for TRAP), or why REJECTED */
};

/* Decode and analyse the function; jump tables are read through mem (the
 * file's bytes at their vaddrs). 'called': start is entered only by calls,
 * so the calling convention holds there. env: what the rest of the module
 * does to its registers (src/arch/regsum.h), or NULL. 0 or -ENOMEM. */
int an_func_init(struct an_func *f, const struct np_isa *isa, const struct an_layout *layout,
		 const uint8_t *code, uint64_t start, uint64_t end, uint64_t limit,
		 const struct np_mem *mem, bool called, const struct np_freereg_env *env);
void an_func_free(struct an_func *f);
/* Plan the site at pc, an instruction boundary of f; sets s->len (0 when
 * the bytes do not decode). */
void an_plan_site(const struct an_func *f, uint64_t pc, struct an_site *s);
/* The long JUMP form's name for an ISA: "auipc+jalr", "adrp+add+br". */
const char *an_long_form(const struct np_isa *isa);

#endif

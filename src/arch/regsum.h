/* SPDX-License-Identifier: MIT */
/*
 * What the functions of one module do to each other's registers, for the
 * free-register analysis (src/arch/freereg.h, struct np_freereg_env):
 * which functions some code of the module calls or jumps to directly, and
 * which registers each may write, its direct callees' writes included.
 *
 * Pure like the ISA code: it is fed the bytes of every function of a
 * module (the engine from live memory, analyze from a file) and the
 * ranges of its PLT stubs, and answers for one function at a time. See
 * regsum.c for why these two facts are what -fipa-ra code needs.
 */
#ifndef NP_ARCH_REGSUM_H
#define NP_ARCH_REGSUM_H

#include "arch/freereg.h"

struct np_regsum;

/* NULL when out of memory, or when the ISA has no reg_use hook. */
struct np_regsum *np_regsum_new(const struct np_isa *isa);
void np_regsum_free(struct np_regsum *s);
/* One function of the module: [code, code + len) at pc, its body exactly
 * as its symbol or FDE bounds it (its padding may be left out, never
 * another function's code). Once per function, in any order, before
 * np_regsum_finish(). 0 or -ENOMEM. */
int np_regsum_add(struct np_regsum *s, const uint8_t *code, size_t len, uint64_t pc);
/* Code of the module that is no function it knows (no symbol, no FDE:
 * the gaps between them, padding included), so that the direct calls and
 * jumps in it count: a function called from there is called directly.
 * What it writes counts for no one. 0 or -ENOMEM. */
int np_regsum_add_code(struct np_regsum *s, const uint8_t *code, size_t len, uint64_t pc);
/* [lo, hi) holds stubs that jump on through a slot the loader fills (the
 * PLT sections): a call there reaches a callee the compiler did not see,
 * so it clobbers what the convention says. 0 or -ENOMEM. */
int np_regsum_add_stubs(struct np_regsum *s, uint64_t lo, uint64_t hi);
/* After the last function: links calls to callees and propagates what
 * callees write to their callers. 0 or -ENOMEM. */
int np_regsum_finish(struct np_regsum *s);
/* The environment of the function starting at start (called: it is
 * entered by calls, not GCC's .cold part of another), for
 * np_freereg_analyse(); it points into s. */
void np_regsum_env(const struct np_regsum *s, uint64_t start, bool called,
		   struct np_freereg_env *env);

/* For the figures (analyze): functions added, those some code of the
 * module calls or jumps to directly, and direct transfers to addresses
 * that are in no code added and no stub (each makes every function count
 * as called directly). */
struct np_regsum_stats {
	size_t functions, entered, unknown_targets;
};
void np_regsum_stats(const struct np_regsum *s, struct np_regsum_stats *out);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * A bounded walk over code reachable from an entry, for the ISAs' scans
 * (vecscan.c): the addresses already seen (an open-addressing set), the
 * branch targets still to follow (a stack), and an instruction budget.
 * Pure and header-only, like the ISA code that uses it.
 */
#ifndef NP_ARCH_CODEWALK_H
#define NP_ARCH_CODEWALK_H

#include <stdbool.h>
#include <stdint.h>

#define NP_WALK_BUDGET 4096 /* instructions */
#define NP_WALK_SLOTS 8192  /* power of two */
/* Each instruction scanned fills one slot: a full table never ends mark. */
_Static_assert(NP_WALK_BUDGET < NP_WALK_SLOTS, "the budget must run out before the table fills");

struct np_walk {
	uint64_t seen[NP_WALK_SLOTS];
	uint64_t todo[256];
	unsigned ntodo, steps;
};

/* true the first time pc is seen */
static inline bool np_walk_mark(struct np_walk *w, uint64_t pc)
{
	for (unsigned i = (unsigned)(pc * 0x9e3779b97f4a7c15ull >> 51) % NP_WALK_SLOTS;;
	     i = (i + 1) % NP_WALK_SLOTS) {
		if (w->seen[i] == pc)
			return false;
		if (w->seen[i] == 0) {
			w->seen[i] = pc;
			return true;
		}
	}
}

/* pc 0 (a null slot) is unknown code: mark takes 0 for an empty slot.
 * false when pc is unknown or the stack is full. */
static inline bool np_walk_push(struct np_walk *w, uint64_t pc)
{
	if (pc == 0 || w->ntodo == sizeof(w->todo) / sizeof(w->todo[0]))
		return false;
	w->todo[w->ntodo++] = pc;
	return true;
}

static inline bool np_walk_pop(struct np_walk *w, uint64_t *pc)
{
	if (!w->ntodo)
		return false;
	*pc = w->todo[--w->ntodo];
	return true;
}

/* One more instruction: false once the budget is spent. */
static inline bool np_walk_step(struct np_walk *w)
{
	return ++w->steps <= NP_WALK_BUDGET;
}

#endif

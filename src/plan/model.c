/* SPDX-License-Identifier: MIT */
/*
 * Putting a plan in place over a file: a model of the engine's
 * trampoline memory (src/core/codemem.c, region.c's place()).
 *
 * A running process nearly always has free address space next to a
 * module, and the engine's allocator looks there first; a file cannot
 * tell, so the model assumes the page below the module and the page after
 * it (struct np_plan_places), within np_plan_reach() of the site as the
 * engine's allocations are. The short jump needs one of them; the long
 * form and an out-of-line copy with no place near go beyond the short
 * form's reach, where relocated code must reach back through free
 * registers. What the engine's trampoline builder would relocate is
 * relocated here for real, into a buffer, at the address assumed: a
 * relocation the ISA cannot make there refuses the plan as it would
 * refuse the engine's.
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdio.h>

#define FAR_OFFSET (64ull << 20) /* a place beyond jal's reach, within auipc's */

/* The assumed trampoline place within the short jump's reach of pc, or 0. */
static uint64_t near_place(const struct np_isa *isa, const struct np_plan_places *pl,
			   uint64_t pc)
{
	uint64_t reach = np_plan_reach(isa, NP_JUMP_SHORT);
	if (pl->above - pc < reach) /* above: the farther end of the patch counts */
		return pl->above;
	if (pc - pl->below <= reach)
		return pl->below;
	return 0;
}

/* A place beyond the short jump's reach (64 MiB for jal's 1 MiB; past
 * b's 128 MiB on arm64), within the long form's. */
static uint64_t far_place(const struct np_isa *isa, const struct np_plan_places *pl, uint64_t pc)
{
	if (pl->far)
		return pl->far;
	return pc + (isa->jump_reach < FAR_OFFSET / 2 ? FAR_OFFSET : 2 * isa->jump_reach + FAR_OFFSET);
}

/* relocate() of the plan's instructions into a trampoline at dst, as the
 * engine runs it (through the registers free over the bytes and where
 * they end), jumping back when the last one falls through and back is
 * set. Padding a plan covers past the function's end is patched over,
 * never run: it is not relocated. 0 or -errno. */
static int relocate_to(const struct np_fn_view *v, const struct np_plan *p, uint64_t dst,
		       bool back)
{
	const struct np_isa *isa = v->isa;
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	uint64_t end = last->pc + last->len;
	bool falls = !(last->flags & NP_INSN_NOFALL);
	uint8_t out[256];
	struct np_reloc r = {v->code + (p->start - v->base), end - p->start, p->start, out,
			     sizeof(out), dst, back && falls ? end : 0};
	int n = isa->relocate_via ? isa->relocate_via(&r, &p->scratch) : isa->relocate(&r);
	return n < 0 ? n : 0;
}

/* Why relocate_to() failed with err. */
static int relocation_refused(const struct np_fn_view *v, const struct np_plan *p, int err,
			      char *why, size_t len)
{
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	uint64_t end = last->pc + last->len;
	if (err == -ERANGE && !np_fn_view_free_at(v, end))
		snprintf(why, len, "no free register for the jump back to 0x%llx",
			 (unsigned long long)end);
	else
		snprintf(why, len, "cannot relocate 0x%llx..0x%llx: %s",
			 (unsigned long long)p->start, (unsigned long long)end,
			 err == -ERANGE ? "a target is out of reach" : "a form that cannot move");
	return err;
}

static int model_jump(void *cookie, const struct np_fn_view *v, struct np_site_plan *s, char *why,
		      size_t len)
{
	const struct np_plan_places *pl = cookie;
	const struct np_plan *p = &s->plan;
	/* the hop form's trampoline is reached by the short patch at the hop */
	uint64_t place = p->form != NP_JUMP_LONG ? near_place(v->isa, pl, p->start)
						 : far_place(v->isa, pl, p->start);
	if (!place) {
		snprintf(why, len, "no trampoline place within %s's reach", v->isa->jump_name);
		return -ENOMEM;
	}
	int err = relocate_to(v, p, place, true);
	if (err)
		return relocation_refused(v, p, err, why, len);
	s->place = place;
	return 0;
}

/* The out-of-line copy's slot: near the code (the short jump's reach),
 * else where the long form's trampoline would go. */
static int model_trap(void *cookie, const struct np_fn_view *v, struct np_site_plan *s,
		      bool trap_back, char *why, size_t len)
{
	const struct np_plan_places *pl = cookie;
	const struct np_plan *p = &s->plan;
	if (s->kind == NP_SITE_TRAP_SIM)
		return 0; /* the trap handler performs it: no copy */
	uint64_t slot = near_place(v->isa, pl, p->start);
	if (!slot)
		slot = far_place(v->isa, pl, p->start);
	int err = relocate_to(v, p, slot, !trap_back);
	if (err)
		return relocation_refused(v, p, err, why, len);
	s->place = slot;
	return 0;
}

struct np_plan_realise np_plan_model(const struct np_plan_places *places)
{
	return (struct np_plan_realise){model_jump, model_trap, (void *)places};
}

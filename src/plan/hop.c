/* SPDX-License-Identifier: MIT */
/*
 * Hops: where a jump too short to reach a trampoline goes instead.
 *
 * On x86-64 the JUMP patch is a 5-byte jmp rel32. Two common sites have
 * no room for it: a branch lands inside the first 5 bytes (glibc's
 * memmove entry is `mov %rdi,%rax`, 3 bytes, and mempcpy jumps to the
 * instruction after it), or the function ends before them (`xor
 * %eax,%eax; ret` followed by the next function's code). A 2-byte jmp
 * rel8 fits both: it displaces only the instructions under its 2 bytes.
 * Its target is a hop: jump_len bytes within its reach (-128..+127 from
 * its end) that the program never executes, where the jmp rel32 to the
 * trampoline is written. The trampoline is the one a JUMP has: the
 * displaced instructions relocated, a jump back to the byte after them.
 * E9Patch calls this tactic T1 ("punned" jumps via a hop are its T2/T3).
 *
 * Which bytes are never executed is the rule the planner already uses
 * for the filler a patch may cover (plan.c, dead_filler; docs/design.md,
 * "Dead filler"), applied to the whole hop and the filler before it:
 *   - the filler starts right after an instruction that never falls
 *     through (jmp, ret, ud2), one of the function's own (its linear
 *     sweep from the entry), and runs through nops and traps only, to no
 *     further than the function's limit (the next thing's first byte);
 *   - no branch of the function or of its neighbours, no resolved jump
 *     table entry, no held code pointer lands anywhere from the filler's
 *     first byte to the hop's last (one landing before the hop would run
 *     the filler into it);
 *   - the function has no indirect jump left unresolved (it could land
 *     anywhere), and the view lost nothing to a failed allocation;
 *   - no region in place covers a byte of it: no other probe's patched
 *     or displaced bytes, no other probe's hop (the host reports hops as
 *     regions with .hop set).
 * The engine writes the hop before the jump to it, and removes it after
 * (src/core/region.c); a thread at the hop's first byte when it goes is
 * sent back to the site, whose original code is back by then.
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdio.h>

/* Bytes around a site looked at for a hop: more than any jump to a hop
 * reaches (emit_hop says which of them it does). */
#define HOP_SCAN 256

/* The end of the filler from 'from': nops and traps, up to the view's end
 * and the function's limit. */
static uint64_t filler_end(const struct np_fn_view *v, uint64_t from)
{
	struct np_insn in;
	uint64_t pc = from;
	while (np_fn_view_decode(v, pc, &in) == 0 && (in.flags & NP_INSN_PADDING) &&
	       pc + in.len <= v->fb.limit)
		pc += in.len;
	return pc;
}

static bool over_region(const struct np_fn_view *v, uint64_t start, uint64_t end)
{
	const struct np_plan_host *h = v->host;
	struct np_plan_region r;
	return h && h->region && h->region(h->cookie, start, end, &r);
}

/* The first hop in the filler [from, to), after the instruction at
 * 'nofall', that p's jump reaches: 0, or why not in *why. */
static uint64_t hop_in(const struct np_fn_view *v, const struct np_plan *p, uint64_t from,
		       uint64_t to, const char **why)
{
	const struct np_isa *isa = v->isa;
	uint8_t jmp[16];
	for (uint64_t h = from; h + isa->jump_len <= to; h++) {
		if (h < p->end && h + isa->jump_len > p->start)
			continue; /* the site's own bytes */
		if (isa->emit_hop(jmp, p->start, h) < 0)
			continue;
		if (np_fn_view_lands_in(v, from, h + isa->jump_len)) {
			*why = "a branch lands in the padding";
			return 0; /* and in the filler of every later hop */
		}
		if (over_region(v, h, h + isa->jump_len)) {
			*why = "another probe holds the padding";
			continue;
		}
		return h;
	}
	return 0;
}

int np_plan_hop(const struct np_fn_view *v, struct np_plan *p)
{
	const char *why = "no dead padding in reach";
	if (!v->fb.known || !v->nbounds)
		return snprintf(p->why, sizeof(p->why), "no hop: the function's bounds are unknown"),
		       -EOPNOTSUPP;
	if (v->unresolved)
		return snprintf(p->why, sizeof(p->why),
				"no hop: an unresolved indirect jump may land in any filler"),
		       -EOPNOTSUPP;
	uint64_t lo = p->start > v->fb.start + HOP_SCAN ? p->start - HOP_SCAN : v->fb.start;
	size_t i = np_fn_view_index(v, np_fn_view_boundary_from(v, lo));
	for (; i + 1 < v->nbounds && v->bounds[i] < p->start + HOP_SCAN; i++) {
		struct np_insn in;
		uint64_t pc = v->bounds[i];
		if (pc >= v->fb.end)
			break; /* a jump or return of the function's own only */
		if (np_fn_view_decode(v, pc, &in) || !(in.flags & NP_INSN_NOFALL))
			continue;
		uint64_t from = pc + in.len, to = filler_end(v, from);
		uint64_t h = to > from ? hop_in(v, p, from, to, &why) : 0;
		if (h) {
			p->hop = h;
			return 0;
		}
	}
	snprintf(p->why, sizeof(p->why), "no hop: %s", why);
	p->no_hop = true;
	return -EOPNOTSUPP;
}

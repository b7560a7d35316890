/* SPDX-License-Identifier: MIT */
/*
 * Where an indirect jump whose targets are unknown may land: only where
 * the stack is as high as where the jump is taken.
 *
 * Compiled code keeps one stack height (the stack pointer less its value
 * at the function's entry) at each instruction, whichever path reaches
 * it: the frame a block was compiled for is the frame it runs with, and
 * the unwind tables say as much, with one CFA rule per address for the
 * unwinder to step from anywhere. A jump does not move the stack
 * pointer, so a jump taken at height h that lands inside its own
 * function lands where the height is h: a switch's cases run in the
 * frame the switch was in, a computed goto's labels in the body's frame.
 * An unresolved jump taken after the frame is released (a tail call
 * through a pointer, at the entry's height 0 on x86-64, return address on
 * top) cannot land in the prologue bytes an entry probe displaces, which
 * run at heights 8, 16, ...; one taken in the body cannot land in the
 * prologue or the epilogue either.
 *
 * The heights come from a walk of the function from its entry along the
 * edges the scan knows (falling through, direct branches, the entries of
 * jump tables it read; not calls, whose code comes back to the next
 * instruction with the stack as it was), each instruction's effect on
 * the stack pointer and frame pointer given by np_isa.frame_effect. An
 * instruction reached with two different heights, or after a write of
 * the stack pointer the ISA does not name (alloca's sub %rax,%rsp, a
 * stack realignment) until a frame-pointer restore, has no height; nor
 * has one no known edge reaches (a switch case only its unresolved jump
 * leads to). A jump of unknown height may land anywhere, a boundary of
 * unknown height may be landed on by any jump: both keep today's
 * refusal. docs/design.md, "Indirect jumps", has the argument and the
 * cases it does not cover.
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdlib.h>

#define UNSEEN (NP_HEIGHT_UNKNOWN + 1) /* not reached yet */
#define MAX_HEIGHT (1 << 30)           /* farther from the entry: unknown */

struct walk {
	int32_t *sp, *fp;   /* per boundary */
	size_t *todo;
	bool *queued;
	size_t ntodo;
};

static int32_t plus(int32_t h, int64_t d)
{
	if (h == NP_HEIGHT_UNKNOWN || h == UNSEEN)
		return NP_HEIGHT_UNKNOWN;
	int64_t r = (int64_t)h + d;
	return r > -MAX_HEIGHT && r < MAX_HEIGHT ? (int32_t)r : NP_HEIGHT_UNKNOWN;
}

static int32_t meet(int32_t old, int32_t in)
{
	return old == UNSEEN || old == in ? in : NP_HEIGHT_UNKNOWN;
}

/* The state at boundary i joins (sp, fp); queued when it changed. */
static void reach(struct walk *w, size_t i, int32_t sp, int32_t fp)
{
	int32_t s = meet(w->sp[i], sp), f = meet(w->fp[i], fp);
	if (s == w->sp[i] && f == w->fp[i])
		return;
	w->sp[i] = s;
	w->fp[i] = f;
	if (!w->queued[i]) {
		w->queued[i] = true;
		w->todo[w->ntodo++] = i;
	}
}

/* A successor at addr, when it is a boundary of the function. */
static void reach_pc(const struct np_fn_view *v, struct walk *w, uint64_t addr, int32_t sp,
		     int32_t fp)
{
	size_t i = np_fn_view_index(v, addr);
	if (i < v->nbounds && addr < v->fb.end)
		reach(w, i, sp, fp);
}

static size_t first_edge(const struct np_fn_view *v, uint64_t from)
{
	size_t lo = 0, hi = v->nedges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->edges[mid].from < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The state after boundary i's instruction, to its successors. */
static void step(const struct np_fn_view *v, struct walk *w, size_t i)
{
	uint64_t pc = v->bounds[i];
	struct np_insn in;
	struct np_frame_effect e;
	if (np_fn_view_decode(v, pc, &in) ||
	    v->isa->frame_effect(v->code + (pc - v->base), v->len - (pc - v->base), pc, &e))
		return;
	int32_t sp = w->sp[i], fp = w->fp[i];
	int32_t nsp = e.sp == NP_FRAME_KEEP  ? sp
		      : e.sp == NP_FRAME_ADD  ? plus(sp, e.sp_delta)
		      : e.sp == NP_FRAME_FROM ? plus(fp, e.sp_delta)
					      : NP_HEIGHT_UNKNOWN;
	int32_t nfp = e.fp == NP_FRAME_KEEP  ? fp
		      : e.fp == NP_FRAME_FROM ? plus(sp, e.fp_delta)
					      : NP_HEIGHT_UNKNOWN;
	if (!(in.flags & NP_INSN_NOFALL))
		reach_pc(v, w, pc + in.len, nsp, nfp);
	if (in.flags & NP_INSN_CALL)
		return;
	if (in.flags & NP_INSN_BRANCH)
		reach_pc(v, w, in.target, nsp, nfp);
	else if (in.flags & NP_INSN_INDIRECT)
		for (size_t k = first_edge(v, pc); k < v->nedges && v->edges[k].from == pc; k++)
			reach_pc(v, w, v->edges[k].to, nsp, nfp);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* The heights the unresolved jumps are taken at, or none (jump_sp NULL)
 * when one of them has no height. */
static int jump_heights(struct np_fn_view *v)
{
	if (v->lost)
		return 0;
	int32_t *h = malloc((v->njumps + 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (size_t k = 0; k < v->njumps; k++) {
		size_t i = np_fn_view_index(v, v->jumps[k].pc);
		h[k] = i < v->nbounds ? v->sp[i] : NP_HEIGHT_UNKNOWN;
		if (h[k] == NP_HEIGHT_UNKNOWN) {
			free(h);
			return 0;
		}
	}
	np_qsort(h, v->njumps, sizeof(*h), cmp_i32);
	v->jump_sp = h;
	v->njump_sp = v->njumps;
	return 0;
}

int np_fn_view_heights(struct np_fn_view *v)
{
	struct walk w = {0};
	int err = -ENOMEM;
	if (!v->nbounds || !v->isa->frame_effect)
		return 0;
	w.sp = malloc(v->nbounds * sizeof(*w.sp));
	w.fp = malloc(v->nbounds * sizeof(*w.fp));
	w.todo = malloc(v->nbounds * sizeof(*w.todo));
	w.queued = calloc(v->nbounds, sizeof(*w.queued));
	if (w.sp && w.fp && w.todo && w.queued) {
		for (size_t i = 0; i < v->nbounds; i++)
			w.sp[i] = w.fp[i] = UNSEEN;
		reach(&w, 0, 0, NP_HEIGHT_UNKNOWN); /* the entry: the caller's frame pointer */
		while (w.ntodo) {
			size_t i = w.todo[--w.ntodo];
			w.queued[i] = false;
			step(v, &w, i);
		}
		for (size_t i = 0; i < v->nbounds; i++)
			if (w.sp[i] == UNSEEN)
				w.sp[i] = NP_HEIGHT_UNKNOWN;
		v->sp = w.sp;
		w.sp = NULL;
		err = jump_heights(v);
	}
	free(w.sp);
	free(w.fp);
	free(w.todo);
	free(w.queued);
	return err;
}

int32_t np_fn_view_height(const struct np_fn_view *v, uint64_t pc)
{
	size_t i = np_fn_view_index(v, pc);
	return v->sp && i < v->nbounds ? v->sp[i] : NP_HEIGHT_UNKNOWN;
}

bool np_fn_view_jump_may_land(const struct np_fn_view *v, uint64_t pc)
{
	if (!v->unresolved)
		return false;
	int32_t h = np_fn_view_height(v, pc);
	if (!v->jump_sp || h == NP_HEIGHT_UNKNOWN)
		return true;
	return bsearch(&h, v->jump_sp, v->njump_sp, sizeof(*v->jump_sp), cmp_i32) != NULL;
}

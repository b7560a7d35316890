/* SPDX-License-Identifier: MIT */
/*
 * Summaries of a module's functions for the free-register analysis.
 *
 * Under -fipa-ra a caller may keep a value in a caller-saved register
 * across a direct call to a function whose body its compiler saw, when
 * that function's clobber set leaves the register out (freereg.c). Two
 * facts about the module bound what such callers can rely on, and each
 * gives registers back to the analysis:
 *
 *   - who reaches a function. A compiler knows the clobber set of a
 *     function it calls directly, by its address (call, bl, jal, or a
 *     tail call's jump). Through a register or a PLT slot it knows
 *     nothing and keeps the convention, and code of another module only
 *     ever calls this one's that way. So a function that no code of its
 *     module calls or jumps to directly is reached through the convention
 *     alone: every caller-saved register but the result is dead at its
 *     returns, and the entry convention holds unrestricted.
 *   - what a function writes. Its clobber set holds every register any
 *     of its instructions writes, all that its calls through a register
 *     or the PLT may write (the convention's caller-saved set), and what
 *     its direct callees' sets hold (GCC adds the callee's set at every
 *     call, final.cc: collect_fn_hard_reg_usage). The same computed here
 *     from the bytes, to a fixed point over the call graph, is a part of
 *     that set: what a direct call to the function leaves dead in its
 *     caller, and what is dead at its returns.
 *
 * A function's writes count only over its exact body, so that no other
 * code is taken for its own: a register counted that it never writes
 * would be dead where a caller keeps it. Code the compiler did not see
 * (hand-written assembly) has no clobber set for any caller to trust:
 * its callers keep the convention, which every answer here is within.
 *
 * The code of the module that no symbol or FDE bounds (riscv64 GCC 12
 * emits no unwind info by default, and about half of Debian's riscv64
 * libc is such code) is added too, as anonymous code: a function it calls
 * directly is called directly. A direct transfer to an address in no
 * code added and no stub range (data, another section) may come from code
 * not decoded as it runs: then every function counts as called directly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch/regsum.h"

struct fn {
	uint64_t start, end;
	uint64_t own;    /* what it writes itself, its indirect calls included */
	uint64_t all;    /* own and its direct callees', transitively */
	size_t edge, nedge; /* its direct transfers out: s->target[edge..] */
	bool entered;    /* some other function calls or jumps here directly */
	bool anon;       /* code no symbol or FDE bounds: no function */
};

struct np_regsum {
	const struct np_isa *isa;
	struct fn *fn;
	size_t n, cap;
	uint64_t *target; /* direct transfers out of their function */
	size_t ntarget, cap_target;
	struct { uint64_t lo, hi; } *stub;
	size_t nstub, cap_stub;
	size_t unknown; /* transfers to an address no function or stub has */
};

static bool grow(void *v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 64;
	void *nv = realloc(*(void **)v, c * size);
	if (!nv)
		return false;
	*(void **)v = nv;
	*cap = c;
	return true;
}

struct np_regsum *np_regsum_new(const struct np_isa *isa)
{
	struct np_regsum *s = isa->reg_use ? calloc(1, sizeof(*s)) : NULL;
	if (s)
		s->isa = isa;
	return s;
}

void np_regsum_free(struct np_regsum *s)
{
	if (!s)
		return;
	free(s->fn);
	free(s->target);
	free(s->stub);
	free(s);
}

int np_regsum_add_stubs(struct np_regsum *s, uint64_t lo, uint64_t hi)
{
	if (!grow(&s->stub, &s->cap_stub, s->nstub, sizeof(*s->stub)))
		return -ENOMEM;
	s->stub[s->nstub].lo = lo;
	s->stub[s->nstub++].hi = hi;
	return 0;
}

static int add_target(struct np_regsum *s, struct fn *f, uint64_t to)
{
	if (to >= f->start && to < f->end)
		return 0; /* inside: a branch, or a recursive call */
	if (!grow(&s->target, &s->cap_target, s->ntarget, sizeof(*s->target)))
		return -ENOMEM;
	s->target[s->ntarget++] = to;
	f->nedge++;
	return 0;
}

/* What one instruction adds to f: its writes, and a call's or jump's
 * target. pair: the target an instruction pair gives it (0: none). */
static int add_insn(struct np_regsum *s, struct fn *f, const struct np_insn *in,
		    const struct np_reg_use *u, uint64_t pair)
{
	const struct np_isa *isa = s->isa;
	bool direct = (in->flags & NP_INSN_BRANCH) || pair;
	uint64_t to = pair ? pair : in->target;

	f->own |= u->written;
	if (in->flags & NP_INSN_CALL) {
		if (u->written & isa->millicode_link)
			return direct ? add_target(s, f, to) : 0;
		f->own |= direct ? isa->call_always : isa->call_clobbered;
	}
	if (!direct || (in->flags & NP_INSN_RET))
		return 0;
	return add_target(s, f, to);
}

static int add(struct np_regsum *s, const uint8_t *code, size_t len, uint64_t pc, bool anon);

int np_regsum_add(struct np_regsum *s, const uint8_t *code, size_t len, uint64_t pc)
{
	return add(s, code, len, pc, false);
}

int np_regsum_add_code(struct np_regsum *s, const uint8_t *code, size_t len, uint64_t pc)
{
	return add(s, code, len, pc, true);
}

static int add(struct np_regsum *s, const uint8_t *code, size_t len, uint64_t pc, bool anon)
{
	const struct np_isa *isa = s->isa;
	unsigned step = isa->insn_align ? isa->insn_align : 1;
	uint64_t pair = 0;
	struct fn *f;

	if (!grow(&s->fn, &s->cap, s->n, sizeof(*s->fn)))
		return -ENOMEM;
	f = &s->fn[s->n++];
	*f = (struct fn){.start = pc, .end = pc + len, .edge = s->ntarget, .anon = anon};
	for (size_t off = 0; off < len;) {
		struct np_insn in;
		struct np_reg_use u;

		if (isa->decode(code + off, len - off, pc + off, &in) ||
		    isa->reg_use(code + off, len - off, pc + off, &u)) {
			off += step;
			pair = 0;
			continue;
		}
		if (add_insn(s, f, &in, &u, (in.flags & NP_INSN_INDIRECT) ? pair : 0))
			return -ENOMEM;
		pair = isa->pair_target && (in.flags & NP_INSN_PCREL)
			       ? isa->pair_target(code + off, len - off, pc + off)
			       : 0;
		off += in.len;
	}
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The function starting exactly at pc, or NULL. */
static const struct fn *fn_at(const struct np_regsum *s, uint64_t pc)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->fn[mid].start < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->n && s->fn[lo].start == pc; lo++)
		if (!s->fn[lo].anon)
			return &s->fn[lo];
	return NULL;
}

/* Is pc inside some code added (a function's body or anonymous code)? */
static bool in_body(const struct np_regsum *s, uint64_t pc)
{
	size_t lo = 0, hi = s->n; /* the first starting after pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->fn[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && lo - i <= 8;) /* aliases may overlap */
		if (pc < s->fn[i].end)
			return true;
	return false;
}

static bool in_stub(const struct np_regsum *s, uint64_t pc)
{
	for (size_t i = 0; i < s->nstub; i++)
		if (pc >= s->stub[i].lo && pc < s->stub[i].hi)
			return true;
	return false;
}

/* Each transfer's target: a function (kept, and marked entered), a stub
 * (the caller's set takes the convention's), or unknown. The edge lists
 * are in the order functions were added, which the sort below keeps
 * apart from: fn.edge indexes them, so they move with their function. */
static void resolve(struct np_regsum *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct fn *f = &s->fn[i];
		for (size_t k = f->edge; k < f->edge + f->nedge; k++) {
			struct fn *g = (struct fn *)fn_at(s, s->target[k]);
			if (g)
				g->entered = true;
			else if (in_stub(s, s->target[k]))
				f->own |= s->isa->call_clobbered;
			else if (!in_body(s, s->target[k]))
				s->unknown++;
		}
	}
}

/* all(f) = own(f) and all(g) for every g f transfers to, to a fixed
 * point: the sets only grow, within call_clobbered. */
static void propagate(struct np_regsum *s)
{
	uint64_t mask = s->isa->call_clobbered;
	bool changed = true;

	for (size_t i = 0; i < s->n; i++)
		s->fn[i].all = s->fn[i].own & mask;
	while (changed) {
		changed = false;
		for (size_t i = 0; i < s->n; i++) {
			struct fn *f = &s->fn[i];
			uint64_t all = f->all;
			for (size_t k = f->edge; k < f->edge + f->nedge && all != mask; k++) {
				const struct fn *g = fn_at(s, s->target[k]);
				if (g)
					all |= g->all;
			}
			if (all != f->all) {
				f->all = all;
				changed = true;
			}
		}
	}
}

int np_regsum_finish(struct np_regsum *s)
{
	np_qsort(s->fn, s->n, sizeof(*s->fn), by_start);
	resolve(s);
	propagate(s);
	return 0;
}

static uint64_t kills(const void *cookie, uint64_t target)
{
	const struct np_regsum *s = cookie;
	const struct fn *g = fn_at(s, target);
	if (g)
		return g->all;
	return in_stub(s, target) ? s->isa->call_clobbered : 0;
}

void np_regsum_env(const struct np_regsum *s, uint64_t start, bool called,
		   struct np_freereg_env *env)
{
	const struct fn *f = fn_at(s, start);
	uint64_t dead = 0;

	if (called && f)
		dead = f->entered || s->unknown ? f->all | s->isa->call_always
						: s->isa->call_clobbered;
	*env = (struct np_freereg_env){dead & s->isa->call_clobbered, kills, s};
}

void np_regsum_stats(const struct np_regsum *s, struct np_regsum_stats *out)
{
	*out = (struct np_regsum_stats){0, 0, s->unknown};
	for (size_t i = 0; i < s->n; i++) {
		out->functions += !s->fn[i].anon;
		out->entered += s->fn[i].entered;
	}
}

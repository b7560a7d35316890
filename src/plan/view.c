/* SPDX-License-Identifier: MIT */
/*
 * The function around a site, as every plan sees it.
 *
 * Its original bytes (the host's read undoes every probe's patch), up to
 * 64 bytes past its end for the padding a tiny function's patch may use;
 * every address control can land on other than by falling through (its
 * own direct branches and resolved jump tables, and the branches of its
 * neighbours into the bytes a plan may displace: hand-written code jumps
 * into the middle of the functions beside it); and, on ISAs whose plans
 * need them, its free registers (src/arch/freereg.h), with what the
 * module does to them once a plan asks.
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PADDING_WINDOW 64 /* bytes past the end a plan may look at */

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 64;
	void *nv = realloc(*v, c * size);
	if (!nv)
		return false;
	*v = nv;
	*cap = c;
	return true;
}

static void add_target(void *cookie, uint64_t target)
{
	struct np_fn_view *v = cookie;
	if (!grow((void **)&v->targets, &v->cap, v->ntargets, sizeof(*v->targets)))
		v->lost = true; /* be conservative when out of memory */
	else
		v->targets[v->ntargets++] = target;
}

static void add_pointer(void *cookie, uint64_t target)
{
	struct np_fn_view *v = cookie;
	if (!grow((void **)&v->pointers, &v->pointer_cap, v->npointers, sizeof(*v->pointers)))
		v->lost = true;
	else
		v->pointers[v->npointers++] = target;
}

/* The function's own branches: a target, and an edge for the heights. */
static void own_target(void *cookie, uint64_t from, uint64_t target)
{
	struct np_fn_view *v = cookie;
	add_target(v, target);
	if (!grow((void **)&v->edges, &v->edge_cap, v->nedges, sizeof(*v->edges)))
		v->lost = true;
	else
		v->edges[v->nedges++] = (struct np_fn_edge){from, target};
}

/* An address the function forms inside itself: a computed goto's label,
 * a switch table's base, a return address pushed by hand. A target
 * whatever its jumps: this function's own code may go there. */
static void own_formed(void *cookie, uint64_t from, uint64_t addr)
{
	struct np_fn_view *v = cookie;
	(void)from;
	if (addr >= v->fb.start && addr < v->fb.end)
		add_target(v, addr);
}

static void own_unresolved(void *cookie, uint64_t from, uint64_t loaded_at)
{
	struct np_fn_view *v = cookie;
	if (!grow((void **)&v->jumps, &v->jump_cap, v->njumps, sizeof(*v->jumps)))
		v->lost = true;
	else
		v->jumps[v->njumps++] = (struct np_fn_jump){from, loaded_at};
}

static int host_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	const struct np_plan_host *h = cookie;
	return h->read ? h->read(h->cookie, addr, dst, len) : -EFAULT;
}

void np_fn_view_free(struct np_fn_view *v)
{
	free(v->code);
	free(v->targets);
	free(v->pointers);
	free(v->edges);
	free(v->jumps);
	free(v->bounds);
	free(v->bound_flags);
	free(v->sp);
	free(v->jump_sp);
	v->bounds = NULL;
	v->bound_flags = NULL;
	v->edges = NULL;
	v->jumps = NULL;
	v->sp = v->jump_sp = NULL;
	if (v->have_fr)
		np_freereg_release(&v->fr);
	v->code = NULL;
	v->targets = v->pointers = NULL;
	v->have_fr = false;
}

/* The bytes of the body the analyses read. */
static size_t body_len(const struct np_fn_view *v)
{
	return v->fb.end - v->base < v->len ? v->fb.end - v->base : v->len;
}

/* The free registers, for ISAs whose jumps and relocations need one (or
 * for the figures), with what the module's other functions do to them
 * when known (v->sums; else the analysis assumes the least, which is
 * sound as well). */
static void analyse_registers(struct np_fn_view *v)
{
	const struct np_isa *isa = v->isa;
	if (!isa->reg_use || (!isa->relocate_via && !(v->flags & NP_VIEW_REGISTERS)))
		return;
	v->have_fr = np_freereg_analyse(isa, v->code, body_len(v), v->base,
					v->fb.called ? NP_FREEREG_ENTRY : 0,
					v->have_env ? &v->env : NULL, &v->fr) == 0;
}

static bool ask_module(struct np_fn_view *v)
{
	const struct np_plan_host *h = v->host;
	if (v->asked_module || !v->fb.known || !h || !h->module)
		return false;
	v->asked_module = true;
	v->have_env = h->module(h->cookie, v->base, v->fb.called, &v->env);
	return v->have_env;
}

/* The instruction boundaries, once: every plan of a site asks where the
 * instruction before it starts, and whether an exclusive sequence is open
 * there (a sweep from the entry each time made planning every site of a
 * function quadratic, and decoding back over 64 bytes for each plan made
 * it slow). The sweep ends where decoding stops; that address counts as
 * a boundary, as it did for a sweep to it. */
#define EXCLUSIVE (NP_INSN_LOAD_RESERVED | NP_INSN_STORE_COND)

static int sweep(struct np_fn_view *v)
{
	size_t cap = v->len / (v->isa->insn_align ? v->isa->insn_align : 1) + 1;
	struct np_insn in;
	uint64_t pc = v->fb.start;
	v->bounds = malloc(cap * sizeof(*v->bounds));
	v->bound_flags = malloc(cap * sizeof(*v->bound_flags));
	if (!v->bounds || !v->bound_flags)
		return -ENOMEM;
	v->bounds[v->nbounds] = pc;
	v->bound_flags[v->nbounds++] = 0;
	while (v->nbounds < cap && np_fn_view_decode(v, pc, &in) == 0) {
		v->bound_flags[v->nbounds - 1] = in.flags & EXCLUSIVE;
		v->bounds[v->nbounds] = pc += in.len;
		v->bound_flags[v->nbounds++] = 0;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_edge(const void *a, const void *b)
{
	const struct np_fn_edge *x = a, *y = b;
	return x->from < y->from ? -1 : x->from > y->from;
}

/* The first of v[n] (sorted) in [lo, hi), or 0. */
static uint64_t first_in(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (v[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && v[a] < hi ? v[a] : 0;
}

uint64_t np_fn_view_lands_in(const struct np_fn_view *v, uint64_t lo, uint64_t hi)
{
	uint64_t t = first_in(v->targets, v->ntargets, lo, hi);
	uint64_t p = v->use_pointers ? first_in(v->pointers, v->npointers, lo, hi) : 0;
	return t && (!p || t < p) ? t : p;
}

/*
 * Which unresolved jumps may land anywhere (of their stack height). A
 * jump whose target was loaded whole from memory, or formed by `lea`,
 * with nothing landing between that load and the jump, lands on a code
 * pointer the program holds: where the module's data points or another
 * function formed one (the host's held pointers), where this function
 * formed one (its targets), or after a call (a return address, never
 * strictly inside a plan). Where such a jump is so resolved, the held
 * pointers are targets too (use_pointers), which a plan never has
 * strictly inside its bytes: docs/design.md, "Indirect jumps".
 */
static void count_unresolved(struct np_fn_view *v)
{
	size_t k = 0;
	for (size_t i = 0; i < v->njumps; i++) {
		const struct np_fn_jump *j = &v->jumps[i];
		bool held = v->held && j->loaded_at && j->loaded_at <= j->pc &&
			    !first_in(v->targets, v->ntargets, j->loaded_at + 1, j->pc + 1) &&
			    !first_in(v->pointers, v->npointers, j->loaded_at + 1, j->pc + 1);
		if (!held)
			v->jumps[k++] = *j;
	}
	v->use_pointers = k < v->njumps;
	v->njumps = k;
	v->unresolved = (int)k + v->lost;
}

/* Whether some unresolved jump took its target from a load: only then
 * can the module's held pointers resolve anything (count_unresolved), so
 * only then are they asked for, which costs a read of every word of the
 * module's segments at its first asking. */
static bool jumps_through_loads(const struct np_fn_view *v)
{
	for (size_t i = 0; i < v->njumps; i++)
		if (v->jumps[i].loaded_at)
			return true;
	return false;
}

/* Where control can land in the function; jump tables are read through
 * the host, from live memory or from a file. Code pointers the module
 * holds in [lo, hi) are asked for when a jump needs them. */
static int analyse(struct np_fn_view *v, uint64_t lo, uint64_t hi)
{
	const struct np_plan_host *host = v->host;
	struct np_mem mem = {host_read, NULL, (void *)host};
	struct np_branch_sink sink = {own_target, own_formed, own_unresolved, v};
	int u = v->isa->branch_targets(v->code, body_len(v), v->base, &mem, &sink);
	if (u < 0)
		v->lost = true;
	v->held = jumps_through_loads(v) && host && host->held_targets &&
		  host->held_targets(host->cookie, lo, hi, add_pointer, v);
	np_qsort(v->targets, v->ntargets, sizeof(*v->targets), cmp_u64);
	np_qsort(v->pointers, v->npointers, sizeof(*v->pointers), cmp_u64);
	np_qsort(v->edges, v->nedges, sizeof(*v->edges), cmp_edge);
	count_unresolved(v);
	int err = v->unresolved ? np_fn_view_heights(v) : 0;
	if (v->flags & NP_VIEW_MODULE)
		ask_module(v);
	analyse_registers(v);
	return err;
}

/* [base, hi) of the view: the function and its padding, or a window. */
static int window(struct np_fn_view *v, uint64_t addr, uint64_t *hi)
{
	if (v->fb.known) {
		if (v->fb.limit < v->fb.end)
			v->fb.limit = v->fb.end;
		if (addr < v->fb.start || addr >= v->fb.end)
			return -EINVAL;
		v->base = v->fb.start;
		*hi = v->fb.limit < v->fb.end + PADDING_WINDOW ? v->fb.limit
							       : v->fb.end + PADDING_WINDOW;
	} else {
		v->base = addr;
		*hi = addr + PADDING_WINDOW;
		if (v->fb.limit > addr && v->fb.limit < *hi)
			*hi = v->fb.limit;
	}
	if (*hi <= v->base || *hi - v->base > NP_PLAN_MAX_FN_BYTES)
		return -E2BIG;
	return 0;
}

int np_fn_view_load(struct np_fn_view *v, const struct np_isa *isa, const struct np_plan_host *host,
		    const struct np_func_bounds *fb, uint64_t addr, unsigned flags)
{
	uint64_t hi;
	memset(v, 0, sizeof(*v));
	v->isa = isa;
	v->host = host;
	v->flags = flags;
	v->fb = *fb;
	int err = window(v, addr, &hi);
	if (err)
		return err;
	v->len = hi - v->base;
	v->code = malloc(v->len);
	if (!v->code)
		return -ENOMEM;
	/* the mapping (or the file's bytes) may end before the window does */
	while (v->len > 0 && host_read((void *)host, v->base, v->code, v->len))
		v->len = v->len > 16 ? v->len - 16 : 0;
	if (v->len == 0)
		return -EFAULT;
	if (v->fb.known && (err = sweep(v)))
		return err;
	/* Branches from the neighbours into the bytes a plan may displace
	 * (and, asked in analyse, code pointers the module holds there): over
	 * the whole function
	 * (a view plans every site of it), or, with its bounds unknown, from
	 * the instruction before addr (where a jump goes when none fits at
	 * addr, taking addr in) to the most a jump and what it absorbs can
	 * cover after it. */
	uint64_t lo = v->fb.known ? v->fb.start : addr;
	lo = lo > isa->max_insn ? lo - isa->max_insn : 0;
	hi = v->fb.known ? v->base + v->len : addr + NP_PLAN_NEIGHBOR_SPAN;
	if (host && host->neighbor_targets)
		host->neighbor_targets(host->cookie, lo, hi, add_target, v);
	if (v->fb.known)
		return analyse(v, lo, hi);
	np_qsort(v->targets, v->ntargets, sizeof(*v->targets), cmp_u64);
	return 0;
}

/* What the module knows costs a decode of all of it once (a second or
 * more for a libc under qemu): asked for only when a plan lacks a
 * register without it. */
bool np_fn_view_use_module(struct np_fn_view *v)
{
	if (!v->isa->relocate_via || !ask_module(v))
		return false;
	if (v->have_fr)
		np_freereg_release(&v->fr);
	v->have_fr = false;
	analyse_registers(v);
	return true;
}

uint64_t np_fn_view_free_at(const struct np_fn_view *v, uint64_t pc)
{
	return v->have_fr ? np_freereg_at(&v->fr, pc) : 0;
}

int np_fn_view_decode(const struct np_fn_view *v, uint64_t pc, struct np_insn *in)
{
	if (pc < v->base || pc >= v->base + v->len)
		return -ENODATA;
	return v->isa->decode(v->code + (pc - v->base), v->len - (pc - v->base), pc, in);
}

/* The index of the first boundary at or after addr (nbounds: none). */
static size_t bound_index(const struct np_fn_view *v, uint64_t addr)
{
	size_t lo = 0, hi = v->nbounds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->bounds[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t np_fn_view_index(const struct np_fn_view *v, uint64_t pc)
{
	size_t i = v->fb.known ? bound_index(v, pc) : v->nbounds;
	return i < v->nbounds && v->bounds[i] == pc ? i : v->nbounds;
}

bool np_fn_view_is_boundary(const struct np_fn_view *v, uint64_t addr)
{
	if (!v->fb.known)
		return true; /* nothing to check against: trust the caller */
	size_t i = bound_index(v, addr);
	return i < v->nbounds && v->bounds[i] == addr;
}

uint64_t np_fn_view_previous(const struct np_fn_view *v, uint64_t addr)
{
	if (!v->fb.known || addr <= v->fb.start)
		return 0;
	size_t i = bound_index(v, addr);
	return i < v->nbounds && v->bounds[i] == addr && i ? v->bounds[i - 1] : 0;
}

bool np_fn_view_reserved_open(const struct np_fn_view *v, uint64_t from, uint64_t addr)
{
	if (!v->fb.known)
		return false;
	for (size_t i = bound_index(v, addr); i-- > 0 && v->bounds[i] >= from;)
		if (v->bound_flags[i])
			return v->bound_flags[i] & NP_INSN_LOAD_RESERVED;
	return false;
}

uint64_t np_fn_view_boundary_from(const struct np_fn_view *v, uint64_t addr)
{
	size_t i = v->fb.known ? bound_index(v, addr) : v->nbounds;
	return i < v->nbounds ? v->bounds[i] : 0;
}

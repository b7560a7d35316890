/* SPDX-License-Identifier: MIT */
/*
 * The planner's host in a live process.
 *
 * The planner (src/plan/) is pure: what it knows of this process comes
 * from here. The function's bounds (what the caller passed, the ELF
 * symbols the engine reads, the executable section's end), its bytes as
 * they were before any probe (the patches of the regions in place undone),
 * those regions themselves, the branches of the module's other functions
 * into the site (neighbors.c), the code pointers the module holds
 * (held.c) and, when a plan lacks a register, what the
 * module does to them (neighbors.c, np_neighbor_regsum). Where the plan
 * is then put in place is region.c's.
 */
#include "arch/regsum.h"
#include "core/code_write.h"
#include "core/modules.h"
#include "core/plan_host.h"
#include "core/site.h"
#include "host/layout.h"

#include <string.h>

/* Original bytes: what is mapped, with every region's patch undone. */
struct overlay {
	uint64_t addr;
	uint8_t *buf;
	size_t len;
};

static bool put_original(struct np_region *r, void *cookie)
{
	struct overlay *o = cookie;
	uint64_t end = r->end + r->pun;
	uint64_t lo = r->start > o->addr ? r->start : o->addr;
	uint64_t hi = end < o->addr + o->len ? end : o->addr + o->len;
	if (lo < hi)
		memcpy(o->buf + (lo - o->addr), r->orig + (lo - r->start), hi - lo);
	return false;
}

/* A hop's original bytes (jump_len of them), where they overlap o. */
static void put_hop_original(struct overlay *o)
{
	uint64_t at = o->addr, end = o->addr + o->len;
	struct np_region *r;
	while (at < end && (r = np_region_hop_over(at, end))) {
		uint64_t hop_end = r->hop + np_host_isa->jump_len;
		uint64_t lo = r->hop > at ? r->hop : at;
		uint64_t hi = hop_end < end ? hop_end : end;
		memcpy(o->buf + (lo - o->addr), r->hop_orig + (lo - r->hop), hi - lo);
		at = hi;
	}
}

int np_read_original(uint64_t addr, uint8_t *buf, size_t len)
{
	int err = np_code_read(addr, buf, len);
	if (err)
		return err;
	struct overlay o = {addr, buf, len};
	np_region_each(addr, addr + len, put_original, &o);
	put_hop_original(&o);
	return 0;
}

static int read_original(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_read_original(addr, dst, len);
}

static bool region_over(void *cookie, uint64_t start, uint64_t end, struct np_plan_region *out)
{
	(void)cookie;
	struct np_region *r = np_region_hop_over(start, end);
	if (r) { /* nothing may be placed over a hop */
		*out = (struct np_plan_region){r->hop, r->hop + np_host_isa->jump_len, 0, false, true,
					       false};
		return true;
	}
	r = np_region_overlapping(start, end);
	if (!r)
		return false;
	*out = (struct np_plan_region){r->start, r->end, r->pun,
				       r->strategy == NP_STRATEGY_TRAP && r->forced, false,
				       r->hop != 0};
	return true;
}

static void neighbor_targets(void *cookie, uint64_t lo, uint64_t hi,
			     void (*add)(void *to, uint64_t target), void *to)
{
	(void)cookie;
	np_neighbor_targets(lo, hi - lo, add, to);
}

/* What the module's data holds, and its other functions form. */
static bool held_targets(void *cookie, uint64_t lo, uint64_t hi,
			 void (*add)(void *to, uint64_t target), void *to)
{
	(void)cookie;
	return np_held_targets(lo, hi, add, to) && np_neighbor_formed(lo, hi - lo, add, to);
}

static bool module(void *cookie, uint64_t start, bool called, struct np_freereg_env *env)
{
	(void)cookie;
	const struct np_regsum *rs = np_neighbor_regsum(start);
	if (rs)
		np_regsum_env(rs, start, called, env);
	return rs != NULL;
}

static const struct np_plan_host live = {
	.read = read_original,
	.region = region_over,
	.neighbor_targets = neighbor_targets,
	.held_targets = held_targets,
	.module = module,
};

/* The function around addr: the caller's bounds, or the symbols'. */
static void bounds(uint64_t addr, uint64_t fstart, size_t fsize, struct np_func_bounds *fb)
{
	if (!fstart) {
		if (np_symbol_bounds(addr, fb))
			fb->known = false;
		return;
	}
	*fb = (struct np_func_bounds){fstart, fstart + fsize, fstart + fsize, true, false};
	struct np_func_bounds sym;
	if (np_symbol_bounds(addr, &sym) == 0 || sym.limit)
		fb->limit = sym.limit > fb->end ? sym.limit : fb->end;
	fb->called = sym.known && sym.start == fstart && sym.called;
	/* Bounds from the caller (an .eh_frame range, say) may run over the
	 * entry of a function the symbol tables know: code elsewhere jumps
	 * there, so the displaced bytes must stop before it. */
	if (sym.limit > addr && sym.limit < fb->end)
		fb->end = fb->limit = sym.limit;
}

int np_live_view_load(struct np_fn_view *v, uint64_t addr, uint64_t fstart, size_t fsize)
{
	struct np_func_bounds fb;
	bounds(addr, fstart, fsize, &fb);
	return np_fn_view_load(v, np_host_isa, &live, &fb, addr, 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * Regions: runs of instructions patched as one unit, and their trampolines.
 *
 * A JUMP region is rebuilt when its set of sites or their probes change
 * what its trampoline would hold (not when a probe joins a site whose
 * block calls np__dispatch with the site alone, riscv64's): a new
 * trampoline is written next to the old one, the jump at the region start
 * is re-pointed (breakpoint first, see region_write.c), and the old trampoline is
 * retired. Threads still inside the old one finish there: it still jumps
 * back to the same end address. A TRAP region is one instruction under a
 * breakpoint; its out-of-line copy never changes.
 *
 * A JUMP of the hop form (src/plan/hop.c) writes two things: the jump to
 * the trampoline at its hop, dead bytes nearby, first; then the short jump
 * to the hop at its start. Re-pointed, only the hop's jump changes. Removed,
 * the start first, then the hop (region_write.c, np_restore_hop). It is
 * never batched (its two writes are ordered), nor absorbed by another
 * region (the planner refuses: its hop would stay behind).
 */
#include "core/batch.h"
#include "core/code_write.h"
#include "core/codemem.h"
#include "core/region_write.h"
#include "core/plan_host.h"
#include "core/site.h"
#include "core/trap.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool take_first(struct np_region *r, void *cookie)
{
	*(struct np_region **)cookie = r;
	return true;
}

struct np_region *np_region_find(uint64_t addr)
{
	struct np_region *r = NULL;
	np_region_each(addr, addr + 1, take_first, &r);
	return r;
}

static bool keep_lowest(struct np_region *r, void *cookie)
{
	struct np_region **best = cookie;
	if (!*best || r->start < (*best)->start)
		*best = r;
	return false;
}

struct np_region *np_region_overlapping(uint64_t start, uint64_t end)
{
	struct np_region *best = NULL;
	np_region_each(start, end, keep_lowest, &best);
	return best;
}

int np_region_insn_index(const struct np_region *r, uint64_t addr)
{
	for (unsigned i = 0; i < r->ninsn; i++)
		if (r->insn[i].pc == addr)
			return (int)i;
	return -1;
}

/* Where r's trampoline may go: within the short patch's reach; a long
 * patch (or an out-of-line copy, which jumps back through a free register
 * when it must) anywhere within the long form's. */
static uint64_t place(const struct np_region *r, size_t cap, uint64_t *at)
{
	const uint64_t aim = np_plan_chunk_aim(np_host_isa, r->start);
	*at = 0;
	if (!r->jump_via)
		*at = np_codemem_alloc_aimed(r->start, aim, cap,
					     np_plan_reach(np_host_isa, NP_JUMP_SHORT));
	if (!*at && (r->jump_via || (r->strategy == NP_STRATEGY_TRAP && np_host_isa->emit_jump_via)))
		*at = np_codemem_alloc_aimed(r->start, aim, cap,
					     np_plan_reach(np_host_isa, NP_JUMP_LONG));
	/* an out-of-line copy that cannot jump back traps back (build) */
	if (!*at && r->strategy == NP_STRATEGY_TRAP)
		*at = np_codemem_alloc_aimed(r->start, aim, cap, 0);
	return *at;
}

typedef int make_tramp_fn(struct np_region *r, uint8_t *buf, size_t cap, uint64_t at);

/* Write a trampoline of at most cap bytes for r, made by make. */
static int build_with(struct np_region *r, size_t cap, make_tramp_fn *make)
{
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	uint64_t at, lo, size;
	if (r->pin) {
		np_plan_pun_window(r->start, r->orig, r->pin, &lo, &size);
		at = np_codemem_alloc_in(lo, size, cap);
	} else {
		place(r, cap, &at);
	}
	int n = at ? make(r, buf, cap, at) : -ENOMEM;
	if (n >= 0)
		n = np_codemem_fill(at, buf, (size_t)n) ?: n;
	free(buf);
	if (n < 0) {
		if (at)
			np_codemem_retire(at, cap);
		return n;
	}
	r->tramp = at;
	r->tramp_len = (size_t)n;
	r->tramp_cap = cap;
	np_codemem_note_tramp(at, (size_t)n, r->end); /* where it jumps back (stack_scan.c) */
	return 0;
}

/* Write a new trampoline (or out-of-line copy) for r; the old one stays.
 * trap_back: an out-of-line copy that ends with a breakpoint (the planner
 * asks for it where the one that jumps back failed with -ERANGE). */
static int build(struct np_region *r, bool trap_back)
{
	if (trap_back) /* its SIGTRAP sends the thread back to r's end (trap.c) */
		return build_with(r, np_host_trap_back_size(r), np_host_build_trap_back);
	return build_with(r, np_host_tramp_size(r), np_host_build_tramp);
}

/* The jump to r's trampoline; a pinned one must end with the code's own
 * bytes (its trampoline was placed for that). */
static uint64_t jump_target(const struct np_region *r)
{
	return r->tramp + r->tramp_off[0]; /* a block may start with data */
}

static int jump_bytes(const struct np_region *r, uint8_t *jmp)
{
	uint64_t to = jump_target(r);
	int err = r->hop       ? np_host_isa->emit_hop(jmp, r->start, r->hop)
		  : r->jump_via ? np_host_isa->emit_jump_via(jmp, 16, r->start, to, r->jump_via)
				: np_host_isa->emit_jump(jmp, r->start, to);
	if (err < 0)
		return err;
	/* The long form's emitter takes the short jump when the trampoline
	 * happens to be in its reach: the rest of the bytes the plan covers
	 * are never run (no branch lands inside them); breakpoints fill them. */
	for (unsigned n = r->jump_via ? (unsigned)err : r->jump_len; n < r->jump_len;
	     n += np_host_isa->trap_len)
		np_host_isa->emit_trap(jmp + n);
	if (r->pin && memcmp(jmp + r->pin, r->orig + r->pin, r->jump_len - r->pin) != 0)
		return -ERANGE;
	return 0;
}

/* Where the patches of the regions r replaces (absorbed, not yet dropped)
 * end, or r's jump's end when they end before it. */
struct patch_end {
	const struct np_region *r;
	uint64_t end;
};

static bool furthest_patch(struct np_region *o, void *cookie)
{
	struct patch_end *e = cookie;
	uint64_t end = o->start + (o->strategy == NP_STRATEGY_JUMP ? o->jump_len
								    : np_host_isa->trap_len);
	if (o != e->r && end > e->end)
		e->end = end;
	return false;
}

/* Does the code at r's start hold these bytes? */
static bool code_holds(const struct np_region *r, const uint8_t *bytes, size_t len)
{
	uint8_t now[sizeof(r->patch)];
	return len <= sizeof(now) && np_code_read(r->start, now, len) == 0 &&
	       memcmp(now, bytes, len) == 0;
}

/* The hop form: the hop's jump to r's (new) trampoline, then, the first
 * time, the short jump to the hop. A jump to the hop that cannot go in
 * leaves the hop as it was: nothing reached it. */
static int patch_hop_jump(struct np_region *r, const uint8_t *jmp, bool move_threads)
{
	uint8_t hop[16];
	int err = np_host_isa->emit_jump(hop, r->hop, jump_target(r));
	if (err < 0)
		return err;
	np_batch_flush();
	/* a thread at the hop meeting its breakpoint, or at the start meeting
	 * its own, goes to the trampoline, written before the table leads there */
	if ((err = np_codemem_flush()) || (err = np_trap_table_put(r->start, r)) ||
	    (err = np_trap_table_put(r->hop, r)))
		goto out;
	bool placed = code_holds(r, jmp, r->jump_len);
	if ((err = np_patch_hop(r, hop)))
		goto out;
	if (!placed && (err = np_patch_region(r, jmp, r->jump_len, move_threads))) {
		np_code_write(r->hop, r->hop_orig, np_host_isa->jump_len);
		np_sync_cores();
		goto out;
	}
	memcpy(r->patch, jmp, r->jump_len);
	r->jumps_to = jump_target(r);
out:
	np_trap_table_drop(r->hop);
	np_trap_table_drop(r->start);
	return err;
}

/* Point the jump at r's (new) trampoline, now: what a batch queued goes
 * in first. */
static int patch_jump(struct np_region *r, bool move_threads)
{
	uint8_t jmp[sizeof(r->orig)];
	int err = jump_bytes(r, jmp);
	if (err < 0)
		return err;
	if (r->hop)
		return patch_hop_jump(r, jmp, move_threads);
	/* A region r absorbs may have its jump past r's (riscv: a jal at +2
	 * under one at +0). Those bytes go back to the original with r's
	 * jump: a thread still in an old trampoline of a region at r's start
	 * lands there (at +4), on an instruction, not in the rest of a jump. */
	struct patch_end e = {r, r->start + r->jump_len};
	np_region_each(r->start, r->end, furthest_patch, &e);
	size_t len = r->jump_len;
	if (e.end > r->start + len) {
		if (e.end > r->end)
			return -ERANGE; /* a region never sticks out of one that covers it */
		len = (size_t)(e.end - r->start);
		memcpy(jmp + r->jump_len, r->orig + r->jump_len, len - r->jump_len);
	}
	np_batch_flush();
	/* its trampoline written before the trap table leads there */
	if ((err = np_codemem_flush()) || (err = np_trap_table_put(r->start, r)))
		return err;
	err = np_patch_region(r, jmp, len, move_threads);
	if (!err) {
		memcpy(r->patch, jmp, r->jump_len);
		r->jumps_to = jump_target(r);
	}
	np_trap_table_drop(r->start);
	return err;
}

/* In a batch, a region that replaces none is queued (batch.c): its jump
 * is written with the others'. */
static int queue_jump(struct np_region *r)
{
	int err = jump_bytes(r, r->patch);
	if (err < 0)
		return err;
	/* a thread in a retired trampoline may land inside it: placed alone,
	 * once no thread is on that way (region_write.c) */
	if (np_patch_lands_inside(r, r->patch, r->jump_len))
		return patch_jump(r, r->ninsn > 1);
	r->jumps_to = jump_target(r); /* what r->patch holds, once it is placed */
	return np_batch_install(r, r->ninsn > 1);
}

static void adopt_sites(struct np_region *r)
{
	for (unsigned i = 0; i < r->ninsn; i++) {
		struct np_site *s = np_site_get(r->insn[i].pc);
		if (s && s->live) {
			r->sites[i] = s;
			s->region = r;
		}
	}
}

/* Regions inside [r->start, r->end) that r replaces. A thread may have
 * trapped on one of their breakpoints just before r's jump covered it: its
 * address keeps leading into r (see trap.c) for as long as r lives. */
struct absorbed {
	struct np_region *r, *v[sizeof(((struct np_region *)0)->orig)];
	unsigned n;
};

static bool collect_absorbed(struct np_region *o, void *cookie)
{
	struct absorbed *a = cookie;
	if (o != a->r && a->n < sizeof(a->v) / sizeof(*a->v))
		a->v[a->n++] = o; /* regions do not overlap: at most one per byte */
	return false;
}

static void drop_absorbed(struct np_region *r)
{
	struct absorbed a = {.r = r};
	np_region_each(r->start, r->end, collect_absorbed, &a);
	for (unsigned i = 0; i < a.n; i++) {
		struct np_region *o = a.v[i];
		np_region_unlink(o);
		np_trap_table_move(o, r);
		np_trap_table_put(o->start, r);
		np_codemem_retire(o->tramp, o->tramp_cap);
		np_trap_defer_free(o);
	}
}

static struct np_region *region_from_plan(const struct np_plan *p, enum np_strategy s, bool forced)
{
	struct np_region *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->start = p->start;
	r->end = p->end;
	r->pun = (uint8_t)p->pun;
	r->pin = (uint8_t)p->pin;
	r->strategy = s;
	r->forced = forced;
	r->ninsn = p->ninsn;
	memcpy(r->insn, p->insn, sizeof(p->insn[0]) * p->ninsn);
	r->jump_len = s == NP_STRATEGY_JUMP ? p->jump_len : 0;
	r->jump_via = s == NP_STRATEGY_JUMP ? p->via : 0;
	r->scratch = p->scratch;
	r->hop = s == NP_STRATEGY_JUMP && p->form == NP_JUMP_HOP ? p->hop : 0;
	if (np_read_original(r->start, r->orig, r->end + r->pun - r->start) ||
	    (r->hop && np_read_original(r->hop, r->hop_orig, np_host_isa->jump_len))) {
		free(r);
		return NULL;
	}
	return r;
}

static int install_jump(const struct np_plan *p, bool forced)
{
	struct np_region *over = np_region_overlapping(p->start, p->end);
	if (over && np_batch_active()) { /* what it replaces must be in place */
		np_batch_flush();
		over = np_region_overlapping(p->start, p->end);
	}
	struct np_region *r = region_from_plan(p, NP_STRATEGY_JUMP, forced);
	if (!r)
		return -ENOMEM;
	bool absorbs = over != NULL;
	adopt_sites(r);
	int err = build(r, false);
	if (!err) {
		/* link first: np_read_original must see r's bytes from now on */
		err = np_region_link(r);
		if (!err && np_batch_active() && !absorbs && !r->hop)
			err = queue_jump(r);
		else if (!err)
			err = patch_jump(r, r->ninsn > 1 || absorbs);
		if (err)
			np_region_unlink(r);
	}
	if (err) {
		for (unsigned i = 0; i < r->ninsn; i++)
			if (r->sites[i])
				r->sites[i]->region = np_region_find(r->insn[i].pc);
		np_codemem_retire(r->tramp, r->tramp_cap);
		np_trap_defer_free(r); /* a trap handler may have found it */
		return err;
	}
	drop_absorbed(r);
	return 0;
}

static int install_trap(const struct np_plan *p, struct np_site *site, bool forced,
			bool trap_back)
{
	struct np_region *r = region_from_plan(p, NP_STRATEGY_TRAP, forced);
	uint8_t trap[16];
	if (!r)
		return -ENOMEM;
	r->sites[0] = site;
	site->region = r;
	int err = build(r, trap_back);
	if (err && r->insn[0].cls != NP_INSN_SIMULATED) {
		free(r);
		return err;
	}
	np_host_isa->emit_trap(trap);
	memcpy(r->patch, trap, np_host_isa->trap_len);
	/* indexed first, as a JUMP region is: reads of the original code see
	 * its bytes while the breakpoint goes in */
	if ((err = np_region_link(r)))
		goto fail;
	if (np_batch_active()) {
		if ((err = np_batch_install(r, false)))
			goto fail;
		return 0;
	}
	np_batch_flush();
	if ((err = np_codemem_flush()) || (err = np_trap_table_put(r->start, r)) ||
	    (err = np_patch_region(r, trap, np_host_isa->trap_len, false)))
		goto fail;
	return 0;
fail:
	np_region_unlink(r);
	np_trap_table_drop(r->start);
	site->region = NULL;
	free(r);
	return err;
}

/* How the planner's plans for one site are put in place (np_plan_realise). */
struct placing {
	struct np_site *site;
	bool forced; /* the strategy was requested: r->forced */
};

static int realise_jump(void *cookie, const struct np_fn_view *v, struct np_site_plan *s,
			char *why, size_t len)
{
	(void)v;
	struct placing *pl = cookie;
	struct np_plan pun;
	bool forced = pl->forced;
	/* ending on the call, when a trampoline fits where it must */
	if (s->plan.form == NP_JUMP_SHORT && np_plan_pun(np_host_isa, &s->plan, &pun) == 0 &&
	    install_jump(&pun, forced) == 0)
		return 0;
	int err = install_jump(&s->plan, forced);
	if (err == -ENOMEM)
		snprintf(why, len, "no trampoline memory within %s's reach",
			 np_plan_form_name(np_host_isa, s->plan.form));
	else if (err == -ERANGE)
		snprintf(why, len, "the displaced instructions cannot be relocated to the "
				   "trampoline");
	return err;
}

static int realise_trap(void *cookie, const struct np_fn_view *v, struct np_site_plan *s,
			bool trap_back, char *why, size_t len)
{
	(void)v;
	struct placing *pl = cookie;
	int err = install_trap(&s->plan, pl->site, pl->forced, trap_back);
	if (err == -ERANGE)
		snprintf(why, len, "no out-of-line slot within reach and no register known to be "
				   "free to jump back with");
	else if (err == -ENOMEM)
		snprintf(why, len, "no memory for the out-of-line copy");
	return err;
}

static const enum np_plan_want want_of[] = {
	[NP_STRATEGY_AUTO] = NP_WANT_AUTO,
	[NP_STRATEGY_JUMP] = NP_WANT_JUMP,
	[NP_STRATEGY_TRAP] = NP_WANT_TRAP,
};

/* A site with no region yet: JUMP, else TRAP, per the request, in the
 * planner's order (src/plan/site.c). forced: the strategy was requested
 * (a fallback to TRAP is not). */
static int place_new(struct np_fn_view *v, struct np_site *site, enum np_strategy want,
		     bool forced, const char *who)
{
	struct placing pl = {site, forced};
	struct np_plan_realise r = {realise_jump, realise_trap, &pl};
	struct np_site_plan s;
	int err = np_plan_site(v, site->addr, want_of[want], &r, &s);
	if (s.kind == NP_SITE_JUMP)
		return 0;
	if (want == NP_STRATEGY_JUMP || (!err && s.why[0]))
		np_logf(NP_LOG_INFO, "probe '%s': JUMP refused at 0x%llx: %s", who,
			(unsigned long long)site->addr, s.why);
	else if (err)
		np_logf(NP_LOG_ERROR, "probe '%s': cannot probe 0x%llx: %s", who,
			(unsigned long long)site->addr, s.why);
	return err;
}

/* addr lies in the displaced bytes of a JUMP region: share its trampoline. */
static int join(struct np_region *r, struct np_site *site, enum np_strategy want, const char *who)
{
	int i = np_region_insn_index(r, site->addr);
	if (i < 0 && r->strategy == NP_STRATEGY_JUMP) {
		np_logf(NP_LOG_ERROR, "probe '%s': 0x%llx is not an instruction boundary", who,
			(unsigned long long)site->addr);
		return -EINVAL;
	}
	if (want == NP_STRATEGY_TRAP || r->strategy != NP_STRATEGY_JUMP) {
		np_logf(NP_LOG_ERROR, "probe '%s': 0x%llx lies in the bytes displaced by the %s "
				      "probe at 0x%llx", who, (unsigned long long)site->addr,
			np_strategy_name(r->strategy), (unsigned long long)r->start);
		return -EBUSY;
	}
	r->sites[i] = site;
	site->region = r;
	int err = np_region_refresh(r);
	if (err) {
		r->sites[i] = NULL;
		site->region = NULL;
	}
	return err;
}

/* A probe on the instruction a punned jump ends on: the region is planned
 * again from its start, displacing that instruction too, with its
 * trampoline in the same window, so that the bytes a thread still in the
 * old trampoline jumps back to stay what they are. The new region takes
 * the old one's sites and the new site (adopt_sites). */
static int unpun(struct np_region *r, struct np_site *site, struct np_probe *probe,
		 const char *who)
{
	struct np_fn_view v;
	struct np_plan p;
	if (probe->requested == NP_STRATEGY_TRAP) {
		np_logf(NP_LOG_ERROR, "probe '%s': 0x%llx lies in the bytes of the JUMP probe at "
				      "0x%llx", who, (unsigned long long)site->addr,
			(unsigned long long)r->start);
		return -EBUSY;
	}
	int err = np_live_view_load(&v, r->start, probe->func_start, probe->func_size);
	if (!err && (err = np_plan_jump(&v, r->start, NP_JUMP_SHORT, &p)))
		np_logf(NP_LOG_INFO, "probe '%s': JUMP refused at 0x%llx: %s", who,
			(unsigned long long)site->addr, p.why);
	if (!err) {
		p.pin = r->pin;
		err = install_jump(&p, r->forced);
	}
	np_fn_view_free(&v);
	if (!err && !site->region)
		err = -EINVAL; /* not one of the new region's instructions */
	if (err)
		np_logf(NP_LOG_ERROR, "probe '%s': 0x%llx is the last byte(s) of the jump at "
				      "0x%llx, which cannot be moved off it: %s", who,
			(unsigned long long)site->addr, (unsigned long long)r->start,
			strerror(-err));
	return err;
}

/* Bytes nothing may be placed on: another region's hop. */
static int in_hop(uint64_t addr, const char *who)
{
	struct np_region *r = np_region_hop_over(addr, addr + 1);
	if (!r)
		return 0;
	np_logf(NP_LOG_ERROR, "probe '%s': 0x%llx lies in the hop of the JUMP probe at 0x%llx", who,
		(unsigned long long)addr, (unsigned long long)r->start);
	return -EBUSY;
}

int np_region_place(struct np_site *site, struct np_probe *probe, const char *who)
{
	if (in_hop(site->addr, who))
		return -EBUSY;
	struct np_region *r = np_region_find(site->addr);
	if (r && r->pun && site->addr >= r->end)
		return unpun(r, site, probe, who);
	if (r)
		return join(r, site, probe->requested, who);
	struct np_fn_view v;
	int err = np_live_view_load(&v, site->addr, probe->func_start, probe->func_size);
	if (!err && !np_fn_view_is_boundary(&v, site->addr)) {
		np_logf(NP_LOG_ERROR, "probe '%s': 0x%llx is not an instruction boundary", who,
			(unsigned long long)site->addr);
		err = -EINVAL;
	}
	if (!err)
		err = place_new(&v, site, probe->requested, probe->requested != NP_STRATEGY_AUTO, who);
	np_fn_view_free(&v);
	return err;
}

/* A breakpoint for an AUTO probe whose jump was planned but could not be
 * written (a batch's queued jump: EAGAIN, a thread stays where it would
 * land inside it), as place_new falls back when it writes the jump
 * itself. */
int np_region_place_trap(struct np_site *site, struct np_probe *probe, const char *who)
{
	struct np_fn_view v;
	if (np_region_find(site->addr) || np_region_hop_over(site->addr, site->addr + 1))
		return -EBUSY; /* another region took the address meanwhile */
	int err = np_live_view_load(&v, site->addr, probe->func_start, probe->func_size);
	if (!err)
		err = place_new(&v, site, NP_STRATEGY_TRAP, false, who);
	np_fn_view_free(&v);
	return err;
}

/* Would r's trampoline, built again where it is, be the one it has? Then
 * nothing that changed shows in it (riscv64's and arm64's site blocks pass
 * the site to np__dispatch, which reads the probes it has now; x86-64's
 * call a lone handler directly), and it stays: no trampoline memory
 * taken, no jump re-pointed, no batch flushed for it. */
static bool tramp_unchanged(const struct np_region *r)
{
	struct np_region again = *r; /* building sets tramp_off */
	size_t cap = np_host_tramp_size(r);
	uint8_t *buf = malloc(cap);
	int n = buf ? np_host_build_tramp(&again, buf, cap, r->tramp) : -ENOMEM;
	bool same = n >= 0 && (size_t)n == r->tramp_len && !r->pin &&
		    np_codemem_equals(r->tramp, buf, (size_t)n);
	free(buf);
	return same;
}

int np_region_refresh(struct np_region *r)
{
	if (r->strategy != NP_STRATEGY_JUMP)
		return 0; /* an out-of-line copy has no handler blocks */
	if (tramp_unchanged(r))
		return 0;
	uint64_t old = r->tramp;
	size_t old_len = r->tramp_len, old_cap = r->tramp_cap;
	uint32_t old_off[NP_MAX_REGION_INSNS]; /* build writes them as it goes */
	memcpy(old_off, r->tramp_off, sizeof(old_off));
	int err = build(r, false);
	if (!err && (err = patch_jump(r, false)))
		np_codemem_retire(r->tramp, r->tramp_cap);
	if (err) { /* the old trampoline stays, with its own block offsets */
		r->tramp = old;
		r->tramp_len = old_len;
		r->tramp_cap = old_cap;
		memcpy(r->tramp_off, old_off, sizeof(old_off));
		return err;
	}
	np_codemem_retire(old, old_cap);
	return 0;
}

/* After a detach, r's trampoline rebuilt without what left. When it
 * cannot be (riscv64: no trampoline memory left within jal's reach), the
 * old one stays, and that is still right: the blocks of the sites whose
 * probes went find the site's version moved on and its list empty, or
 * current, or the site reused elsewhere (np__dispatch compares its
 * address). Only a probe arriving needs the new trampoline. */
int np_region_refresh_after_detach(struct np_region *r)
{
	int err = np_region_refresh(r);
	if (err)
		np_logf(NP_LOG_INFO, "0x%llx: trampoline not rebuilt after a detach (%s); the old "
				    "one stays", (unsigned long long)r->start, strerror(-err));
	return 0;
}

static size_t patch_len(const struct np_region *r)
{
	return r->strategy == NP_STRATEGY_JUMP ? r->end + r->pun - r->start
					       : np_host_isa->trap_len;
}

/* The module may have been unloaded (dlclose) and the address reused: only
 * code that still holds our patch is ours to restore. */
static bool still_patched(const struct np_region *r)
{
	uint8_t now[sizeof(r->patch)];
	size_t len = r->strategy == NP_STRATEGY_JUMP ? r->jump_len : np_host_isa->trap_len;
	return np_code_read(r->start, now, len) == 0 && memcmp(now, r->patch, len) == 0;
}

/* A hop that could not be restored (a thread stayed at it, in a signal
 * handler of its own that interrupted it there): its jump goes to the
 * site instead, where the original code is back, which is right for that
 * thread whenever it goes on, and the hop stays, its bytes kept from
 * every other plan (the region stays in the hop index alone). */
static void leave_hop(struct np_region *r)
{
	uint8_t jmp[16];
	np_logf(NP_LOG_WARN, "0x%llx: a thread stays at the hop 0x%llx; it is left jumping back "
			     "to the site", (unsigned long long)r->start, (unsigned long long)r->hop);
	if (np_host_isa->emit_jump(jmp, r->hop, r->start) > 0 && !np_trap_table_put(r->hop, r)) {
		np_patch_hop(r, jmp);
		np_trap_table_drop(r->hop);
	}
	np_trap_table_move(r, NULL);
	np_region_unlink_start(r);
	np_codemem_retire(r->tramp, r->tramp_cap);
}

static int remove_region(struct np_region *r)
{
	int err = 0;
	if (!still_patched(r)) {
		np_logf(NP_LOG_INFO, "0x%llx: code no longer holds the patch (module unloaded?); "
				    "dropping the probe without restoring", (unsigned long long)r->start);
		goto gone;
	}
	if (np_batch_active() && !r->hop) /* restored with the batch's other regions */
		return np_batch_remove(r, patch_len(r));
	np_batch_flush();
	err = np_trap_table_put(r->start, r);
	if (!err)
		err = np_patch_region(r, r->orig, patch_len(r), false);
	if (err) {
		/* still patched: a TRAP region keeps its breakpoint's entry */
		if (r->strategy == NP_STRATEGY_JUMP)
			np_trap_table_drop(r->start);
		return err;
	}
	if (r->hop && np_restore_hop(r)) {
		leave_hop(r);
		return 0;
	}
gone:
	np_trap_table_move(r, NULL); /* its start and what it absorbed */
	np_region_forget(r);
	return 0;
}

/* Removed (its entries gone from the trap table): out of the index, its
 * trampoline retired. */
void np_region_forget(struct np_region *r)
{
	np_region_unlink(r);
	np_codemem_retire(r->tramp, r->tramp_cap);
	np_trap_defer_free(r); /* a trap handler may still hold it */
}

/* A queued region that could not be placed (nothing of it is in the code
 * and the trap table has let it go): undone, and each of its sites is
 * reported to failed(). */
void np_region_abandon(struct np_region *r, int err,
		       void (*failed)(struct np_site *site, int err))
{
	struct np_site *sites[NP_MAX_REGION_INSNS];
	unsigned n = 0;
	for (unsigned i = 0; i < r->ninsn; i++)
		if (r->sites[i]) {
			r->sites[i]->region = NULL;
			sites[n++] = r->sites[i];
		}
	np_region_forget(r);
	for (unsigned i = 0; i < n; i++)
		if (failed)
			failed(sites[i], err);
}

int np_region_remove_site(struct np_site *site)
{
	struct np_region *r = site->region;
	bool empty = true;
	if (!r)
		return 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		if (r->sites[i] == site)
			r->sites[i] = NULL;
		empty &= r->sites[i] == NULL;
	}
	site->region = NULL;
	return empty ? remove_region(r) : np_region_refresh_after_detach(r);
}

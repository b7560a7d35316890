/* SPDX-License-Identifier: MIT */
/*
 * The strategy of one site, in the engine's fixed order (trap-free first,
 * a trap as the fallback, a refusal rather than a risk), with the reason
 * each strategy before the chosen one was not taken:
 *
 *   JUMP   the short form (emit_jump: x86 jmp rel32, arm64 b, riscv jal);
 *          else, on ISAs whose longer jump needs a register (emit_jump_via:
 *          arm64 adrp+add+br, riscv auipc+jalr), the long form through a
 *          register free at the site; else, on ISAs with a jump shorter
 *          than the patch (emit_hop: x86 jmp rel8), that jump to a hop,
 *          dead bytes nearby holding the short patch (hop.c), only where
 *          the short form could not be planned at all. Each is planned
 *          (plan.c), then put in place by the host: the engine allocates
 *          the trampoline and installs it, a file checks it against its
 *          model (model.c). A
 *          jump at the site that cannot be put in place is tried from the
 *          instruction before, as one that cannot be planned is.
 *   TRAP   one breakpoint: simulated when the class says so, else the
 *          instruction out of line in a copy that jumps back; where the
 *          jump back cannot be made (-ERANGE: beyond the short jump's reach
 *          and no register free after the instruction) the copy ends with
 *          a second breakpoint instead.
 *   REFUSE with the reason of the instruction's class, of the sequence it
 *          sits in (between a load-reserved and its store-conditional), or
 *          of the copy that cannot be made.
 *
 * A plan that lacks a register (the long form's, or a relocation that
 * could only reach through one, an out-of-line copy's jump back above
 * all) asks for the module's register summaries once and is made again:
 * a decode of the whole module, so only then.
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int realise_jump(struct np_fn_view *v, const struct np_plan_realise *r,
			struct np_site_plan *s)
{
	struct np_plan *p = &s->plan;
	p->why[0] = '\0';
	int err = r->jump(r->cookie, v, s, p->why, sizeof(p->why));
	if (err && !p->why[0])
		snprintf(p->why, sizeof(p->why), "cannot place the jump: %s", strerror(-err));
	return err;
}

/* The jump of this form at pc, planned and put in place; s->plan.why
 * says why not. */
static int try_jump(struct np_fn_view *v, uint64_t pc, enum np_jump_form form,
		    const struct np_plan_realise *r, struct np_site_plan *s)
{
	struct np_plan *p = &s->plan;
	int err = np_plan_jump(v, pc, form, p);
	/* what the rest of the module does may free one */
	if (err && p->no_register && np_fn_view_use_module(v))
		err = np_plan_jump(v, pc, form, p);
	if (err)
		return err;
	err = realise_jump(v, r, s);
	if (err == -ERANGE && np_fn_view_use_module(v)) {
		err = np_plan_jump(v, pc, form, p);
		if (!err)
			err = realise_jump(v, r, s);
	}
	/* a jump at pc that cannot be put in place (a relocation out of
	 * reach of the trampoline: a tail call) may be from the instruction
	 * before, which leaves it in place; the refusal stays pc's. Not for
	 * another failure: threads held inside the bytes (EAGAIN) say the
	 * site is busy now, not that its jump is misplaced */
	if (err == -ERANGE && p->start == pc) {
		struct np_site_plan *back = malloc(sizeof(*back));
		if (!back)
			return err;
		*back = *s;
		if (np_plan_jump_before(v, pc, form, &back->plan) == 0 &&
		    realise_jump(v, r, back) == 0) {
			*s = *back;
			err = 0;
		}
		free(back);
	}
	return err;
}

static int realise_trap(struct np_fn_view *v, const struct np_plan_realise *r,
			struct np_site_plan *s, bool trap_back, char *why, size_t len)
{
	why[0] = '\0';
	int err = r->trap(r->cookie, v, s, trap_back, why, len);
	if (err && !why[0])
		snprintf(why, len, "cannot place the breakpoint: %s", strerror(-err));
	return err;
}

/* Append to s->why, after what is there. */
static void add_why(struct np_site_plan *s, const char *more)
{
	size_t n = strnlen(s->why, sizeof(s->why) - 1);
	snprintf(s->why + n, sizeof(s->why) - n, "%s%s", n ? "; " : "", more);
}

/* The breakpoint at pc, put in place; s->why keeps why not JUMP. */
static int try_trap(struct np_fn_view *v, uint64_t pc, const struct np_plan_realise *r,
		    struct np_site_plan *s)
{
	char why[sizeof(s->plan.why)], back[sizeof(why)];
	int err = np_plan_trap(v, pc, &s->plan);
	if (err) {
		snprintf(s->why, sizeof(s->why), "%s", s->plan.why);
		return err;
	}
	bool ool = s->plan.insn[0].cls != NP_INSN_SIMULATED;
	s->kind = ool ? NP_SITE_TRAP_OOL : NP_SITE_TRAP_SIM;
	err = realise_trap(v, r, s, false, why, sizeof(why));
	if (err == -ERANGE && ool && np_fn_view_use_module(v) && np_plan_trap(v, pc, &s->plan) == 0)
		err = realise_trap(v, r, s, false, why, sizeof(why));
	if (err == -ERANGE && ool && realise_trap(v, r, s, true, back, sizeof(back)) == 0) {
		s->trap_back = true;
		add_why(s, "the copy jumps back by a trap");
		return 0;
	}
	if (err) {
		s->kind = NP_SITE_REFUSED;
		s->place = 0;
		snprintf(s->why, sizeof(s->why), "%s", why);
	}
	return err;
}

int np_plan_site(struct np_fn_view *v, uint64_t pc, enum np_plan_want want,
		 const struct np_plan_realise *r, struct np_site_plan *s)
{
	struct np_insn in;
	char first[sizeof(s->plan.why)];
	s->pc = pc;
	s->len = 0;
	s->kind = NP_SITE_REFUSED;
	s->place = 0;
	s->trap_back = false;
	s->why[0] = '\0';
	if (v->fb.known && (pc < v->fb.start || pc >= v->fb.end)) {
		snprintf(s->why, sizeof(s->why), "outside its function, 0x%llx..0x%llx",
			 (unsigned long long)v->fb.start, (unsigned long long)v->fb.end);
		return -EINVAL;
	}
	s->len = np_fn_view_decode(v, pc, &in) ? 0 : in.len;
	int err = np_plan_site_refusal(v, pc, &in, s->why, sizeof(s->why));
	if (err)
		return err;
	if (want != NP_WANT_TRAP) {
		err = try_jump(v, pc, NP_JUMP_SHORT, r, s);
		if (!err) {
			s->kind = NP_SITE_JUMP;
			return 0;
		}
		snprintf(first, sizeof(first), "%s", s->plan.why);
		snprintf(s->why, sizeof(s->why), "%s", first);
		/* no place within the short reach, or a relocation it cannot
		 * make: the long form through a free register, where there is one */
		if (v->isa->emit_jump_via) {
			err = try_jump(v, pc, NP_JUMP_LONG, r, s);
			if (!err) {
				s->kind = NP_SITE_JUMP;
				s->why[0] = '\0';
				return 0;
			}
			/* both reasons, the long form's first */
			snprintf(s->why, sizeof(s->why), "%s", s->plan.why);
			if (strcmp(first, s->plan.why))
				add_why(s, first);
		}
		/* no room for the short form's bytes: a shorter jump to a hop */
		if (v->isa->emit_hop && err == -EOPNOTSUPP) {
			err = try_jump(v, pc, NP_JUMP_HOP, r, s);
			if (!err) {
				s->kind = NP_SITE_JUMP;
				s->why[0] = '\0';
				return 0;
			}
			/* what the hop form adds to the reason: no hop (where it
			 * fails as the short form did, nothing new) */
			if (s->plan.no_hop)
				add_why(s, s->plan.why);
		}
		if (want == NP_WANT_JUMP)
			return err;
	}
	return try_trap(v, pc, r, s);
}

/* SPDX-License-Identifier: MIT */
/*
 * Choosing the bytes a patch displaces.
 *
 * JUMP needs jump_len bytes at the site (the long form's more). They are
 * whole instructions, decoded from the original code. The plan is
 * refused, with the reason, when:
 *   - an instruction in it is REJECTED by the ISA tables;
 *   - a call is not the last instruction (its return would land inside);
 *   - a jump or return is followed by more displaced bytes that are not
 *     filler (nops, traps: alignment padding, an unreachable ud2) never
 *     reached: past the function's end, or inside it where no branch of
 *     the function or a neighbour lands and every jump's target is known;
 *   - a direct branch or a resolved jump-table entry of the function, or
 *     a branch of a neighbour, lands strictly inside the displaced bytes;
 *   - more than one instruction would be displaced while the function has
 *     an indirect jump we cannot resolve, or its bounds are unknown;
 *   - the site lies between a load-reserved and its store-conditional;
 *   - the long form finds no register free at the site, or none where it
 *     must jump back from beyond the short form's reach.
 * Regions already placed that the new bytes overlap are merged into the
 * plan, so that one trampoline serves all their sites; a breakpoint
 * placed by request is never absorbed.
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFUSE(p, ...) (snprintf((p)->why, sizeof((p)->why), __VA_ARGS__), -EOPNOTSUPP)

static bool region_over(const struct np_fn_view *v, uint64_t start, uint64_t end,
			struct np_plan_region *out)
{
	const struct np_plan_host *h = v->host;
	return start < end && h && h->region && h->region(h->cookie, start, end, out);
}

static bool padding_until(const struct np_fn_view *v, uint64_t pc, uint64_t end)
{
	struct np_insn in;
	while (pc < end) {
		if (np_fn_view_decode(v, pc, &in) || !(in.flags & NP_INSN_PADDING))
			return false;
		pc += in.len;
	}
	return end <= v->fb.limit;
}

/*
 * The filler after a jump or return inside the function, [from, need):
 * nothing falls into it, so only a branch could run it. Every branch
 * must then be known (no unresolved indirect jump) and none land in it;
 * then it is dead, as the padding past a function's end is, and the
 * patch may cover it (docs/design.md, "Dead filler").
 */
static int dead_filler(const struct np_fn_view *v, struct np_plan *p, uint64_t nofall,
		       uint64_t from, uint64_t need)
{
	if (!padding_until(v, from, need))
		return REFUSE(p, "a jump or return at 0x%llx is followed by code the patch would "
				 "overwrite", (unsigned long long)nofall);
	if (v->unresolved)
		return REFUSE(p, "the filler after the jump or return at 0x%llx may be a "
				 "branch target: %d indirect jump(s) of the function are unresolved",
			      (unsigned long long)nofall, v->unresolved);
	uint64_t t = np_fn_view_lands_in(v, from, need);
	if (t)
		return REFUSE(p, "a branch lands at 0x%llx, in the filler after the jump or "
				 "return at 0x%llx",
			      (unsigned long long)t, (unsigned long long)nofall);
	return 0;
}

/* Whole instructions from p->start covering at least [start, need). */
static int cover(const struct np_fn_view *v, struct np_plan *p, uint64_t need)
{
	uint64_t pc = p->start;
	bool padded = false;
	p->ninsn = 0;
	while (pc < need) {
		struct np_insn *in = &p->insn[p->ninsn];
		if (v->fb.known && pc >= v->fb.end && p->ninsn &&
		    (p->insn[p->ninsn - 1].flags & NP_INSN_NOFALL)) {
			if (!padding_until(v, pc, need))
				return REFUSE(p, "the function ends at 0x%llx, before the %u bytes a "
						 "jump needs, and what follows is not padding",
					      (unsigned long long)v->fb.end, (unsigned)(need - p->start));
			padded = true; /* never executed: patched over, not relocated */
			break;
		}
		if (v->fb.known && pc >= v->fb.end)
			return REFUSE(p, "the jump would run past the function end at 0x%llx",
				      (unsigned long long)v->fb.end);
		if (p->ninsn == NP_PLAN_MAX_INSNS || np_fn_view_decode(v, pc, in))
			return REFUSE(p, "cannot decode the instruction at 0x%llx",
				      (unsigned long long)pc);
		if (in->cls == NP_INSN_REJECTED)
			return REFUSE(p, "instruction at 0x%llx: %s", (unsigned long long)pc,
				      in->reason ? in->reason : "rejected");
		if ((in->flags & NP_INSN_CALL) && pc + in->len < need)
			return REFUSE(p, "a call at 0x%llx would not be the last displaced "
					 "instruction", (unsigned long long)pc);
		if ((in->flags & NP_INSN_NOFALL) && pc + in->len < need &&
		    (!v->fb.known || pc + in->len < v->fb.end)) {
			if (!v->fb.known)
				return REFUSE(p, "a jump or return at 0x%llx is followed by code "
						 "the patch would overwrite", (unsigned long long)pc);
			int err = dead_filler(v, p, pc, pc + in->len, need);
			if (err)
				return err;
			p->ninsn++;
			padded = true; /* never executed: patched over, not relocated */
			break;
		}
		pc += in->len;
		p->ninsn++;
	}
	p->end = padded ? need : pc;
	return 0;
}

/* Unresolved jumps land only where the stack is as high as where they
 * are taken (heights.c): a displaced instruction after the first at
 * another height is no place for them. */
static int check_unresolved(const struct np_fn_view *v, struct np_plan *p)
{
	for (unsigned k = 1; k < p->ninsn; k++) {
		uint64_t pc = p->insn[k].pc;
		if (!np_fn_view_jump_may_land(v, pc))
			continue;
		if (v->jump_sp && np_fn_view_height(v, pc) != NP_HEIGHT_UNKNOWN)
			return REFUSE(p,
				      "the function has %d indirect jump(s) whose targets cannot "
				      "be resolved, one at the stack height of 0x%llx",
				      v->unresolved, (unsigned long long)pc);
		return REFUSE(p, "the function has %d indirect jump(s) whose targets cannot be "
				 "resolved", v->unresolved);
	}
	return 0;
}

static int check_targets(const struct np_fn_view *v, struct np_plan *p)
{
	if (p->ninsn <= 1)
		return 0; /* nothing can land strictly inside one instruction */
	if (!v->fb.known)
		return REFUSE(p, "the function's bounds are unknown, so branches into the "
				 "displaced bytes cannot be ruled out");
	if (check_unresolved(v, p))
		return -EOPNOTSUPP;
	uint64_t t = np_fn_view_lands_in(v, p->start + 1, p->end);
	if (t)
		return REFUSE(p, "a branch lands at 0x%llx, inside the displaced bytes",
			      (unsigned long long)t);
	return 0;
}

/* Between a load-reserved and its store-conditional (riscv lr/sc, arm64
 * ldxr/stxr, for ISAs whose decoder flags them rather than refusing the
 * sequence itself), a trap or a trip through a trampoline clears the
 * reservation: the store would fail every time. Looks back up to 16
 * instructions' worth, from an instruction boundary: the sweep starts at
 * the function's entry, so that compressed code is never read from the
 * middle of an instruction. */
#define EXCL_WINDOW 64

static bool in_exclusive(const struct np_fn_view *v, uint64_t addr)
{
	return np_fn_view_reserved_open(v, addr > EXCL_WINDOW ? addr - EXCL_WINDOW : 0, addr);
}

uint64_t np_plan_reach(const struct np_isa *isa, enum np_jump_form form)
{
	/* Relocated branches must still reach their targets from the
	 * trampoline: keep it well inside the patch's reach (1 MiB for the
	 * +-2 GiB and +-128 MiB forms, an eighth of jal's +-1 MiB). The hop
	 * form's trampoline is reached by the short patch at the hop, a few
	 * bytes from the site: well inside that margin. */
	uint64_t reach = form == NP_JUMP_LONG ? 1ull << 31 : isa->jump_reach;
	uint64_t margin = reach / 8 < (1u << 20) ? reach / 8 : 1u << 20;
	return reach - margin;
}

/* The long form's length, from what emit_jump_via writes to a place
 * beyond the short form's reach (arm64's b reaches 128 MiB). */
unsigned np_plan_long_len(const struct np_isa *isa, uint64_t addr)
{
	uint8_t buf[32];
	uint64_t far = 2 * isa->jump_reach + (64u << 20);
	int n = isa->emit_jump_via
			? isa->emit_jump_via(buf, sizeof(buf), addr, addr + far, isa->scratch_ok)
			: -1;
	return n > 0 ? (unsigned)n : 0;
}

const char *np_plan_form_name(const struct np_isa *isa, enum np_jump_form form)
{
	if (form == NP_JUMP_HOP)
		return isa->hop_name;
	return form == NP_JUMP_LONG ? isa->jump_via_name : isa->jump_name;
}

/* The bytes the jump of this form writes at addr (0: no such form). */
static unsigned form_len(const struct np_isa *isa, enum np_jump_form form, uint64_t addr)
{
	if (form == NP_JUMP_HOP)
		return isa->emit_hop ? isa->hop_len : 0;
	return form == NP_JUMP_LONG ? np_plan_long_len(isa, addr) : isa->jump_len;
}

static int registers(const struct np_fn_view *v, struct np_plan *p)
{
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	p->scratch.scratch = v->have_fr ? np_freereg_over(&v->fr, p->start, p->end) : 0;
	p->scratch.resume = np_fn_view_free_at(v, p->end);
	p->no_register = true;
	if (p->form == NP_JUMP_LONG && !p->via)
		return REFUSE(p, "no free register at the site for the long jump");
	if (p->form == NP_JUMP_LONG && !p->scratch.resume && !(last->flags & NP_INSN_NOFALL))
		return REFUSE(p, "no free register at 0x%llx for the jump back from a trampoline "
				 "beyond the short jump's reach", (unsigned long long)p->end);
	p->no_register = false;
	return 0;
}

/* The hop form's: over no other region (a region it took in would keep
 * its own jump in the bytes, or lose a hop of its own), then its hop. */
static int hop(const struct np_fn_view *v, struct np_plan *p)
{
	if (p->form != NP_JUMP_HOP)
		return 0;
	if (p->merged)
		return REFUSE(p, "the bytes a jump to a hop displaces hold another probe's");
	return np_plan_hop(v, p);
}

/* The jump at addr, displacing at least [addr, upto) (0: the jump's own
 * bytes); the plan is extended over regions it overlaps until the set is
 * stable. */
static int plan_from(const struct np_fn_view *v, uint64_t addr, uint64_t upto,
		     enum np_jump_form form, struct np_plan *p)
{
	p->form = form;
	p->jump_len = form_len(v->isa, form, addr);
	p->via = 0;
	p->hop = 0;
	uint64_t need = addr + p->jump_len > upto ? addr + p->jump_len : upto;
	p->start = addr;
	p->merged = false;
	p->no_register = false;
	p->no_hop = false;
	p->pun = p->pin = 0;
	if (!p->jump_len)
		return REFUSE(p, "the ISA has no %s jump form", form == NP_JUMP_HOP ? "short" : "long");
	if (in_exclusive(v, addr))
		return REFUSE(p, "inside an lr/sc sequence: a jump would clear the reservation");
	if (form == NP_JUMP_LONG)
		p->via = np_fn_view_free_at(v, addr); /* refused after the instructions' own reasons */
	for (int round = 0; round < 8; round++) {
		int err = cover(v, p, need);
		if (err)
			return err;
		struct np_plan_region r;
		bool more = region_over(v, p->start, p->end, &r);
		p->merged |= more;
		uint64_t grow = need;
		for (; more; more = region_over(v, r.end + r.pun, p->end, &r)) {
			if (r.hop)
				return REFUSE(p, "the bytes at 0x%llx are the hop of another probe's "
						 "jump", (unsigned long long)r.start);
			if (r.hop_site)
				return REFUSE(p, "the jump to a hop at 0x%llx lies in the bytes a jump "
						 "needs", (unsigned long long)r.start);
			if (r.forced_trap)
				return REFUSE(p, "a probe forced to TRAP at 0x%llx lies in the bytes "
						 "a jump needs", (unsigned long long)r.start);
			if (r.end + r.pun > grow)
				grow = r.end + r.pun;
		}
		if (grow <= p->end)
			return check_targets(v, p) ?: registers(v, p) ?: hop(v, p);
		need = grow;
	}
	return REFUSE(p, "overlapping probes form too long a run of displaced bytes");
}

/* The jump at the instruction before addr, whose bytes take addr's
 * instruction in too. That is what leaves a site where no jump of its own
 * fits (riscv: a 2-byte ret at the end of a function, or one followed by
 * code; a branch landing on the second half of the 4 bytes; a tail call
 * whose relocated jump cannot reach from the trampoline; x86: a USDT nop
 * followed by a ret and more code, after an instruction as long as the
 * jump) to the trap: control reaches addr only from the instruction
 * before, now through the trampoline, since the plan is refused when a
 * branch lands on addr (strictly inside its bytes), and when that
 * instruction is a call (it would return inside) or a jump. The plan
 * displaces addr's instruction whole even where the jump's bytes end
 * before it: the trampoline runs it, the site's probe first. Not over a
 * region already there: the plan grows forward only. */
int np_plan_jump_before(const struct np_fn_view *v, uint64_t addr, enum np_jump_form form,
			struct np_plan *p)
{
	struct np_plan_region r;
	struct np_insn in;
	uint64_t prev = np_fn_view_previous(v, addr);
	if (!prev || region_over(v, prev, addr, &r))
		return REFUSE(p, "no instruction before 0x%llx to jump from",
			      (unsigned long long)addr);
	if (np_fn_view_decode(v, addr, &in))
		return REFUSE(p, "cannot decode the instruction at 0x%llx",
			      (unsigned long long)addr);
	int err = plan_from(v, prev, addr + in.len, form, p);
	if (err || !p->ninsn)
		return err ? err : REFUSE(p, "no instruction to displace before 0x%llx",
					  (unsigned long long)addr);
	/* addr must be run from the trampoline, not be filler patched over
	 * after a jump or return (which nothing reaches: its probe would
	 * never fire, and the engine would have no place for it) */
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	if (addr >= last->pc + last->len)
		return REFUSE(p, "0x%llx is filler after the jump or return at 0x%llx",
			      (unsigned long long)addr, (unsigned long long)last->pc);
	return err;
}

/* The jump at addr, else the one before it. The refusal is the one at
 * addr. */
int np_plan_jump(const struct np_fn_view *v, uint64_t addr, enum np_jump_form form,
		 struct np_plan *p)
{
	int err = plan_from(v, addr, 0, form, p);
	struct np_plan *back;
	if (err != -EOPNOTSUPP || !(back = malloc(sizeof(*back))))
		return err;
	if (np_plan_jump_before(v, addr, form, back) == 0) {
		*p = *back;
		err = 0;
	}
	free(back);
	return err;
}

/* Byte-granular code and a 5-byte jump: x86-64's rel32, whose top byte
 * can be a call's opcode. */
static bool pun_isa(const struct np_isa *isa)
{
	return isa->insn_align == 1 && isa->jump_len == 5;
}

#define PUN_E8_BELOW 0x18000000ull /* e8 as a displacement's top byte: -384 MiB */

uint64_t np_plan_chunk_aim(const struct np_isa *isa, uint64_t near)
{
	if (!pun_isa(isa) || near < PUN_E8_BELOW + (64ull << 20))
		return near;
	return near + 5 - PUN_E8_BELOW + (8ull << 20); /* the window's middle */
}

/* Instruction punning (E9Patch's name for it). A plan that ends with a
 * call displaces it, and a displaced call cannot keep the return stack
 * buffer right: the callee's ret is mispredicted every time (10 to 15 ns
 * here, twice what the probe costs). When the call starts 4 bytes in
 * (`push %rbp; mov %rsp,%rbp; call`, `sub $8,%rsp; call`), the jump can
 * end on the call's first byte instead: that byte is the top byte of the
 * jump's displacement, fixed, and the trampoline is placed where the
 * displacement has it: e8, a direct call, puts it in a 16 MiB window 384
 * MiB below the site. Trampoline memory for every jump is placed there
 * first (the engine's codemem.c, np_plan_chunk_aim), so one chunk serves
 * a module's punned and ordinary jumps alike, and a program that reads its
 * own /proc/self/maps (grep does) sees the same mappings whatever strategy
 * the probes got. The call stays in the code, whole; the trampoline jumps
 * back to it, and it runs where it always did. A probe on the call later
 * makes the region displace it after all (region.c). Not done for an
 * indirect call (ff: a window of its own just below the site, a mapping
 * more) nor for a call 3 bytes in (two bytes pinned: a 64 KiB window per
 * call site). Refused when the plan merged other regions. */
int np_plan_pun(const struct np_isa *isa, const struct np_plan *p, struct np_plan *out)
{
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	uint64_t k = last->pc - p->start;
	uint32_t direct_call = NP_INSN_CALL | NP_INSN_BRANCH;
	if (!pun_isa(isa) || p->ninsn < 2 || p->merged ||
	    (last->flags & direct_call) != direct_call || k != 4 ||
	    p->end != last->pc + last->len)
		return -EOPNOTSUPP;
	*out = *p;
	out->ninsn--;
	out->end = last->pc;
	out->pin = (unsigned)k;
	out->pun = (unsigned)(5 - k);
	return 0;
}

/* The jump's displacement is bytes 1..4; from byte 'pin' on they are the
 * code's own (orig[pin..5)). */
void np_plan_pun_window(uint64_t start, const uint8_t *orig, unsigned pin, uint64_t *lo,
			uint64_t *size)
{
	unsigned pun = 5 - pin;
	uint32_t rel = 0;
	for (unsigned i = 0; i < pun; i++)
		rel |= (uint32_t)orig[pin + i] << (8 * (4 - pun + i));
	*size = 1ull << (8 * (4 - pun));
	*lo = start + 5 + (uint64_t)(int64_t)(int32_t)rel;
}

int np_plan_trap(const struct np_fn_view *v, uint64_t addr, struct np_plan *p)
{
	p->start = addr;
	p->ninsn = 1;
	p->merged = false;
	p->no_register = false;
	p->no_hop = false;
	p->pun = p->pin = 0;
	p->jump_len = 0;
	p->via = 0;
	p->hop = 0;
	if (np_fn_view_decode(v, addr, &p->insn[0]))
		return REFUSE(p, "cannot decode the instruction at 0x%llx",
			      (unsigned long long)addr);
	if (p->insn[0].cls == NP_INSN_REJECTED)
		return REFUSE(p, "instruction at 0x%llx: %s", (unsigned long long)addr,
			      p->insn[0].reason ? p->insn[0].reason : "rejected");
	if (in_exclusive(v, addr))
		return REFUSE(p, "inside an lr/sc sequence: a trap would clear the reservation");
	p->end = addr + p->insn[0].len;
	p->scratch.scratch = np_fn_view_free_at(v, addr);
	p->scratch.resume = np_fn_view_free_at(v, p->end);
	return 0;
}

/* The site's own refusal, before any plan: it does not decode, the ISA
 * rejects it, or it lies in an exclusive sequence (analyze and list show
 * the reason alone, the address being the row's). */
int np_plan_site_refusal(const struct np_fn_view *v, uint64_t pc, struct np_insn *in, char *why,
			 size_t len)
{
	if (np_fn_view_decode(v, pc, in)) {
		snprintf(why, len, "cannot decode the instruction");
		return -EOPNOTSUPP;
	}
	if (in->cls == NP_INSN_REJECTED) {
		snprintf(why, len, "%s", in->reason ? in->reason : "rejected");
		return -EOPNOTSUPP;
	}
	if (in_exclusive(v, pc)) {
		snprintf(why, len, "inside an lr/sc sequence: a trap or jump would clear the "
				   "reservation");
		return -EOPNOTSUPP;
	}
	return 0;
}

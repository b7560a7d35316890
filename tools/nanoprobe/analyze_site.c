/* SPDX-License-Identifier: MIT */
/*
 * Planning one site of a function over the file's bytes, in the engine's
 * fixed order (field guide, principle 1):
 *
 *   JUMP   the short patch (emit_jump: x86 jmp rel32, riscv jal), when a
 *          trampoline place is within its reach; else, on ISAs whose long
 *          jump needs a register (emit_jump_via: riscv auipc+jalr, arm64
 *          adrp+add+br), the
 *          long patch through a register free at the site. Either way the
 *          displaced instructions must be whole, not rejected, with a call
 *          only last, no branch landing inside them, and relocate() must
 *          accept them at the trampoline, jump back included (through a
 *          register free where it lands when jal cannot reach).
 *   TRAP   one breakpoint: simulated when the class says so, else the
 *          instruction out of line in a slot near the code (relocate()
 *          into the slot must succeed) with a jump back; where the jump
 *          back cannot be made (-ERANGE: beyond the short jump's reach
 *          and no register free after the instruction) the copy ends
 *          with a second breakpoint instead (region.c's make_trap_back).
 *   REJECT with the reason of the instruction's class, or of the sequence
 *          it sits in (between an lr and its sc).
 */
#include "analyze.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAR_OFFSET (64ull << 20) /* a trampoline beyond jal's reach, within auipc's */
#define EXCL_WINDOW 64           /* bytes after an lr its sc may follow (16 insns) */
#define LONG_JUMP_LEN 8          /* auipc+jalr: the paper's patch, for its figures */

static void add_target(void *cookie, uint64_t target)
{
	struct an_func *f = cookie;

	if (f->ntargets == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		uint64_t *t = realloc(f->targets, cap * sizeof(*t));

		if (!t) {
			f->unresolved++; /* conservative when out of memory */
			return;
		}
		f->targets = t;
		f->cap = cap;
	}
	f->targets[f->ntargets++] = target;
}

int an_func_init(struct an_func *f, const struct np_isa *isa, const struct an_layout *layout,
		 const uint8_t *code, uint64_t start, uint64_t end, uint64_t limit,
		 const struct np_mem *mem, bool called, const struct np_freereg_env *env)
{
	int u;

	*f = (struct an_func){.isa = isa, .layout = layout, .code = code,
			      .start = start, .end = end, .limit = limit};
	u = isa->branch_targets(code, end - start, start, mem, add_target, f);
	f->unresolved += u < 0 ? 1 : u;
	if (isa->reg_use) {
		int err = np_freereg_analyse(isa, code, end - start, start,
					     called ? NP_FREEREG_ENTRY : 0, env, &f->fr);

		if (!err &&
		    (err = np_freereg_analyse(isa, code, end - start, start, 0, env, &f->plain)))
			np_freereg_release(&f->fr);
		if (err == -ENOMEM)
			return err;
		f->have_fr = err == 0;
	}
	return 0;
}

void an_func_free(struct an_func *f)
{
	free(f->targets);
	if (f->have_fr) {
		np_freereg_release(&f->fr);
		np_freereg_release(&f->plain);
	}
}

static int decode_at(const struct an_func *f, uint64_t pc, struct np_insn *in)
{
	if (pc < f->start || pc >= f->limit)
		return -ERANGE;
	return f->isa->decode(f->code + (pc - f->start), f->limit - pc, pc, in);
}

static uint64_t free_at(const struct an_func *f, uint64_t pc)
{
	return f->have_fr ? np_freereg_at(&f->fr, pc) : 0;
}

/* The first instruction boundary at or after pc + need (the jump back of
 * a patch of that size lands there), 0 when the bytes do not decode. */
static uint64_t boundary_after(const struct an_func *f, uint64_t pc, unsigned need)
{
	uint64_t at = pc;
	struct np_insn in;

	while (at < pc + need)
		if (decode_at(f, at, &in))
			return 0;
		else
			at += in.len;
	return at;
}

/* Record why a form does not fit; false, for `return why_not(...)`. */
__attribute__((format(printf, 2, 3))) static bool why_not(struct an_site *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	return false;
}

/* Is pc after an lr and no later than its sc? */
static bool in_exclusive(const struct an_func *f, uint64_t pc)
{
	uint64_t at = pc > f->start + EXCL_WINDOW ? pc - EXCL_WINDOW : f->start;
	struct np_insn in;

	for (; at < pc && decode_at(f, at, &in) == 0; at += in.len) {
		if (!(in.flags & NP_INSN_LOAD_RESERVED))
			continue;
		uint64_t q = at + in.len; /* the first sc after this lr closes it */
		while (q < pc && decode_at(f, q, &in) == 0 && !(in.flags & NP_INSN_STORE_COND))
			q += in.len;
		if (q >= pc)
			return true;
		at = q;
		decode_at(f, at, &in);
	}
	return false;
}

/* Are [pc, to) alignment padding after the function's end (never run)? */
static bool padding_until(const struct an_func *f, uint64_t pc, uint64_t to)
{
	struct np_insn in;

	for (; pc < to; pc += in.len)
		if (decode_at(f, pc, &in) || !(in.flags & NP_INSN_PADDING))
			return false;
	return to <= f->limit;
}

/* The engine's refusals (plan.c) for instruction 'in' at 'at' of a patch
 * needing [pc, need). */
static bool displaceable(const struct np_insn *in, uint64_t at, uint64_t need, uint64_t end,
			 struct an_site *s)
{
	if (in->cls == NP_INSN_REJECTED)
		return why_not(s, "instruction at 0x%llx: %s", (unsigned long long)at, in->reason);
	if ((in->flags & NP_INSN_CALL) && at + in->len < need)
		return why_not(s, "a call at 0x%llx would not be the last displaced instruction",
			       (unsigned long long)at);
	if ((in->flags & NP_INSN_NOFALL) && at + in->len < need && at + in->len < end)
		return why_not(s, "a jump or return at 0x%llx is followed by code the patch "
				  "would overwrite", (unsigned long long)at);
	return true;
}

/* Whole instructions from pc covering need bytes; *end is where the jump
 * back lands. Bytes past a function ending in a jump or return may be
 * patched over when they are padding. */
static bool cover(const struct an_func *f, uint64_t pc, unsigned need, uint64_t *end,
		  bool *falls, struct an_site *s)
{
	uint64_t at = pc;
	unsigned n = 0;
	struct np_insn in = {0};

	while (at < pc + need) {
		if (at >= f->end && n && (in.flags & NP_INSN_NOFALL) && padding_until(f, at, pc + need))
			break; /* the padding is overwritten, never relocated */
		if (at >= f->end)
			return why_not(s, "the jump would run past the function end at 0x%llx",
				       (unsigned long long)f->end);
		if (decode_at(f, at, &in))
			return why_not(s, "cannot decode the instruction at 0x%llx",
				       (unsigned long long)at);
		if (!displaceable(&in, at, pc + need, f->end, s))
			return false;
		at += in.len;
		n++;
	}
	*end = at;
	*falls = !(in.flags & NP_INSN_NOFALL); /* else no jump back is needed */
	if (n > 1 && f->unresolved)
		return why_not(s, "the function has %d indirect jump(s) whose targets cannot be "
				  "resolved", f->unresolved);
	for (size_t i = 0; n > 1 && i < f->ntargets; i++)
		if (f->targets[i] > pc && f->targets[i] < at)
			return why_not(s, "a branch lands at 0x%llx, inside the displaced bytes",
				       (unsigned long long)f->targets[i]);
	return true;
}

/* relocate() of [pc, end) into a trampoline at dst, as the engine runs
 * it (through the registers free over the bytes and where they end),
 * jumping back to resume (0: no jump back). 0 or -errno. */
static int relocate_to(const struct an_func *f, uint64_t pc, uint64_t end, uint64_t resume,
		       uint64_t dst)
{
	uint8_t out[256];
	struct np_reloc r = {f->code + (pc - f->start), end - pc, pc, out, sizeof(out), dst,
			     resume};
	struct np_reloc_scratch sc = {f->have_fr ? np_freereg_over(&f->fr, pc, end) : 0,
				      free_at(f, end)};
	int n = f->isa->relocate_via ? f->isa->relocate_via(&r, &sc) : f->isa->relocate(&r);

	return n < 0 ? n : 0;
}

/* Why relocate_to() of [pc, end) failed with err; false. */
static bool relocation_refused(const struct an_func *f, uint64_t pc, uint64_t end, int err,
			       struct an_site *s)
{
	if (err == -ERANGE && !free_at(f, end))
		return why_not(s, "no free register for the jump back to 0x%llx",
			   (unsigned long long)end);
	return why_not(s, "cannot relocate 0x%llx..0x%llx: %s", (unsigned long long)pc,
		   (unsigned long long)end, err == -ERANGE ? "a target is out of reach"
							   : "a form that cannot move");
}

/* Does [pc, end) relocate to dst, jumping back to end when it falls
 * through? */
static bool relocates(const struct an_func *f, uint64_t pc, uint64_t end, bool falls,
		      uint64_t dst, struct an_site *s)
{
	int err = relocate_to(f, pc, end, falls ? end : 0, dst);

	return !err || relocation_refused(f, pc, end, err, s);
}

/* The trampoline place within the short jump's reach of pc, or 0. */
static uint64_t near_place(const struct an_func *f, uint64_t pc)
{
	uint64_t reach = f->isa->jump_reach;
	uint64_t lo = f->layout->below, hi = f->layout->above;

	if (hi - pc < reach) /* above: the farther end of the patch counts */
		return hi;
	if (pc - lo <= reach)
		return lo;
	return 0;
}


static bool plan_short(const struct an_func *f, uint64_t pc, struct an_site *s)
{
	uint64_t place = near_place(f, pc), end;
	bool falls;

	if (!place)
		return why_not(s, "no trampoline place within %s's reach", f->isa->jump_name);
	if (!cover(f, pc, f->isa->jump_len, &end, &falls, s) ||
	    !relocates(f, pc, end, falls, place, s))
		return false;
	s->form = f->isa->jump_name;
	s->start = pc;
	s->end = end;
	s->place = place;
	s->falls = falls;
	return true;
}

/* A place for a trampoline beyond the short jump's reach (64 MiB for
 * jal's 1 MiB; past b's 128 MiB on arm64), within the long form's. */
static uint64_t far_offset(const struct np_isa *isa)
{
	return isa->jump_reach < FAR_OFFSET / 2 ? FAR_OFFSET : 2 * isa->jump_reach + FAR_OFFSET;
}

const char *an_long_form(const struct np_isa *isa)
{
	return isa->jump_via_name;
}

/* The long patch's bytes, where the jump back of "free both ways" lands:
 * 8 (auipc+jalr, the paper's patch), 12 on arm64 (adrp+add+br). */
static unsigned long_jump_len(const struct np_isa *isa, uint64_t pc)
{
	uint8_t buf[32];
	int n = isa->emit_jump_via ? isa->emit_jump_via(buf, sizeof(buf), pc, pc + far_offset(isa),
							isa->scratch_ok)
				   : -1;
	return n > 0 ? (unsigned)n : LONG_JUMP_LEN;
}

static bool plan_long(const struct an_func *f, uint64_t pc, struct an_site *s)
{
	uint8_t buf[32];
	uint64_t end, far = f->layout->far ? f->layout->far : pc + far_offset(f->isa);
	bool falls;
	int need = f->isa->emit_jump_via(buf, sizeof(buf), pc, pc + far_offset(f->isa),
					 f->isa->scratch_ok);

	if (need < 0)
		return why_not(s, "no long jump form");
	if (!s->free_in)
		return why_not(s, "no free register at the site for the long jump");
	if (!cover(f, pc, (unsigned)need, &end, &falls, s) ||
	    !relocates(f, pc, end, falls, far, s))
		return false;
	s->form = an_long_form(f->isa);
	s->start = pc;
	s->end = end;
	s->place = far;
	s->falls = falls;
	return true;
}

/* The out-of-line copy's slot: near the code (the short jump's reach),
 * else where the long form's trampoline would go. The engine's build()
 * (region.c): a copy whose relocation fails with -ERANGE (no jump back:
 * the slot is beyond the short jump's reach and no register is free
 * after the instruction) is made again with no jump back, ending with a
 * breakpoint whose SIGTRAP sends the thread on (two traps per hit). Any
 * other failure, or one of the instruction itself, rejects the site. */
static void plan_trap(const struct an_func *f, const struct np_insn *in, struct an_site *s)
{
	uint64_t slot = near_place(f, in->pc), end = in->pc + in->len;
	bool falls = !(in->flags & NP_INSN_NOFALL);

	if (in->cls == NP_INSN_SIMULATED) {
		s->kind = AN_TRAP_SIM;
		return;
	}
	if (!slot)
		slot = f->layout->far ? f->layout->far : in->pc + far_offset(f->isa);
	s->kind = AN_TRAP_OOL;
	s->place = slot;
	int err = relocate_to(f, in->pc, end, falls ? end : 0, slot);
	if (!err)
		return;
	if (err == -ERANGE && relocate_to(f, in->pc, end, 0, slot) == 0) {
		size_t len = strnlen(s->why, sizeof(s->why) - 1); /* why not JUMP, kept */
		s->trap_back = true;
		snprintf(s->why + len, sizeof(s->why) - len, "; the copy jumps back by a trap");
		return;
	}
	relocation_refused(f, in->pc, end, err, s);
	s->kind = AN_REJECT;
	s->place = 0;
}

/* The instruction just before pc in the function, or 0 (plan.c's
 * previous_insn). */
static uint64_t insn_before(const struct an_func *f, uint64_t pc)
{
	struct np_insn in;
	uint64_t at = f->start, prev = 0;

	for (; at < pc && decode_at(f, at, &in) == 0; at += in.len)
		prev = at;
	return at == pc && pc > f->start ? prev : 0;
}

/* plan.c's fallback where no jump fits at pc: one at the instruction
 * before, whose displaced bytes take pc's instruction in (no branch may
 * land on pc: it lies strictly inside them). s keeps its refusal if not. */
static bool plan_before(const struct an_func *f, uint64_t pc, struct an_site *s,
			bool (*plan)(const struct an_func *, uint64_t, struct an_site *))
{
	uint64_t prev = insn_before(f, pc);
	struct an_site back = *s;

	back.free_in = prev ? free_at(f, prev) : 0;
	if (!prev || in_exclusive(f, prev) || !plan(f, prev, &back) || back.end <= pc)
		return false;
	back.free_in = s->free_in;
	*s = back;
	return true;
}

void an_plan_site(const struct an_func *f, uint64_t pc, struct an_site *s)
{
	struct np_insn in;
	char first[160];

	*s = (struct an_site){.pc = pc, .kind = AN_REJECT};
	if (decode_at(f, pc, &in)) {
		why_not(s, "cannot decode the instruction");
		return;
	}
	s->len = in.len;
	s->free_in = free_at(f, pc);
	s->free_plain = f->have_fr ? np_freereg_at(&f->plain, pc) : 0;
	s->free_back = free_at(f, boundary_after(f, pc, long_jump_len(f->isa, pc)));
	if (in.cls == NP_INSN_REJECTED) {
		why_not(s, "%s", in.reason);
		return;
	}
	if (in_exclusive(f, pc)) {
		why_not(s, "inside an lr/sc sequence: a trap or jump would clear the reservation");
		return;
	}
	s->kind = AN_JUMP;
	if (plan_short(f, pc, s) || plan_before(f, pc, s, plan_short))
		return;
	memcpy(first, s->why, sizeof(first));
	if (f->isa->emit_jump_via && (plan_long(f, pc, s) || plan_before(f, pc, s, plan_long)))
		return;
	if (f->isa->emit_jump_via && strcmp(first, s->why)) /* both reasons, the short form's first */
		snprintf(s->why + strlen(s->why), sizeof(s->why) - strlen(s->why), "; %s", first);
	plan_trap(f, &in, s);
}

/* SPDX-License-Identifier: MIT */
/*
 * Choosing the bytes a patch displaces.
 *
 * JUMP needs isa->jump_len bytes at the site. They are whole instructions,
 * decoded from the original code (other probes' patches are overlaid with
 * the bytes they replaced). The plan is refused, with the reason, when:
 *   - an instruction in it is REJECTED by the ISA tables;
 *   - a call is not the last instruction (its return would land inside);
 *   - a jump or return is followed by more displaced bytes that are not
 *     alignment padding past the function's end;
 *   - a direct branch or a resolved jump-table entry of the function lands
 *     strictly inside the displaced bytes;
 *   - more than one instruction would be displaced while the function has
 *     an indirect jump we cannot resolve, or its bounds are unknown.
 * Regions already patched that the new bytes overlap are merged into the
 * plan, so that one trampoline serves all their sites.
 */
#include "arch/regsum.h"
#include "core/internal.h"
#include "core/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int view_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_code_read(addr, dst, len);
}

static void add_target(void *cookie, uint64_t target)
{
	struct fn_view *v = cookie;
	if (v->ntargets == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 64;
		uint64_t *t = realloc(v->targets, v->cap * sizeof(*t));
		if (!t) {
			v->unresolved++; /* be conservative when out of memory */
			return;
		}
		v->targets = t;
	}
	v->targets[v->ntargets++] = target;
}

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

int np_read_original(uint64_t addr, uint8_t *buf, size_t len)
{
	int err = np_code_read(addr, buf, len);
	if (err)
		return err;
	np_region_each(addr, addr + len, put_original, &(struct overlay){addr, buf, len});
	return 0;
}

void np_fn_view_free(struct fn_view *v)
{
	free(v->code);
	free(v->targets);
	if (v->have_fr)
		np_freereg_release(&v->fr);
}

/* Decode context for addr: the function around it, or just a window. */
int np_fn_view_load(struct fn_view *v, uint64_t addr, uint64_t fstart, size_t fsize)
{
	memset(v, 0, sizeof(*v));
	if (fstart) {
		v->fb = (struct np_func_bounds){fstart, fstart + fsize, fstart + fsize, true, false};
		struct np_func_bounds sym;
		if (np_symbol_bounds(addr, &sym) == 0 || sym.limit)
			v->fb.limit = sym.limit > v->fb.end ? sym.limit : v->fb.end;
		v->fb.called = sym.known && sym.start == fstart && sym.called;
		/* Bounds from the caller (an .eh_frame range, say) may run over
		 * the entry of a function the symbol tables know: code elsewhere
		 * jumps there, so the displaced bytes must stop before it. */
		if (sym.limit > addr && sym.limit < v->fb.end)
			v->fb.end = v->fb.limit = sym.limit;
	} else if (np_symbol_bounds(addr, &v->fb)) {
		v->fb.known = false;
	}
	if (v->fb.known && (addr < v->fb.start || addr >= v->fb.end))
		return -EINVAL;
	v->base = v->fb.known ? v->fb.start : addr;
	uint64_t hi = v->fb.known ? v->fb.limit : addr + 64;
	if (!v->fb.known && v->fb.limit && v->fb.limit < hi)
		hi = v->fb.limit;
	if (hi > v->fb.end + 64 && v->fb.known)
		hi = v->fb.end + 64; /* padding beyond 64 bytes is never needed */
	if (hi <= v->base || hi - v->base > NP_MAX_FN_BYTES)
		return -E2BIG;
	v->len = hi - v->base;
	v->code = malloc(v->len);
	if (!v->code)
		return -ENOMEM;
	/* the mapping may end before the window does */
	while (v->len > 0 && np_read_original(v->base, v->code, v->len))
		v->len = v->len > 16 ? v->len - 16 : 0;
	if (v->len == 0)
		return -EFAULT;
	np_fn_view_analyse(v, &(struct np_mem){view_read, NULL, NULL});
	/* Branches from the neighbours into the bytes a patch may displace:
	 * from the instruction before addr (where a jump goes when none fits
	 * at addr, taking addr in: a branch onto addr is then inside it) to
	 * the most a jump and what it absorbs can cover after it. */
	uint64_t lo = addr > np_host_isa->max_insn ? addr - np_host_isa->max_insn : 0;
	np_neighbor_targets(lo, addr + NP_NEIGHBOR_SPAN - lo, add_target, v);
	return 0;
}

/* The free registers, for ISAs whose jumps and relocations need one,
 * with what the module's other functions do to them when known (v->sums;
 * else the analysis assumes the least, which is sound as well). */
static void analyse_registers(struct fn_view *v)
{
	size_t flen = v->fb.end - v->base < v->len ? v->fb.end - v->base : v->len;
	struct np_freereg_env env;
	if (!np_host_isa->relocate_via || !np_host_isa->reg_use)
		return;
	if (v->sums)
		np_regsum_env(v->sums, v->base, v->fb.called, &env);
	v->have_fr = np_freereg_analyse(np_host_isa, v->code, flen, v->base,
					v->fb.called ? NP_FREEREG_ENTRY : 0, v->sums ? &env : NULL,
					&v->fr) == 0;
}

/* Where control can land in the function; jump tables are read through
 * mem, so that the view may come from live memory or from a file. */
void np_fn_view_analyse(struct fn_view *v, const struct np_mem *mem)
{
	if (!v->fb.known)
		return;
	size_t flen = v->fb.end - v->base < v->len ? v->fb.end - v->base : v->len;
	int u = np_host_isa->branch_targets(v->code, flen, v->base, mem, add_target, v);
	v->unresolved = u < 0 ? 1 : u;
	analyse_registers(v);
}

/* What the module knows costs a decode of all of it once (a second or
 * more for a libc under qemu): asked for only when a long form lacks a
 * register without it. */
bool np_fn_view_use_module(struct fn_view *v)
{
	if (!np_host_isa->relocate_via || !v->fb.known || v->sums ||
	    !(v->sums = np_neighbor_regsum(v->base)))
		return false;
	if (v->have_fr)
		np_freereg_release(&v->fr);
	analyse_registers(v);
	return true;
}

static uint64_t free_at(const struct fn_view *v, uint64_t pc)
{
	return v->have_fr ? np_freereg_at(&v->fr, pc) : 0;
}

int np_fn_view_decode(const struct fn_view *v, uint64_t pc, struct np_insn *in)
{
	if (pc < v->base || pc >= v->base + v->len)
		return -ENODATA;
	return np_host_isa->decode(v->code + (pc - v->base), v->len - (pc - v->base), pc, in);
}

/* Is addr an instruction boundary of the function (linear sweep)? */
bool np_fn_view_is_boundary(const struct fn_view *v, uint64_t addr)
{
	if (!v->fb.known)
		return true; /* nothing to check against: trust the caller */
	uint64_t pc = v->fb.start;
	struct np_insn in;
	while (pc < addr && np_fn_view_decode(v, pc, &in) == 0)
		pc += in.len;
	return pc == addr;
}

static bool padding_until(const struct fn_view *v, uint64_t pc, uint64_t end)
{
	struct np_insn in;
	while (pc < end) {
		if (np_fn_view_decode(v, pc, &in) || !(in.flags & NP_INSN_PADDING))
			return false;
		pc += in.len;
	}
	return end <= v->fb.limit;
}

#define REFUSE(p, ...) (snprintf((p)->why, sizeof((p)->why), __VA_ARGS__), -EOPNOTSUPP)

/* Whole instructions from p->start covering at least [start, need). */
static int cover(const struct fn_view *v, struct plan *p, uint64_t need)
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
		if (p->ninsn == NP_MAX_REGION_INSNS || np_fn_view_decode(v, pc, in))
			return REFUSE(p, "cannot decode the instruction at 0x%llx",
				      (unsigned long long)pc);
		if (in->cls == NP_INSN_REJECTED)
			return REFUSE(p, "instruction at 0x%llx: %s", (unsigned long long)pc,
				      in->reason ? in->reason : "rejected");
		if ((in->flags & NP_INSN_CALL) && pc + in->len < need)
			return REFUSE(p, "a call at 0x%llx would not be the last displaced "
					 "instruction", (unsigned long long)pc);
		if ((in->flags & NP_INSN_NOFALL) && pc + in->len < need &&
		    (!v->fb.known || pc + in->len < v->fb.end))
			return REFUSE(p, "a jump or return at 0x%llx is followed by code the "
					 "patch would overwrite", (unsigned long long)pc);
		pc += in->len;
		p->ninsn++;
	}
	p->end = padded ? need : pc;
	return 0;
}

static int check_targets(const struct fn_view *v, struct plan *p)
{
	if (p->ninsn <= 1)
		return 0; /* nothing can land strictly inside one instruction */
	if (!v->fb.known)
		return REFUSE(p, "the function's bounds are unknown, so branches into the "
				 "displaced bytes cannot be ruled out");
	if (v->unresolved)
		return REFUSE(p, "the function has %d indirect jump(s) whose targets cannot be "
				 "resolved", v->unresolved);
	for (size_t i = 0; i < v->ntargets; i++)
		if (v->targets[i] > p->start && v->targets[i] < p->end)
			return REFUSE(p, "a branch lands at 0x%llx, inside the displaced bytes",
				      (unsigned long long)v->targets[i]);
	return 0;
}

/* Between a load-reserved and its store-conditional (riscv lr/sc, for
 * ISAs whose decoder flags them rather than refusing the sequence itself),
 * a trap or a trip through a trampoline clears the reservation: the sc
 * would fail every time. Looks back up to 16 instructions' worth. */
#define EXCL_WINDOW 64

static bool in_exclusive(const struct fn_view *v, uint64_t addr)
{
	struct np_insn in;
	bool open = false;
	uint64_t at = v->fb.known ? v->fb.start : addr;
	/* sweep from the function's start to stay on boundaries */
	while (addr - at > EXCL_WINDOW && np_fn_view_decode(v, at, &in) == 0)
		at += in.len;
	for (; at < addr && np_fn_view_decode(v, at, &in) == 0; at += in.len) {
		if (in.flags & NP_INSN_LOAD_RESERVED)
			open = true;
		else if (in.flags & NP_INSN_STORE_COND)
			open = false;
	}
	return open;
}

uint64_t np_plan_reach(enum np_jump_form form)
{
	/* Relocated branches must still reach their targets from the
	 * trampoline: keep it well inside the patch's reach (1 MiB for the
	 * +-2 GiB and +-128 MiB forms, an eighth of jal's +-1 MiB). */
	uint64_t reach = form == NP_JUMP_LONG ? 1ull << 31 : np_host_isa->jump_reach;
	uint64_t margin = reach / 8 < (1u << 20) ? reach / 8 : 1u << 20;
	return reach - margin;
}

/* The long form's length, from what emit_jump_via writes to a place
 * beyond the short form's reach (arm64's b reaches 128 MiB). */
static unsigned long_len(uint64_t addr)
{
	uint8_t buf[32];
	uint64_t far = 2 * np_host_isa->jump_reach + (64u << 20);
	int n = np_host_isa->emit_jump_via ? np_host_isa->emit_jump_via(buf, sizeof(buf), addr,
									addr + far,
									np_host_isa->scratch_ok)
					   : -1;
	return n > 0 ? (unsigned)n : 0;
}

static int registers(const struct fn_view *v, enum np_jump_form form, struct plan *p)
{
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	p->scratch.scratch = v->have_fr ? np_freereg_over(&v->fr, p->start, p->end) : 0;
	p->scratch.resume = free_at(v, p->end);
	p->no_register = true;
	if (form == NP_JUMP_LONG && !p->via)
		return REFUSE(p, "no free register at the site for the long jump");
	if (form == NP_JUMP_LONG && !p->scratch.resume && !(last->flags & NP_INSN_NOFALL))
		return REFUSE(p, "no free register at 0x%llx for the jump back from a trampoline "
				 "beyond the short jump's reach", (unsigned long long)p->end);
	p->no_register = false;
	return 0;
}

/* The jump at addr; the plan is extended over regions it overlaps until
 * the set is stable. */
static int plan_from(const struct fn_view *v, uint64_t addr, enum np_jump_form form,
		     struct plan *p)
{
	p->jump_len = form == NP_JUMP_LONG ? long_len(addr) : np_host_isa->jump_len;
	p->via = 0;
	uint64_t need = addr + p->jump_len;
	p->start = addr;
	p->merged = false;
	p->no_register = false;
	p->pun = p->pin = 0;
	if (!p->jump_len)
		return REFUSE(p, "the ISA has no long jump form");
	if (in_exclusive(v, addr))
		return REFUSE(p, "inside an lr/sc sequence: a jump would clear the reservation");
	if (form == NP_JUMP_LONG)
		p->via = free_at(v, addr); /* refused after the instructions' own reasons */
	for (int round = 0; round < 8; round++) {
		int err = cover(v, p, need);
		if (err)
			return err;
		struct np_region *o = np_region_overlapping(p->start, p->end);
		p->merged |= o != NULL;
		uint64_t grow = need;
		for (struct np_region *r = o; r;
		     r = np_region_overlapping(r->end + r->pun, p->end)) {
			if (r->strategy == NP_STRATEGY_TRAP && r->forced)
				return REFUSE(p, "a probe forced to TRAP at 0x%llx lies in the bytes "
						 "a jump needs", (unsigned long long)r->start);
			if (r->end + r->pun > grow)
				grow = r->end + r->pun;
		}
		if (grow <= p->end)
			return check_targets(v, p) ?: registers(v, form, p);
		need = grow;
	}
	return REFUSE(p, "overlapping probes form too long a run of displaced bytes");
}

/* The instruction just before addr in the function (a linear sweep from
 * its start), or 0: addr is its entry, or its bounds are unknown. */
static uint64_t previous_insn(const struct fn_view *v, uint64_t addr)
{
	struct np_insn in;
	uint64_t pc = v->fb.start, prev = 0;
	if (!v->fb.known || addr <= v->fb.start)
		return 0;
	while (pc < addr && np_fn_view_decode(v, pc, &in) == 0) {
		prev = pc;
		pc += in.len;
	}
	return pc == addr ? prev : 0;
}

/* The jump at addr; where it cannot go there, one at the instruction
 * before, whose bytes take addr's instruction in too. That is what leaves
 * a site where no jump of its own fits (riscv: a 2-byte ret at the end
 * of a function, or one followed by code; a branch landing on the second
 * half of the 4 bytes) to the trap: control reaches addr only from the
 * instruction before, now through the trampoline, since the plan is
 * refused when a branch lands on addr (strictly inside its bytes), and
 * when that instruction is a call (it would return inside) or a jump.
 * Not over a region already there: the plan grows forward only. The
 * refusal is the one at addr. */
int np_plan_jump(const struct fn_view *v, uint64_t addr, enum np_jump_form form, struct plan *p)
{
	int err = plan_from(v, addr, form, p);
	uint64_t prev = err == -EOPNOTSUPP ? previous_insn(v, addr) : 0;
	struct plan *back;
	if (!prev || np_region_overlapping(prev, addr) || !(back = malloc(sizeof(*back))))
		return err;
	if (plan_from(v, prev, form, back) == 0 && back->end > addr) {
		*p = *back;
		err = 0;
	}
	free(back);
	return err;
}

static bool pun_isa(void)
{
	return np_host_isa->insn_align == 1 && np_host_isa->jump_len == 5;
}

#define PUN_E8_BELOW 0x18000000ull /* e8 as a displacement's top byte: -384 MiB */

uint64_t np_plan_chunk_aim(uint64_t near)
{
	if (!pun_isa() || near < PUN_E8_BELOW + (64ull << 20))
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
 * first (codemem.c, np_plan_chunk_aim), so one chunk serves a module's
 * punned and ordinary jumps alike, and a program that reads its own
 * /proc/self/maps (grep does) sees the same mappings whatever strategy the
 * probes got. The call stays in the code, whole; the trampoline jumps back
 * to it, and it runs where it always did. A probe on the call later makes
 * the region displace it after all (region.c). Not done for an indirect
 * call (ff: a window of its own just below the site, a mapping more) nor
 * for a call 3 bytes in (two bytes pinned: a 64 KiB window per call site).
 * Refused when the plan merged other regions; x86 only (byte-granular
 * code, 5-byte jump). */
int np_plan_pun(const struct plan *p, struct plan *out)
{
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	uint64_t k = last->pc - p->start;
	uint32_t direct_call = NP_INSN_CALL | NP_INSN_BRANCH;
	if (!pun_isa() || p->ninsn < 2 || p->merged || (last->flags & direct_call) != direct_call ||
	    k != 4 || p->end != last->pc + last->len)
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

int np_plan_trap(const struct fn_view *v, uint64_t addr, struct plan *p)
{
	p->start = addr;
	p->ninsn = 1;
	p->merged = false;
	p->pun = p->pin = 0;
	if (np_fn_view_decode(v, addr, &p->insn[0]))
		return REFUSE(p, "cannot decode the instruction at 0x%llx",
			      (unsigned long long)addr);
	if (p->insn[0].cls == NP_INSN_REJECTED)
		return REFUSE(p, "instruction at 0x%llx: %s", (unsigned long long)addr,
			      p->insn[0].reason ? p->insn[0].reason : "rejected");
	if (in_exclusive(v, addr))
		return REFUSE(p, "inside an lr/sc sequence: a trap would clear the reservation");
	p->end = addr + p->insn[0].len;
	p->scratch.scratch = free_at(v, addr);
	p->scratch.resume = free_at(v, p->end);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The free-register analysis.
 *
 * 003_2060ca1e897bea36.txt scans forward from a site: a register written
 * before it is read is free there; the scan stops at the first branch.
 * This is the same question asked as classic liveness over the whole
 * function, which answers it at every instruction at once and goes
 * further:
 *
 *   - backward: live-in = read | (live-out & ~written), live-out the union
 *     of the successors' live-in. A conditional branch has two
 *     successors, so a register is free before it only when it is free on
 *     both paths (the paper's intersection). Where control goes somewhere
 *     unknown (indirect jump, return, system instruction, bytes that do
 *     not decode, a target inside an instruction, a jump out of the
 *     function) every register is live. A jump out may be a tail call, but
 *     it may as well go to the function's cold part (GCC's .cold
 *     partitions), which continues with the same live registers.
 *   - a call writes every caller-saved register (call_clobbered) and
 *     reads those that are not dead at a callee's entry (arguments, the
 *     link, the static chain, millicode's t0). A call linking through a
 *     non-standard register (riscv t0: millicode) follows no convention,
 *     so before it every register is live.
 *   - at a function entry (NP_FREEREG_ENTRY) the convention says the
 *     entry_dead registers hold the caller's garbage. They keep holding
 *     garbage until the function itself writes them, so a forward pass
 *     tracks the registers the function may have written on some path
 *     (calls do not count: after a call a caller-saved register holds the
 *     callee's garbage, which no one reads either); an entry_dead register
 *     not yet written is free anywhere, even where the backward pass
 *     cannot see its end (a return).
 *
 * Both passes iterate to a fixed point, so loops are exact. The
 * convention is trusted as the kernel's and BPF trampolines trust it:
 * code that keeps a value in a caller-saved register across a call
 * (GCC's -fipa-ra between functions of one file) is outside it.
 */
#include <errno.h>
#include <stdlib.h>

#include "arch/freereg.h"

#define ALL UINT64_MAX

enum { SUCC_NONE = -1, SUCC_UNKNOWN = -2, SUCC_OUTSIDE = -3 };

struct np_freereg_insn {
	uint64_t pc;
	uint8_t len;
	bool opaque;      /* did not decode: every register live */
	uint32_t flags;
	uint64_t target;
	uint64_t read, written; /* a call's convention included */
	uint64_t own;             /* what the instruction itself writes */
	long fall, jump;  /* successor indexes or SUCC_* */
	uint64_t live;    /* live-in */
	uint64_t wrote;   /* may have been written on some path from the entry */
};

static long index_of(const struct np_freereg *fr, uint64_t pc)
{
	size_t lo = 0, hi = fr->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fr->insn[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < fr->n && fr->insn[lo].pc == pc ? (long)lo : -1;
}

static void add_uses(const struct np_isa *isa, const uint8_t *p, size_t avail,
		     struct np_freereg_insn *in)
{
	struct np_reg_use u;

	if (isa->reg_use(p, avail, in->pc, &u)) {
		in->opaque = true;
		return;
	}
	in->read = u.read;
	in->written = in->own = u.written;
	if (!(in->flags & NP_INSN_CALL))
		return;
	if (u.written & isa->millicode_link) {
		in->read = ALL; /* millicode: no convention holds */
		return;
	}
	in->read |= isa->call_clobbered & ~isa->entry_dead & ~u.written;
	in->written |= isa->call_clobbered;
}

static int decode_all(struct np_freereg *fr, const uint8_t *code)
{
	const struct np_isa *isa = fr->isa;
	size_t off = 0, cap = fr->len / (isa->insn_align > 1 ? isa->insn_align : 1) + 1;

	fr->insn = calloc(cap, sizeof(*fr->insn));
	if (!fr->insn)
		return -ENOMEM;
	while (off < fr->len && fr->n < cap) {
		struct np_freereg_insn *in = &fr->insn[fr->n++];
		struct np_insn ni;

		in->pc = fr->base + off;
		if (isa->decode(code + off, fr->len - off, in->pc, &ni)) {
			in->opaque = true;
			in->len = (uint8_t)(isa->insn_align ? isa->insn_align : 1);
		} else {
			in->len = ni.len;
			in->flags = ni.flags;
			in->target = ni.target;
			add_uses(isa, code + off, fr->len - off, in);
		}
		off += in->len;
	}
	return 0;
}

static long succ_of(const struct np_freereg *fr, uint64_t to)
{
	long i;

	if (to < fr->base || to >= fr->base + fr->len)
		return SUCC_OUTSIDE;
	i = index_of(fr, to);
	return i >= 0 ? i : SUCC_UNKNOWN;
}

static void link_succs(struct np_freereg *fr)
{
	for (size_t i = 0; i < fr->n; i++) {
		struct np_freereg_insn *in = &fr->insn[i];
		bool ends = in->opaque || (in->flags & (NP_INSN_NOFALL | NP_INSN_SYSTEM));

		in->fall = ends ? SUCC_NONE : i + 1 < fr->n ? (long)i + 1 : SUCC_UNKNOWN;
		in->jump = SUCC_NONE;
		if (in->opaque || (in->flags & (NP_INSN_SYSTEM | NP_INSN_RET)) ||
		    ((in->flags & NP_INSN_INDIRECT) && !(in->flags & NP_INSN_CALL)))
			in->jump = SUCC_UNKNOWN;
		else if ((in->flags & NP_INSN_BRANCH) && !(in->flags & NP_INSN_CALL))
			in->jump = succ_of(fr, in->target);
	}
}

static uint64_t live_at(const struct np_freereg *fr, long s)
{
	switch (s) {
	case SUCC_NONE: return 0;
	case SUCC_OUTSIDE: /* a tail call, or the function's own cold part */
	case SUCC_UNKNOWN: return ALL;
	default: return fr->insn[s].live;
	}
}

static void backward(struct np_freereg *fr)
{
	bool changed = true;

	while (changed) {
		changed = false;
		for (size_t i = fr->n; i-- > 0;) {
			struct np_freereg_insn *in = &fr->insn[i];
			uint64_t out = live_at(fr, in->fall) | live_at(fr, in->jump);
			uint64_t live = in->opaque ? ALL : in->read | (out & ~in->written);

			if (live != in->live) {
				in->live = live;
				changed = true;
			}
		}
	}
}

/* Forward: registers the function may have written on a path from its
 * entry. An unknown jump may land anywhere, so what reaches one reaches
 * every instruction. */
static void forward(struct np_freereg *fr)
{
	uint64_t wild = 0;
	bool changed = true;

	while (changed) {
		changed = false;
		for (size_t i = 0; i < fr->n; i++) {
			struct np_freereg_insn *in = &fr->insn[i];
			uint64_t out = in->opaque ? ALL : in->wrote | wild | in->own;
			long succ[2] = {in->fall, in->jump};

			for (int k = 0; k < 2; k++) {
				uint64_t *dst = succ[k] >= 0 ? &fr->insn[succ[k]].wrote
							     : succ[k] == SUCC_UNKNOWN ? &wild : NULL;

				if (dst && (*dst | out) != *dst) {
					*dst |= out;
					changed = true;
				}
			}
		}
	}
	for (size_t i = 0; i < fr->n; i++)
		fr->insn[i].wrote |= wild;
}

int np_freereg_analyse(const struct np_isa *isa, const uint8_t *code, size_t len, uint64_t pc,
		       unsigned flags, struct np_freereg *fr)
{
	int err;

	*fr = (struct np_freereg){.isa = isa, .base = pc, .len = len, .flags = flags};
	if (!isa->reg_use)
		return -EOPNOTSUPP;
	if ((err = decode_all(fr, code)))
		return err;
	link_succs(fr);
	backward(fr);
	if (flags & NP_FREEREG_ENTRY)
		forward(fr);
	return 0;
}

uint64_t np_freereg_at(const struct np_freereg *fr, uint64_t pc)
{
	long i = index_of(fr, pc);
	uint64_t dead;

	if (i < 0 || fr->insn[i].opaque)
		return 0;
	dead = ~fr->insn[i].live;
	if (fr->flags & NP_FREEREG_ENTRY)
		dead |= fr->isa->entry_dead & ~fr->insn[i].wrote & ~fr->insn[i].read;
	return dead & fr->isa->scratch_ok;
}

uint64_t np_freereg_over(const struct np_freereg *fr, uint64_t from, uint64_t to)
{
	uint64_t free = ALL;
	long i = index_of(fr, from);

	if (i < 0)
		return 0;
	for (; (size_t)i < fr->n && fr->insn[i].pc < to; i++)
		free &= np_freereg_at(fr, fr->insn[i].pc);
	return free;
}

void np_freereg_release(struct np_freereg *fr)
{
	free(fr->insn);
	fr->insn = NULL;
	fr->n = 0;
}

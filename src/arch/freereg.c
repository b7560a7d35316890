/* SPDX-License-Identifier: MIT */
/*
 * The free-register analysis.
 *
 * The riscv64 kernel's optimized-kprobe patch set scans forward from a
 * site for the register its auipc+jalr detour clobbers: a register written
 * before it is read is free there; the scan stops at the first branch.
 * This is the same question asked as classic liveness over the whole
 * function, which answers it at every instruction at once and goes
 * further:
 *
 *   - backward: live-in = read | (live-out & ~written), live-out the union
 *     of the successors' live-in. A conditional branch has two
 *     successors, so a register is free before it only when it is free on
 *     both paths (the intersection the riscv64 optprobes' scan takes). Where control goes somewhere
 *     unknown (indirect jump, system instruction, bytes that do not
 *     decode, a target inside an instruction, a jump out of the function)
 *     every register is live. A jump out may be a tail call, but it may as
 *     well go to the function's cold part (GCC's .cold partitions), which
 *     continues with the same live registers.
 *
 * What a caller and a callee read of each other's registers is where the
 * calling convention is not enough. GCC's -fipa-ra (on at -O2; x86-64 and
 * arm64 implement it, riscv64 does not as of GCC 12) lets a caller keep a
 * value in a caller-saved register across a direct call to a function
 * whose body it compiled (same file or LTO, not interposable) when that
 * function does not write the register. The set it trusts is the
 * callee's clobber set: every register any instruction of the callee
 * writes, and what its own calls clobber (final.cc,
 * collect_fn_hard_reg_usage). The registers decoded here as written are a
 * part of that set, never more, so (struct np_freereg_env):
 *
 *   - a return reads every register but those no caller can rely on once
 *     the function has returned (ret_dead): at least the caller-saved
 *     ones the function itself writes somewhere, or every caller-saved one
 *     when the module shows that only the convention reaches it (no
 *     direct call or jump to it: src/arch/regsum.c). Never the result
 *     registers (ret_regs).
 *   - a call writes what its callee's clobber set holds as far as the
 *     module shows it (call_kills): every caller-saved register for a
 *     call through a register or through the PLT, which GCC compiles to
 *     the convention, and for a call to the function itself (GCC has no
 *     clobber set of the function it is compiling); at least call_always
 *     (arm64 x16, x17: every call may pass through a veneer) for a direct
 *     call to a function of the module, which may leave any other
 *     register as it was. It reads those that are not dead at a callee's
 *     entry (arguments, the link, the static chain, millicode's t0). A
 *     call linking through a non-standard register (riscv t0: millicode)
 *     follows no convention, so before it every register is live, and so
 *     at a return through one.
 *   - at a function entry (NP_FREEREG_ENTRY) the convention says the
 *     entry_dead registers hold the caller's garbage. Of them, those in
 *     ret_dead keep holding garbage no one reads until the function itself
 *     writes them, so a forward pass tracks the registers the function
 *     may have written on some path (calls do not count: after one such a
 *     register holds the callee's garbage, which no one reads either); one
 *     not yet written is free anywhere, even where the backward pass
 *     cannot see its end.
 *
 * Both passes iterate to a fixed point, so loops are exact. What stays
 * trusted is what every compiler keeps: a caller relies on no register
 * its callee's clobber set holds, a callee reads no register but its
 * arguments (and the ISA's exceptions above). Hand-written code that
 * agrees otherwise with its callee is outside it.
 */
#include <errno.h>
#include <stdlib.h>

#include "arch/freereg.h"

#define ALL UINT64_MAX

enum { SUCC_NONE = -1, SUCC_UNKNOWN = -2, SUCC_OUTSIDE = -3, SUCC_RETURN = -4 };

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

static int decode_all(struct np_freereg *fr, const uint8_t *code)
{
	const struct np_isa *isa = fr->isa;
	size_t off = 0, cap = fr->len / (isa->insn_align > 1 ? isa->insn_align : 1) + 1;

	fr->insn = calloc(cap, sizeof(*fr->insn));
	if (!fr->insn)
		return -ENOMEM;
	while (off < fr->len && fr->n < cap) {
		struct np_freereg_insn *in = &fr->insn[fr->n++];
		struct np_reg_use u;
		struct np_insn ni;

		in->pc = fr->base + off;
		if (isa->decode(code + off, fr->len - off, in->pc, &ni) ||
		    isa->reg_use(code + off, fr->len - off, in->pc, &u)) {
			in->opaque = true;
			in->len = (uint8_t)(isa->insn_align ? isa->insn_align : 1);
		} else {
			in->len = ni.len;
			in->flags = ni.flags;
			in->target = ni.target;
			in->read = u.read;
			in->written = in->own = u.written;
			if (isa->pair_target && (ni.flags & NP_INSN_PCREL) && off + ni.len < fr->len)
				in->target = isa->pair_target(code + off, fr->len - off, in->pc);
		}
		off += in->len;
	}
	return 0;
}

/* A jump or call the ISA writes as two instructions (riscv auipc+jalr:
 * the assembler's call and tail) is direct: its target is the first's. */
static void pair_up(struct np_freereg *fr)
{
	for (size_t i = 0; fr->isa->pair_target && i + 1 < fr->n; i++) {
		struct np_freereg_insn *a = &fr->insn[i], *b = &fr->insn[i + 1];

		if (!a->opaque && (a->flags & NP_INSN_PCREL) && a->target && !b->opaque &&
		    (b->flags & NP_INSN_INDIRECT)) {
			b->flags = (b->flags & ~NP_INSN_INDIRECT) | NP_INSN_BRANCH;
			b->target = a->target;
		}
	}
}

/* The registers a call leaves holding nothing its caller reads: the
 * callee's clobber set, as far as it is known. */
static uint64_t call_kills(const struct np_freereg *fr, const struct np_freereg_insn *in)
{
	const struct np_isa *isa = fr->isa;
	bool direct = (in->flags & NP_INSN_BRANCH) && !(in->flags & NP_INSN_INDIRECT);

	if (!direct || in->target == fr->base) /* the convention: GCC compiles to it */
		return isa->call_clobbered;
	if (fr->env && fr->env->call_kills)
		return isa->call_always | fr->env->call_kills(fr->env->cookie, in->target);
	return isa->call_always;
}

/* Calls: what the callee's convention adds to the instruction's own
 * reads and writes. Returns what the function (its calls included) may
 * write, the part of its clobber set that a caller cannot rely on. A call
 * to itself adds only the link and call_always there: GCC leaves
 * recursive calls out of the set (the body they run is this one). */
static uint64_t add_calls(struct np_freereg *fr)
{
	const struct np_isa *isa = fr->isa;
	uint64_t clobbers = 0;

	for (size_t i = 0; i < fr->n; i++) {
		struct np_freereg_insn *in = &fr->insn[i];
		bool millicode = ((in->flags & NP_INSN_CALL) && (in->own & isa->millicode_link)) ||
				 ((in->flags & NP_INSN_RET) && (in->read & isa->millicode_link));

		if (in->opaque)
			continue;
		clobbers |= in->own;
		if (millicode) {
			in->read = ALL; /* a link the convention does not know */
		} else if (in->flags & NP_INSN_CALL) {
			in->read |= isa->call_clobbered & ~isa->entry_dead & ~in->own;
			in->written |= call_kills(fr, in);
			clobbers |= in->target == fr->base && (in->flags & NP_INSN_BRANCH)
					    ? isa->call_always : in->written;
		}
	}
	return clobbers & isa->call_clobbered;
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
		if (!in->opaque && (in->flags & NP_INSN_RET) && in->read != ALL)
			in->jump = SUCC_RETURN;
		else if (in->opaque || (in->flags & (NP_INSN_SYSTEM | NP_INSN_RET)) ||
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
	case SUCC_RETURN: return ~fr->ret_dead;
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
		       unsigned flags, const struct np_freereg_env *env, struct np_freereg *fr)
{
	int err;
	uint64_t clobbers;

	*fr = (struct np_freereg){.isa = isa, .base = pc, .len = len, .flags = flags, .env = env};
	if (!isa->reg_use)
		return -EOPNOTSUPP;
	if ((err = decode_all(fr, code)))
		return err;
	pair_up(fr);
	clobbers = add_calls(fr);
	/* What the function writes no caller relies on; the module may know
	 * more (env). Never the result registers. */
	fr->ret_dead = (clobbers | (isa->call_always & isa->call_clobbered) |
			(env ? env->ret_dead : 0)) & ~isa->ret_regs;
	link_succs(fr);
	backward(fr);
	if (flags & NP_FREEREG_ENTRY)
		forward(fr);
	fr->env = NULL;
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
		dead |= fr->isa->entry_dead & fr->ret_dead & ~fr->insn[i].wrote &
			~fr->insn[i].read;
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

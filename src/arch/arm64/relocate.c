/* SPDX-License-Identifier: MIT */
/*
 * Relocation: the displaced A64 words, rewritten to run at dst_pc with
 * the meaning they had at src_pc.
 *
 * What depends on where an A64 instruction sits, and what each becomes:
 *
 *   b, b.cond, cbz/cbnz, tbz/tbnz
 *       re-encoded with the new offset while the field reaches (imm26
 *       +-128 MiB, imm19 +-1 MiB, imm14 +-32 KiB); beyond, the condition
 *       is inverted to skip over an unconditional b (`cbz x0, T` becomes
 *       `cbnz x0, 1f; b T; 1:`), and a b that cannot reach T either is
 *       the linker's x16 veneer (emit.c). A branch that far from its
 *       trampoline is more than 1 MiB from the site (the core places
 *       trampolines within jump_reach - 1 MiB), so it leaves the function,
 *       and a linker may already put a veneer there that clobbers x16.
 *   bl  the link must stay the ORIGINAL return address (unwinders, return
 *       probes and the program look at x30): x30 = src_pc + 4 (adr, adrp
 *       + add or a literal), then b to the target.
 *   blr Xn (and blraa/blraaz): `mov x16, Xn; x30 = return; br x16`. Not
 *       `br Xn`: under BTI a br through any register other than x16/x17
 *       is refused by the `bti c` pad that starts a called function. x16
 *       and x17 are free at a call by AAPCS64 (veneers and PLT stubs
 *       clobber them between caller and callee).
 *   adr, adrp
 *       Xd = the same address, built with Xd itself (emit.c).
 *   ldr Wt/Xt, ldrsw literal
 *       re-encoded while imm19 reaches; else Xt = address, then
 *       `ldr Wt/Xt, [Xt]` or `ldrsw Xt, [Xt]`: the destination is the
 *       scratch register.
 *   ldr St/Dt/Qt literal
 *       re-encoded while imm19 reaches; else through x16, saved on the
 *       stack for the duration: `str x16, [sp, #-16]!; x16 = address;
 *       ldr Qt, [x16]; ldr x16, [sp], #16`. The pre-indexed store moves sp
 *       and writes in one instruction, so nothing is written below sp.
 *   prfm literal
 *       re-encoded while imm19 reaches, else a nop: a prefetch has no
 *       architectural effect.
 *
 * Everything else is copied. Instructions decode.c rejects fail with
 * -EOPNOTSUPP.
 *
 * Far branches and the jump back, by entry point:
 *
 *   a64_relocate (np_isa.relocate): for a trampoline within jump_reach
 *       less 1 MiB of the site, as the core places the short form's. A
 *       branch it cannot reach with b is more than 1 MiB from the site,
 *       so outside the function, and goes through the x16 veneer; the
 *       jump back is a plain b (-ERANGE beyond).
 *   a64_relocate_via (np_isa.relocate_via): anywhere within +-2 GiB (the
 *       long form, out-of-line copies placed far). A far branch goes
 *       through a register of s->scratch (adrp+add+br, or the veneer
 *       through it beyond +-4 GiB); without one, through the x16 veneer
 *       only when its target is at least 1 MiB from the site (it leaves
 *       the function, where AAPCS64 lets a veneer clobber x16), else
 *       -ERANGE. The jump back goes through a register of s->resume when
 *       b cannot reach.
 */
#include <errno.h>

#include "arch/arm64/internal.h"

#define NOP 0xd503201fu

#define LEAVES (1ll << 20) /* a target this far from the site is another function's */

struct far {
	uint64_t scratch; /* dead over the displaced words */
	uint64_t src_pc;  /* the word being relocated */
	bool any_x16;     /* a64_relocate: every far target leaves the function */
};

/* An unconditional jump to 'to' from the output's pc (see the top). */
static int out_branch(struct a64_out *o, uint64_t to, const struct far *f)
{
	int64_t from_site = (int64_t)(to - f->src_pc);
	int err = a64_out_jump(o, to, f->scratch), r = a64_pick(f->scratch);

	if (err != -ERANGE)
		return err;
	if (r >= 0)
		return a64_out_veneer(o, (unsigned)r, to);
	if (f->any_x16 || from_site >= LEAVES || from_site <= -LEAVES)
		return a64_out_veneer(o, A64_X16, to);
	return -ERANGE;
}

/* How many bytes out_branch would write at pc (the skip of an inverted
 * conditional branch); -ERANGE when it cannot. */
static int branch_len(uint64_t pc, uint64_t to, const struct far *f)
{
	uint8_t buf[16];
	struct a64_out o = {.buf = buf, .cap = sizeof(buf), .pc = pc};
	int err = out_branch(&o, to, f);

	return err ? err : (int)o.len;
}

static uint32_t orr_mov(unsigned rd, unsigned rm) /* mov Xd, Xm (rm 31: xzr) */
{
	return 0xaa0003e0u | rm << 16 | rd;
}

/* The word with its imm19 (23:5) or imm14 (18:5) field set to reach 'to'
 * from 'pc'; false when the field cannot hold the offset. */
static bool with_offset(uint32_t w, uint64_t pc, uint64_t to, unsigned bits, uint32_t *out)
{
	int64_t off = (int64_t)(to - pc);
	uint32_t mask = ((1u << bits) - 1u) << 5;

	if ((off & 3) || !a64_fits(off / 4, bits))
		return false;
	*out = (w & ~mask) | (((uint32_t)(off / 4) << 5) & mask);
	return true;
}

static unsigned field_bits(uint32_t w)
{
	return a64_is_tbz(w) || a64_is_tbnz(w) ? 14 : 19;
}

/* Out of the field's reach, the inverted branch skips the jump. */
static int reloc_cond(struct a64_out *o, uint32_t w, uint64_t to, const struct far *f)
{
	unsigned bits = field_bits(w);
	uint32_t nw, inv;
	int len, err;

	if (a64_is_b_cond(w) && a64_bits(w, 1, 3) == 7) /* al, nv */
		return out_branch(o, to, f);
	if (with_offset(w, a64_out_pc(o), to, bits, &nw))
		return a64_out_word(o, nw);
	if ((len = branch_len(a64_out_pc(o) + 4, to, f)) < 0)
		return len;
	/* b.cond: flip the condition's low bit (and drop bc's hint bit);
	 * cbz/cbnz, tbz/tbnz: flip op (bit 24). */
	inv = a64_is_b_cond(w) ? (w ^ 1u) & ~0x10u : w ^ (1u << 24);
	with_offset(inv, a64_out_pc(o), a64_out_pc(o) + 4 + (uint64_t)len, bits, &inv);
	if ((err = a64_out_word(o, inv)))
		return err;
	return out_branch(o, to, f);
}

static int reloc_bl(struct a64_out *o, uint64_t src_pc, uint64_t to, const struct far *f)
{
	int err = a64_out_addr(o, A64_LR, src_pc + 4);

	return err ? err : out_branch(o, to, f);
}

/* blr, blraaz/blrabz, blraa/blrab: through x16 (and x17 for a modifier). */
static int reloc_blr(struct a64_out *o, uint32_t w, uint64_t src_pc)
{
	unsigned n = a64_bits(w, 5, 5), m = a64_bits(w, 0, 5), key = w & (1u << 10);
	uint32_t go = 0xd61f0000u | A64_X16 << 5; /* br x16 */
	int err = 0;

	if (a64_is_blra(w)) {
		if (n == A64_X17 && m == A64_X16)
			return -EOPNOTSUPP; /* the two moves would need a third register */
		if (n == A64_X17)
			err = a64_out_word(o, orr_mov(A64_X16, n));
		if (!err) /* mov x17, Xm|sp */
			err = a64_out_word(o, m == 31 ? 0x910003f1u : orr_mov(A64_X17, m));
		go = 0xd71f0800u | key | A64_X16 << 5 | A64_X17; /* braa/brab x16, x17 */
	} else if (a64_is_blraz(w)) {
		go = 0xd61f081fu | key | A64_X16 << 5; /* braaz/brabz x16 */
	}
	if (!err && n != A64_X16 && !(a64_is_blra(w) && n == A64_X17))
		err = a64_out_word(o, orr_mov(A64_X16, n));
	if (!err)
		err = a64_out_addr(o, A64_LR, src_pc + 4);
	return err ? err : a64_out_word(o, go);
}

static int reloc_ldr_gpr(struct a64_out *o, uint32_t w, uint64_t to)
{
	unsigned rt = a64_bits(w, 0, 5);
	uint32_t nw, load;
	int err;

	if (with_offset(w, a64_out_pc(o), to, 19, &nw))
		return a64_out_word(o, nw);
	if (rt == A64_ZR)
		return a64_out_word(o, NOP); /* a load into xzr: only its address mattered */
	if (a64_is_ldrsw_lit(w))
		load = 0xb9800000u; /* ldrsw Xt, [Xt] */
	else
		load = a64_bits(w, 30, 1) ? 0xf9400000u : 0xb9400000u; /* ldr Xt/Wt, [Xt] */
	if ((err = a64_out_addr(o, rt, to)))
		return err;
	return a64_out_word(o, load | rt << 5 | rt);
}

static int reloc_ldr_fp(struct a64_out *o, uint32_t w, uint64_t to)
{
	/* ldr St/Dt/Qt, [x16] (unsigned offset 0), by opc (31:30) */
	static const uint32_t load[3] = {0xbd400000u, 0xfd400000u, 0x3dc00000u};
	uint32_t nw;
	int err;

	if (with_offset(w, a64_out_pc(o), to, 19, &nw))
		return a64_out_word(o, nw);
	if ((err = a64_out_word(o, 0xf81f0ff0u))) /* str x16, [sp, #-16]! */
		return err;
	if ((err = a64_out_addr(o, A64_X16, to)))
		return err;
	if ((err = a64_out_word(o, load[a64_bits(w, 30, 2)] | A64_X16 << 5 | a64_bits(w, 0, 5))))
		return err;
	return a64_out_word(o, 0xf84107f0u); /* ldr x16, [sp], #16 */
}

static int reloc_one(struct a64_out *o, uint32_t w, const struct np_insn *n, const struct far *f)
{
	uint32_t nw;

	if (n->cls == NP_INSN_REJECTED)
		return -EOPNOTSUPP;
	if (a64_is_b(w))
		return out_branch(o, n->target, f);
	if (a64_is_bl(w))
		return reloc_bl(o, n->pc, n->target, f);
	if (n->flags & NP_INSN_BRANCH)
		return reloc_cond(o, w, n->target, f);
	if (a64_is_blr(w) || a64_is_blraz(w) || a64_is_blra(w))
		return reloc_blr(o, w, n->pc);
	if (a64_is_adr(w) || a64_is_adrp(w))
		return a64_bits(w, 0, 5) == A64_ZR ? a64_out_word(o, NOP)
						   : a64_out_addr(o, a64_bits(w, 0, 5), n->target);
	if (a64_is_ldr_lit(w) || a64_is_ldrsw_lit(w))
		return reloc_ldr_gpr(o, w, n->target);
	if (a64_is_ldr_lit_fp(w))
		return reloc_ldr_fp(o, w, n->target);
	if (a64_is_prfm_lit(w))
		return a64_out_word(o, with_offset(w, a64_out_pc(o), n->target, 19, &nw) ? nw : NOP);
	return a64_out_word(o, w);
}

static int relocate(const struct np_reloc *r, const struct np_reloc_scratch *s, bool any_x16)
{
	struct a64_out o = {.buf = r->dst, .cap = r->dst_cap, .pc = r->dst_pc};
	struct far f = {.scratch = s->scratch, .any_x16 = any_x16};
	int err = 0;

	if ((r->src_len & 3) || (r->dst_pc & 3) || (r->src_pc & 3))
		return -EILSEQ;
	for (size_t off = 0; off < r->src_len; off += 4) {
		struct np_insn n;

		if ((err = a64_decode(r->src + off, r->src_len - off, r->src_pc + off, &n)))
			return err;
		f.src_pc = n.pc;
		if ((err = reloc_one(&o, a64_word(r->src + off), &n, &f)))
			return err;
	}
	if (r->resume_pc)
		err = a64_out_jump(&o, r->resume_pc, s->resume);
	return err ? err : (int)o.len;
}

int a64_relocate(const struct np_reloc *r)
{
	return relocate(r, &(struct np_reloc_scratch){0, 0}, true);
}

int a64_relocate_via(const struct np_reloc *r, const struct np_reloc_scratch *s)
{
	return relocate(r, s, false);
}

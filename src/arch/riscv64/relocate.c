/* SPDX-License-Identifier: MIT */
/*
 * Relocation: the displaced instructions, rewritten so that each means
 * at dst_pc what it meant at src_pc, then a jump back to resume_pc.
 *
 * Only five forms depend on their address; compressed ones arrive
 * expanded, so c.j, c.jr, c.jalr, c.beqz and c.bnez are among them:
 *
 *   auipc rd, X     rd = the original pc + X, exactly, by auipc+addi
 *                   from the new pc (8 bytes, +-2 GiB);
 *   jal rd, T       jal when T is within +-1 MiB; else the link (if
 *                   any) is set to the original return address and the
 *                   jump goes through a scratch register;
 *   jalr rd, o(rs1) rd != x0: the link is set to the original return
 *                   address, then `jalr x0, o(rs1)`; when rd is rs1 the
 *                   target is first computed into a scratch register;
 *   bcc rs1, rs2, T the branch within +-4 KiB; else the inverted branch
 *                   skips a jump (jal or through a scratch) to T.
 *
 * A callee therefore always sees the program's own return address, so
 * unwinders never meet a trampoline address. Every other instruction is
 * copied as it is, in its own length. A scratch register comes from
 * s->scratch (dead at every displaced instruction, see arch.h); the jump
 * back from s->resume. With none, a form that needs one fails
 * with -ERANGE.
 */
#include <errno.h>
#include <string.h>

#include "arch/riscv64/internal.h"

static int reloc_auipc(struct rv_out *o, const struct rv_insn *in, uint64_t pc)
{
	unsigned rd = rv_rd(in->x);

	if (rd == RV_ZERO) /* a hint: no effect */
		return 0;
	return rv_out_addr(o, rd, pc + (uint64_t)rv_imm_u(in->x));
}

static int reloc_jal(struct rv_out *o, const struct rv_insn *in, uint64_t pc, uint64_t scratch)
{
	unsigned rd = rv_rd(in->x);
	uint64_t to = pc + (uint64_t)rv_imm_j(in->x);
	int64_t off = (int64_t)(to - rv_out_pc(o));
	int err;

	if (rv_fits(off, 21))
		return rv_out_u32(o, rv_enc_j(rd, off));
	if (rd != RV_ZERO && (err = rv_out_addr(o, rd, pc + in->len)))
		return err;
	return rv_out_jump(o, to, scratch & ~(1ull << rd));
}

static int reloc_jalr(struct rv_out *o, const struct rv_insn *in, uint64_t pc, uint64_t scratch)
{
	unsigned rd = rv_rd(in->x), rs1 = rv_rs1(in->x);
	int64_t imm = rv_imm_i(in->x);
	int s, err;

	if (rd == RV_ZERO) /* jr, c.jr, ret: nothing depends on the pc */
		return in->len == 2 ? rv_out_u16(o, in->c) : rv_out_u32(o, in->x);
	if (rd != rs1) {
		err = rv_out_addr(o, rd, pc + in->len);
		return err ? err : rv_out_u32(o, rv_enc_i(RV_OP_JALR, 0, RV_ZERO, rs1, imm));
	}
	s = rv_pick(scratch, 1ull << rd);
	if (s < 0)
		return -ERANGE;
	if ((err = rv_out_u32(o, rv_enc_i(RV_OP_IMM, 0, (unsigned)s, rs1, imm))) ||
	    (err = rv_out_addr(o, rd, pc + in->len)))
		return err;
	return rv_out_u32(o, rv_enc_i(RV_OP_JALR, 0, RV_ZERO, (unsigned)s, 0));
}

static int reloc_branch(struct rv_out *o, const struct rv_insn *in, uint64_t pc, uint64_t scratch)
{
	uint64_t to = pc + (uint64_t)rv_imm_b(in->x);
	int64_t off = (int64_t)(to - rv_out_pc(o));
	unsigned f3 = rv_funct3(in->x), rs1 = rv_rs1(in->x), rs2 = rv_rs2(in->x);
	struct rv_out probe;
	int err;

	if (rv_fits(off, 13))
		return rv_out_u32(o, rv_enc_b(f3, rs1, rs2, off));
	/* The jump's length decides the skip: try it after a 4-byte branch. */
	probe = (struct rv_out){(uint8_t[8]){0}, 8, 0, rv_out_pc(o) + 4};
	if ((err = rv_out_jump(&probe, to, scratch)))
		return err;
	if ((err = rv_out_u32(o, rv_enc_b(f3 ^ 1, rs1, rs2, (int64_t)probe.len + 4))))
		return err;
	return rv_out_jump(o, to, scratch);
}

static int reloc_one(struct rv_out *o, const struct rv_insn *in, uint64_t pc, uint64_t scratch)
{
	switch (rv_opcode(in->x)) {
	case RV_OP_AUIPC:
		return reloc_auipc(o, in, pc);
	case RV_OP_JAL:
		return reloc_jal(o, in, pc, scratch);
	case RV_OP_JALR:
		return reloc_jalr(o, in, pc, scratch);
	case RV_OP_BRANCH:
		return reloc_branch(o, in, pc, scratch);
	default:
		return in->len == 2 ? rv_out_u16(o, in->c) : rv_out_u32(o, in->x);
	}
}

int rv_relocate(const struct np_reloc *r)
{
	return rv_relocate_via(r, &(struct np_reloc_scratch){0, 0});
}

int rv_relocate_via(const struct np_reloc *r, const struct np_reloc_scratch *s)
{
	struct rv_out o = {r->dst, r->dst ? r->dst_cap : 0, 0, r->dst_pc};
	size_t off = 0;
	int err;

	while (off < r->src_len) {
		struct np_insn ni;
		struct rv_insn in;

		if ((err = rv_decode(r->src + off, r->src_len - off, r->src_pc + off, &ni)))
			return err == -ENODATA ? -EILSEQ : err;
		rv_fetch(r->src + off, r->src_len - off, &in);
		if (ni.cls == NP_INSN_REJECTED)
			return -EOPNOTSUPP;
		if ((err = reloc_one(&o, &in, r->src_pc + off, s->scratch)))
			return err;
		off += in.len;
	}
	if (r->resume_pc && (err = rv_out_jump(&o, r->resume_pc, s->resume)))
		return err;
	return (int)o.len;
}

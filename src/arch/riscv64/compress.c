/* SPDX-License-Identifier: MIT */
/*
 * Fetching an instruction, and expanding the C extension.
 *
 * The low two bits of the first parcel give the length: 11 is a 32-bit
 * word, anything else a 16-bit compressed parcel (longer encodings are
 * not RV64GC and are refused). A compressed parcel is replaced by the
 * 32-bit instruction it abbreviates (RISC-V unprivileged ISA, chapter
 * "C" Standard Extension, tables 16.5 to 16.7), so the rest of the ISA
 * code never meets a compressed encoding. Two choices differ from the
 * manual's expansion text and keep the same architectural effect: c.mv
 * becomes `addi rd, rs2, 0` (objdump prints both as mv) and c.nop the
 * canonical nop.
 *
 * Immediates are scattered over the parcel; each is gathered by one
 * helper, with the bit diagram from the manual above it.
 */
#include <errno.h>

#include "arch/riscv64/internal.h"

static unsigned bits(uint16_t c, unsigned hi, unsigned lo)
{
	return (unsigned)(c >> lo) & ((1u << (hi - lo + 1)) - 1);
}

/* rd', rs1', rs2': the eight registers x8..x15 */
static unsigned creg(uint16_t c, unsigned lo)
{
	return 8 + bits(c, lo + 2, lo);
}

static uint32_t enc_r(unsigned op, unsigned f3, unsigned f7, unsigned rd, unsigned rs1,
		      unsigned rs2)
{
	return (uint32_t)f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}

static uint32_t enc_s(unsigned op, unsigned f3, unsigned rs1, unsigned rs2, int64_t imm)
{
	uint32_t u = (uint32_t)imm & 0xfff;

	return (u >> 5) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (u & 31) << 7 | op;
}

/* 12 | 6:2 -> imm[5|4:0], sign-extended: c.addi, c.li, c.andi, ... */
static int64_t imm6(uint16_t c)
{
	return rv_sext(bits(c, 12, 12) << 5 | bits(c, 6, 2), 6);
}

/* c.addi4spn  12:5 -> nzuimm[5:4|9:6|2|3] */
static unsigned uimm_4spn(uint16_t c)
{
	return bits(c, 12, 11) << 4 | bits(c, 10, 7) << 6 | bits(c, 6, 6) << 2 | bits(c, 5, 5) << 3;
}

/* c.ld/c.sd/c.fld/c.fsd  12:10 -> uimm[5:3], 6:5 -> uimm[7:6] */
static unsigned uimm_d(uint16_t c)
{
	return bits(c, 12, 10) << 3 | bits(c, 6, 5) << 6;
}

/* c.lw/c.sw  12:10 -> uimm[5:3], 6 -> uimm[2], 5 -> uimm[6] */
static unsigned uimm_w(uint16_t c)
{
	return bits(c, 12, 10) << 3 | bits(c, 6, 6) << 2 | bits(c, 5, 5) << 6;
}

/* c.addi16sp  12 -> nzimm[9], 6:2 -> nzimm[4|6|8:7|5] */
static int64_t imm_16sp(uint16_t c)
{
	unsigned v = bits(c, 12, 12) << 9 | bits(c, 6, 6) << 4 | bits(c, 5, 5) << 6 |
		     bits(c, 4, 3) << 7 | bits(c, 2, 2) << 5;

	return rv_sext(v, 10);
}

/* c.j  12:2 -> offset[11|4|9:8|10|6|7|3:1|5] */
static int64_t imm_j(uint16_t c)
{
	unsigned v = bits(c, 12, 12) << 11 | bits(c, 11, 11) << 4 | bits(c, 10, 9) << 8 |
		     bits(c, 8, 8) << 10 | bits(c, 7, 7) << 6 | bits(c, 6, 6) << 7 |
		     bits(c, 5, 3) << 1 | bits(c, 2, 2) << 5;

	return rv_sext(v, 12);
}

/* c.beqz/c.bnez  12:10 -> offset[8|4:3], 6:2 -> offset[7:6|2:1|5] */
static int64_t imm_b(uint16_t c)
{
	unsigned v = bits(c, 12, 12) << 8 | bits(c, 11, 10) << 3 | bits(c, 6, 5) << 6 |
		     bits(c, 4, 3) << 1 | bits(c, 2, 2) << 5;

	return rv_sext(v, 9);
}

/* c.ldsp/c.fldsp  12 -> uimm[5], 6:2 -> uimm[4:3|8:6] */
static unsigned uimm_ldsp(uint16_t c)
{
	return bits(c, 12, 12) << 5 | bits(c, 6, 5) << 3 | bits(c, 4, 2) << 6;
}

/* c.lwsp  12 -> uimm[5], 6:2 -> uimm[4:2|7:6] */
static unsigned uimm_lwsp(uint16_t c)
{
	return bits(c, 12, 12) << 5 | bits(c, 6, 4) << 2 | bits(c, 3, 2) << 6;
}

/* c.sdsp/c.fsdsp  12:7 -> uimm[5:3|8:6]; c.swsp 12:7 -> uimm[5:2|7:6] */
static unsigned uimm_sdsp(uint16_t c)
{
	return bits(c, 12, 10) << 3 | bits(c, 9, 7) << 6;
}

static unsigned uimm_swsp(uint16_t c)
{
	return bits(c, 12, 9) << 2 | bits(c, 8, 7) << 6;
}

static uint32_t expand_q0(uint16_t c)
{
	unsigned rd = creg(c, 2), rs1 = creg(c, 7);

	switch (bits(c, 15, 13)) {
	case 0: /* c.addi4spn: addi rd', sp, nzuimm */
		return uimm_4spn(c) ? rv_enc_i(RV_OP_IMM, 0, rd, RV_SP, uimm_4spn(c)) : 0;
	case 1: /* c.fld */
		return rv_enc_i(RV_OP_LOAD_FP, 3, rd, rs1, uimm_d(c));
	case 2: /* c.lw */
		return rv_enc_i(RV_OP_LOAD, 2, rd, rs1, uimm_w(c));
	case 3: /* c.ld */
		return rv_enc_i(RV_OP_LOAD, 3, rd, rs1, uimm_d(c));
	case 5: /* c.fsd */
		return enc_s(RV_OP_STORE_FP, 3, rs1, rd, uimm_d(c));
	case 6: /* c.sw */
		return enc_s(RV_OP_STORE, 2, rs1, rd, uimm_w(c));
	case 7: /* c.sd */
		return enc_s(RV_OP_STORE, 3, rs1, rd, uimm_d(c));
	default: /* 4: reserved */
		return 0;
	}
}

/* c.srli, c.srai, c.andi, c.sub ... c.addw: funct3 100 of quadrant 1 */
static uint32_t expand_q1_alu(uint16_t c)
{
	static const unsigned f3[4] = {0 /* sub */, 4 /* xor */, 6 /* or */, 7 /* and */};
	unsigned rd = creg(c, 7), rs2 = creg(c, 2), shamt = bits(c, 12, 12) << 5 | bits(c, 6, 2);
	unsigned op2 = bits(c, 6, 5);

	switch (bits(c, 11, 10)) {
	case 0: /* c.srli */
		return rv_enc_i(RV_OP_IMM, 5, rd, rd, shamt);
	case 1: /* c.srai */
		return rv_enc_i(RV_OP_IMM, 5, rd, rd, 0x400 | shamt);
	case 2: /* c.andi */
		return rv_enc_i(RV_OP_IMM, 7, rd, rd, imm6(c));
	default:
		break;
	}
	if (!bits(c, 12, 12))
		return enc_r(RV_OP_OP, f3[op2], op2 == 0 ? 0x20 : 0, rd, rd, rs2);
	if (op2 >= 2) /* reserved */
		return 0;
	return enc_r(RV_OP_OP_32, 0, op2 == 0 ? 0x20 : 0, rd, rd, rs2); /* c.subw, c.addw */
}

static uint32_t expand_q1(uint16_t c)
{
	unsigned rd = bits(c, 11, 7);

	switch (bits(c, 15, 13)) {
	case 0: /* c.addi (c.nop when rd = 0) */
		return rv_enc_i(RV_OP_IMM, 0, rd, rd, imm6(c));
	case 1: /* c.addiw */
		return rd ? rv_enc_i(RV_OP_IMM_32, 0, rd, rd, imm6(c)) : 0;
	case 2: /* c.li */
		return rv_enc_i(RV_OP_IMM, 0, rd, RV_ZERO, imm6(c));
	case 3:
		if (rd == RV_SP) /* c.addi16sp */
			return imm_16sp(c) ? rv_enc_i(RV_OP_IMM, 0, RV_SP, RV_SP, imm_16sp(c)) : 0;
		/* c.lui */
		return imm6(c) ? rv_enc_u(RV_OP_LUI, rd, imm6(c) * 4096) : 0;
	case 4:
		return expand_q1_alu(c);
	case 5: /* c.j */
		return rv_enc_j(RV_ZERO, imm_j(c));
	case 6: /* c.beqz */
		return rv_enc_b(0, creg(c, 7), RV_ZERO, imm_b(c));
	default: /* c.bnez */
		return rv_enc_b(1, creg(c, 7), RV_ZERO, imm_b(c));
	}
}

/* funct3 100 of quadrant 2: c.jr, c.mv, c.ebreak, c.jalr, c.add */
static uint32_t expand_q2_jr(uint16_t c)
{
	unsigned rd = bits(c, 11, 7), rs2 = bits(c, 6, 2);

	if (!bits(c, 12, 12)) {
		if (rs2) /* c.mv */
			return rv_enc_i(RV_OP_IMM, 0, rd, rs2, 0);
		return rd ? rv_enc_i(RV_OP_JALR, 0, RV_ZERO, rd, 0) : 0; /* c.jr */
	}
	if (rs2) /* c.add */
		return enc_r(RV_OP_OP, 0, 0, rd, rd, rs2);
	if (!rd) /* c.ebreak */
		return 0x00100073;
	return rv_enc_i(RV_OP_JALR, 0, RV_RA, rd, 0); /* c.jalr */
}

static uint32_t expand_q2(uint16_t c)
{
	unsigned rd = bits(c, 11, 7), rs2 = bits(c, 6, 2);

	switch (bits(c, 15, 13)) {
	case 0: /* c.slli */
		return rv_enc_i(RV_OP_IMM, 1, rd, rd, bits(c, 12, 12) << 5 | rs2);
	case 1: /* c.fldsp */
		return rv_enc_i(RV_OP_LOAD_FP, 3, rd, RV_SP, uimm_ldsp(c));
	case 2: /* c.lwsp */
		return rd ? rv_enc_i(RV_OP_LOAD, 2, rd, RV_SP, uimm_lwsp(c)) : 0;
	case 3: /* c.ldsp */
		return rd ? rv_enc_i(RV_OP_LOAD, 3, rd, RV_SP, uimm_ldsp(c)) : 0;
	case 4:
		return expand_q2_jr(c);
	case 5: /* c.fsdsp */
		return enc_s(RV_OP_STORE_FP, 3, RV_SP, rs2, uimm_sdsp(c));
	case 6: /* c.swsp */
		return enc_s(RV_OP_STORE, 2, RV_SP, rs2, uimm_swsp(c));
	default: /* c.sdsp */
		return enc_s(RV_OP_STORE, 3, RV_SP, rs2, uimm_sdsp(c));
	}
}

uint32_t rv_expand(uint16_t c)
{
	switch (c & 3) {
	case 0:
		return expand_q0(c);
	case 1:
		return expand_q1(c);
	case 2:
		return expand_q2(c);
	default:
		return 0;
	}
}

int rv_fetch(const uint8_t *code, size_t avail, struct rv_insn *in)
{
	uint16_t lo;

	if (avail < 2)
		return -ENODATA;
	lo = (uint16_t)(code[0] | code[1] << 8);
	if ((lo & 3) != 3) {
		in->c = lo;
		in->len = 2;
		/* The all-zero parcel is defined illegal: objdump's unimp, the
		 * same as the 32-bit canonical one, csrrw zero, cycle, zero. */
		in->x = lo ? rv_expand(lo) : 0xc0001073u;
		return in->x ? 0 : -EILSEQ;
	}
	if ((lo & 0x1f) == 0x1f) /* 48-bit and longer: not RV64GC */
		return -EILSEQ;
	if (avail < 4)
		return -ENODATA;
	in->c = 0;
	in->len = 4;
	in->x = lo | (uint32_t)(code[2] | code[3] << 8) << 16;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The X registers each A64 instruction reads and writes, for the
 * free-register analysis (src/arch/freereg.c).
 *
 * Mask/value pairs from the Arm ARM (DDI 0487, C4.1, the top-level
 * groups and their classes), most specific first. Reads may be
 * over-reported, a register is then only less often free; writes never
 * are: a form this file does not know reads every register and writes
 * none. So do the system instructions that are not plain moves, the SVE
 * and SME spaces, the load/store classes not listed (exclusives, LSE
 * compare-and-swap, tags) and the hints that may touch x16, x17 or x30
 * (the pointer-authentication ones).
 *
 * Register 31 (sp or xzr by context) is left out of both masks: it is
 * never a scratch register (scratch_ok), and which of the two a field
 * means would only add cases.
 */
#include "arch/arm64/internal.h"

#define ALL_X   0x7fffffffull /* x0..x30 */
#define BIT(r)  (1ull << (r))
#define RD(w)   BIT(a64_bits(w, 0, 5))   /* also Rt */
#define RN(w)   BIT(a64_bits(w, 5, 5))
#define RM(w)   BIT(a64_bits(w, 16, 5))  /* also Rs */
#define RA(w)   BIT(a64_bits(w, 10, 5))  /* also Rt2 */

struct form {
	uint32_t mask, value;
	void (*uses)(uint32_t w, struct np_reg_use *u);
};

static void none(uint32_t w, struct np_reg_use *u)
{
	(void)w;
	(void)u;
}

static void unknown(uint32_t w, struct np_reg_use *u)
{
	(void)w;
	u->read = ALL_X;
}

static void w_d(uint32_t w, struct np_reg_use *u) /* adr, adrp, movz, movn, literal loads */
{
	u->written = RD(w);
}

static void rn_w_d(uint32_t w, struct np_reg_use *u) /* add imm, logical imm, sbfm, 1-source */
{
	u->read = RN(w);
	u->written = RD(w);
}

static void rd_w_d(uint32_t w, struct np_reg_use *u) /* movk: keeps the other halves */
{
	u->read = RD(w);
	u->written = RD(w);
}

static void rnd_w_d(uint32_t w, struct np_reg_use *u) /* bfm; pac/aut on Xd with Xn */
{
	u->read = RN(w) | RD(w);
	u->written = RD(w);
}

/* opcode2 (20:16) 00001: pac*, aut*, xpac* change Xd in place */
static void one_source(uint32_t w, struct np_reg_use *u)
{
	u->read = RN(w) | (a64_bits(w, 16, 5) == 1 ? RD(w) : 0);
	u->written = RD(w);
}

static void rnm_w_d(uint32_t w, struct np_reg_use *u) /* shifted/extended reg, csel, 2-source */
{
	u->read = RN(w) | RM(w);
	u->written = RD(w);
}

static void rnma_w_d(uint32_t w, struct np_reg_use *u) /* madd, msub, smaddl, umulh */
{
	u->read = RN(w) | RM(w) | RA(w);
	u->written = RD(w);
}

static void rnm(uint32_t w, struct np_reg_use *u) /* ccmp, ccmn; rmif, setf (flags only) */
{
	u->read = RN(w) | RM(w);
}

static void rn(uint32_t w, struct np_reg_use *u) /* br, ret */
{
	u->read = RN(w);
}

static void rt(uint32_t w, struct np_reg_use *u) /* cbz, tbz */
{
	u->read = RD(w);
}

static void bl(uint32_t w, struct np_reg_use *u)
{
	(void)w;
	u->written = BIT(A64_LR);
}

static void blr(uint32_t w, struct np_reg_use *u) /* blr, blraa(z): Rm is the modifier */
{
	u->read = RN(w) | (w & (1u << 11) ? RD(w) : 0);
	u->written = BIT(A64_LR);
}

static void br_pac(uint32_t w, struct np_reg_use *u) /* braa(z), retaa: Rm, x30, sp */
{
	u->read = RN(w) | RD(w) | BIT(A64_LR);
}

static void sys_move(uint32_t w, struct np_reg_use *u) /* msr/sys read Xt, mrs/sysl write it */
{
	if (w & (1u << 21))
		u->written = RD(w);
	else
		u->read = RD(w);
}

/* Loads and stores of one general register: the base (and an index),
 * the base written back by the pre- and post-indexed forms, Rt read by
 * a store and written by a load (not by a prefetch, opc 10 of size 11). */
static void ldst_rt(uint32_t w, struct np_reg_use *u, bool writeback)
{
	unsigned size = a64_bits(w, 30, 2), opc = a64_bits(w, 22, 2);
	bool fp = w & (1u << 26);

	u->read |= RN(w);
	if (writeback)
		u->written |= RN(w);
	if (fp)
		return;
	if (opc == 0)
		u->read |= RD(w);
	else if (!(size == 3 && opc == 2))
		u->written |= RD(w);
}

static void ldst_uimm(uint32_t w, struct np_reg_use *u)
{
	ldst_rt(w, u, false);
}

static void ldst_imm9(uint32_t w, struct np_reg_use *u) /* 11:10: 00 ldur, 01 post, 10 ldtr, 11 pre */
{
	ldst_rt(w, u, a64_bits(w, 10, 1));
}

static void ldst_regoff(uint32_t w, struct np_reg_use *u)
{
	u->read = RM(w);
	ldst_rt(w, u, false);
}

static void ldst_atomic(uint32_t w, struct np_reg_use *u) /* ldadd, swp, ...: Xt gets the old value */
{
	u->read = RN(w) | RM(w);
	u->written = RD(w);
}

static void ldst_pair(uint32_t w, struct np_reg_use *u) /* 24:23: 01 post, 10 offset, 11 pre */
{
	bool load = w & (1u << 22), fp = w & (1u << 26);

	u->read = RN(w);
	if (a64_bits(w, 23, 1))
		u->written = RN(w);
	if (fp)
		return;
	if (load)
		u->written |= RD(w) | RA(w);
	else
		u->read |= RD(w) | RA(w);
}

static void ldr_lit(uint32_t w, struct np_reg_use *u) /* opc 11: prfm, V: a vector register */
{
	if (!(w & (1u << 26)) && a64_bits(w, 30, 2) != 3)
		u->written = RD(w);
}

static void simd_ldst(uint32_t w, struct np_reg_use *u) /* ld1..ld4, st1..st4 */
{
	u->read = RN(w);
	if (w & (1u << 23)) /* post-index: Rm, or an immediate for Rm = 31 */
		u->read |= RM(w), u->written = RN(w);
}

/* fmov, scvtf and fcvt* between a general and an FP register: opcode
 * (18:16) 010, 011 (scvtf, ucvtf) and 111 (fmov to FP) read Xn; the
 * others write Xd. The fixed-point forms the same way. */
static void fp_int(uint32_t w, struct np_reg_use *u)
{
	unsigned op = a64_bits(w, 16, 3);

	if (op == 2 || op == 3 || op == 7)
		u->read = RN(w);
	else
		u->written = RD(w);
}

/* dup, ins (general) read Xn; smov, umov write Xd; imm4 in 14:11. */
static void simd_copy(uint32_t w, struct np_reg_use *u)
{
	unsigned imm4 = a64_bits(w, 11, 4);

	if (imm4 == 1 || imm4 == 3)
		u->read = RN(w);
	else if (imm4 == 5 || imm4 == 7)
		u->written = RD(w);
}

static const struct form forms[] = {
	/* branches, exception generation, system (top 101x) */
	{0xfc000000, 0x14000000, none},        /* b */
	{0xfc000000, 0x94000000, bl},
	{0xff000000, 0x54000000, none},        /* b.cond, bc.cond */
	{0x7e000000, 0x34000000, rt},          /* cbz, cbnz */
	{0x7e000000, 0x36000000, rt},          /* tbz, tbnz */
	{0xfffffc1f, 0xd61f0000, rn},          /* br */
	{0xfffffc1f, 0xd65f0000, rn},          /* ret */
	{0xfffff000, 0xd63f0000, blr},         /* blr, blraaz, blrabz */
	{0xfffff800, 0xd73f0800, blr},         /* blraa, blrab */
	{0xfefff800, 0xd61f0800, br_pac},      /* braaz/abz; braa/ab */
	{0xfffffbff, 0xd65f0bff, br_pac},      /* retaa, retab */
	{0xffffffff, 0xd503201f, none},        /* nop */
	{0xffffff3f, 0xd503241f, none},        /* bti */
	{0xfffff01f, 0xd503301f, none},        /* clrex, dsb, dmb, isb, sb */
	{0xfff8f01f, 0xd500401f, none},        /* msr pstate, #imm */
	{0xffd00000, 0xd5100000, sys_move},    /* msr/mrs sysreg */
	{0xffd80000, 0xd5080000, sys_move},    /* sys, sysl */
	/* data processing, immediate (top 100x) */
	{0x1f000000, 0x10000000, w_d},         /* adr, adrp */
	{0x1f000000, 0x11000000, rn_w_d},      /* add/sub imm (and with tags, min/max) */
	{0x1f800000, 0x12000000, rn_w_d},      /* logical imm */
	{0x7f800000, 0x72800000, rd_w_d},      /* movk */
	{0x1f800000, 0x12800000, w_d},         /* movn, movz */
	{0x7f800000, 0x33000000, rnd_w_d},     /* bfm */
	{0x1f800000, 0x13000000, rn_w_d},      /* sbfm, ubfm */
	{0x1f800000, 0x13800000, rnm_w_d},     /* extr */
	/* data processing, register (top x101) */
	{0x1f000000, 0x0a000000, rnm_w_d},     /* logical shifted */
	{0x1f000000, 0x0b000000, rnm_w_d},     /* add/sub shifted, extended */
	{0x1fe0fc00, 0x1a000000, rnm_w_d},     /* adc, sbc */
	{0x1fe00000, 0x1a000000, rnm},         /* rmif, setf */
	{0x1fe00000, 0x1a400000, rnm},         /* ccmp, ccmn */
	{0x1fe00000, 0x1a800000, rnm_w_d},     /* csel, csinc, csinv, csneg */
	{0x5fe00000, 0x5ac00000, one_source},  /* rbit, rev, clz, pac*, aut* */
	{0x5fe00000, 0x1ac00000, rnm_w_d},     /* 2-source: udiv, lslv, crc32, pacga */
	{0x1f000000, 0x1b000000, rnma_w_d},    /* 3-source */
	/* loads and stores (top x1x0) */
	{0x3b000000, 0x39000000, ldst_uimm},
	{0x3b200000, 0x38000000, ldst_imm9},
	{0x3b200c00, 0x38200800, ldst_regoff},
	{0x3f200c00, 0x38200000, ldst_atomic},
	{0x3a000000, 0x28000000, ldst_pair},
	{0x3b000000, 0x18000000, ldr_lit},
	{0xbe000000, 0x0c000000, simd_ldst},
	/* SIMD and FP (top x111): the forms that move through a general register */
	{0x5f200000, 0x1e000000, fp_int},      /* fixed point */
	{0x5f20fc00, 0x1e200000, fp_int},      /* integer */
	{0xbfe08400, 0x0e000400, simd_copy},
	{0x0e000000, 0x0e000000, none},        /* the rest: vector registers only */
};

/* The form of w in the table, or NULL. */
static const struct form *form_of(uint32_t w)
{
	for (size_t i = 0; i < A64_ARRAY_SIZE(forms); i++)
		if ((w & forms[i].mask) == forms[i].value)
			return &forms[i];
	return NULL;
}

void a64_uses(uint32_t w, struct np_reg_use *u)
{
	const struct form *f = form_of(w);

	*u = (struct np_reg_use){0, 0};
	if (f)
		f->uses(w, u);
	else
		unknown(w, u);
	u->read &= ALL_X;
	u->written &= ALL_X;
}

bool a64_uses_known(uint32_t w)
{
	return form_of(w) != NULL;
}

int a64_reg_use(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out)
{
	struct np_insn ni;
	int err = a64_decode(code, avail, pc, &ni);

	if (err)
		return err;
	a64_uses(a64_word(code), out);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the pure arm64 (A64) ISA files.
 *
 * There is no decoder library to lean on here, and none is needed: every
 * A64 instruction is one little-endian 32-bit word, and what a probe
 * engine must know about it (is it pc-relative, does it branch, may it
 * run somewhere else) is decided by a few fixed bit fields. So, as the
 * Linux kernel does in arch/arm64/include/asm/insn.h, each instruction
 * form is one mask/value pair written from the Arm Architecture Reference
 * Manual (DDI 0487, chapter C4 "A64 Instruction Set Encoding"), and
 * A64_INSN() turns it into an a64_is_<name>() predicate, checking at
 * compile time that the value has no bit outside its mask.
 *
 * The simulator sees only struct np_insn, never the word (at trap time
 * the instruction is already a brk), so decode.c packs what a simulator
 * needs into the 16-bit sim id: a 4-bit kind and a 12-bit argument
 * (register numbers, a condition, a bit number), plus np_insn.target for
 * branch targets and pc-relative addresses. The one simulated form that
 * is not pc-relative, stp pre-index on sp, keeps its signed byte offset in
 * target (no BRANCH or PCREL flag says it is an address).
 */
#ifndef NP_ARCH_ARM64_INTERNAL_H
#define NP_ARCH_ARM64_INTERNAL_H

#include "arch/arch.h"

#define A64_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define A64_INSN(name, mask, value)                                                         \
	_Static_assert(((value) & ~(uint32_t)(mask)) == 0, #name ": value outside its mask"); \
	static inline bool a64_is_##name(uint32_t insn)                                     \
	{                                                                                   \
		return (insn & (uint32_t)(mask)) == (uint32_t)(value);                      \
	}

/* Branches, exception generation and system instructions (C4.1.65). */
A64_INSN(b, 0xfc000000, 0x14000000)          /* imm26 */
A64_INSN(bl, 0xfc000000, 0x94000000)         /* imm26, x30 = pc + 4 */
A64_INSN(b_cond, 0xff000000, 0x54000000)     /* imm19, cond; bit 4: bc.cond */
A64_INSN(cbz, 0x7f000000, 0x34000000)        /* sf, imm19, Rt */
A64_INSN(cbnz, 0x7f000000, 0x35000000)
A64_INSN(tbz, 0x7f000000, 0x36000000)        /* b5, b40, imm14, Rt */
A64_INSN(tbnz, 0x7f000000, 0x37000000)
A64_INSN(br, 0xfffffc1f, 0xd61f0000)         /* Rn */
A64_INSN(blr, 0xfffffc1f, 0xd63f0000)
A64_INSN(ret, 0xfffffc1f, 0xd65f0000)
A64_INSN(braz, 0xfffff81f, 0xd61f081f)       /* braaz, brabz Rn */
A64_INSN(blraz, 0xfffff81f, 0xd63f081f)      /* blraaz, blrabz Rn */
A64_INSN(retaa, 0xfffffbff, 0xd65f0bff)      /* retaa, retab */
A64_INSN(bra, 0xfffff800, 0xd71f0800)        /* braa, brab Rn, Rm */
A64_INSN(blra, 0xfffff800, 0xd73f0800)       /* blraa, blrab Rn, Rm */
A64_INSN(eret_drps, 0xffc00000, 0xd6800000)  /* eret, eretaa/ab, drps */
A64_INSN(excgen, 0xff000000, 0xd4000000)     /* svc hvc smc brk hlt dcps tcancel */
A64_INSN(svc, 0xffe0001f, 0xd4000001)
A64_INSN(brk, 0xffe0001f, 0xd4200000)
A64_INSN(hint, 0xfffff01f, 0xd503201f)       /* CRm:op2 selects the hint */
A64_INSN(nop, 0xffffffff, 0xd503201f)
A64_INSN(bti, 0xffffff3f, 0xd503241f)        /* bti, bti c, bti j, bti jc */
A64_INSN(pacsp, 0xffffffbf, 0xd503233f)      /* paciasp, pacibsp */
A64_INSN(msr_imm, 0xfff8f01f, 0xd500401f)    /* msr <pstatefield>, #imm */
A64_INSN(sys, 0xffd80000, 0xd5080000)        /* sys, sysl: dc, ic, at, tlbi */
A64_INSN(barrier, 0xfffff01f, 0xd503301f)    /* clrex dsb dmb isb sb */
A64_INSN(mrs_msr, 0xffd00000, 0xd5100000)    /* msr/mrs <sysreg>, Xt */

/* pc-relative data (C4.1.66, C4.1.86). */
A64_INSN(adr, 0x9f000000, 0x10000000)        /* immlo:immhi, Rd */
A64_INSN(adrp, 0x9f000000, 0x90000000)       /* page of pc + imm << 12 */
A64_INSN(ldr_lit, 0xbf000000, 0x18000000)    /* ldr Wt/Xt (bit 30), imm19 */
A64_INSN(ldrsw_lit, 0xff000000, 0x98000000)
A64_INSN(prfm_lit, 0xff000000, 0xd8000000)
A64_INSN(ldr_lit_fp, 0x3f000000, 0x1c000000) /* ldr St/Dt/Qt; opc 11 unallocated */

/* Load/store exclusive (C4.1.88): o2 = 0; the pair forms need size 1x,
 * since with size 0x the same bits are casp. */
A64_INSN(ldxr, 0x3fe00000, 0x08400000)       /* ldxr*, ldaxr* */
A64_INSN(stxr, 0x3fe00000, 0x08000000)       /* stxr*, stlxr* */
A64_INSN(ldxp, 0xbfe00000, 0x88600000)       /* ldxp, ldaxp */
A64_INSN(stxp, 0xbfe00000, 0x88200000)       /* stxp, stlxp */

/* stp Wt1/Xt1, Wt2/Xt2, [sp, #imm]! (opc 00 or 10, V = 0, Rn = 31). */
A64_INSN(stp_pre_sp, 0x7fc003e0, 0x298003e0)
/* Permanently undefined (udf #imm16): compilers' trap and padding. */
A64_INSN(udf, 0xffff0000, 0x00000000)

static inline uint32_t a64_word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void a64_put_word(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	p[2] = (uint8_t)(w >> 16);
	p[3] = (uint8_t)(w >> 24);
}

/* Bits [lo, lo + n) of w, and the same sign-extended. */
static inline uint32_t a64_bits(uint32_t w, unsigned lo, unsigned n)
{
	return (w >> lo) & ((1u << n) - 1u);
}

static inline int64_t a64_sbits(uint32_t w, unsigned lo, unsigned n)
{
	uint64_t v = a64_bits(w, lo, n);

	return (int64_t)(v ^ (1ull << (n - 1))) - (int64_t)(1ull << (n - 1));
}

static inline bool a64_fits(int64_t v, unsigned bits)
{
	return v >= -(1ll << (bits - 1)) && v < (1ll << (bits - 1));
}

/* The pc-relative offset field of a branch or literal form: bytes. */
int64_t a64_branch_offset(uint32_t w);
/* The address a pc-relative data form refers to (adr, adrp, literals). */
uint64_t a64_pcrel_target(uint32_t w, uint64_t pc);

/* Simulator kinds, the top 4 bits of np_insn.sim. */
enum a64_sim_kind {
	A64_SIM_NOP = 1,
	A64_SIM_B,       /* target */
	A64_SIM_BL,      /* target */
	A64_SIM_BCOND,   /* arg: cond; target */
	A64_SIM_CBZ,     /* arg: Rt | sf << 5 | nonzero << 6; target */
	A64_SIM_TBZ,     /* arg: Rt | bit << 5 | nonzero << 11; target */
	A64_SIM_RET,     /* arg: Rn */
	A64_SIM_BR,      /* arg: Rn */
	A64_SIM_BLR,     /* arg: Rn */
	A64_SIM_ADR,     /* arg: Rd; target = the address (adr and adrp) */
	A64_SIM_LDR_LIT, /* arg: Rt | A64_LDR_* << 5; target = the address */
	A64_SIM_STP_PRE, /* arg: Rt | Rt2 << 5 | sf << 10; target = offset */
	A64_SIM_NKINDS,
};

enum { A64_LDR_W = 0, A64_LDR_X = 1, A64_LDR_SW = 2 };

#define A64_SIM(kind, arg) ((uint16_t)((unsigned)(kind) << 12 | (unsigned)(arg)))
#define A64_SIM_KIND(id)   ((unsigned)(id) >> 12)
#define A64_SIM_ARG(id)    ((unsigned)(id) & 0xfffu)
_Static_assert(A64_SIM_NKINDS <= 16, "sim kind must fit in 4 bits");

/* Register numbers: x16/x17 are the intra-procedure-call scratch
 * registers, x30 the link register; 31 is sp or xzr by context. */
enum { A64_X16 = 16, A64_X17 = 17, A64_LR = 30, A64_SP = 31, A64_ZR = 31 };

/* PSTATE.NZCV as np_regs.flags holds it: bits 31..28, as in SPSR. */
#define A64_N (1u << 31)
#define A64_Z (1u << 30)
#define A64_C (1u << 29)
#define A64_V (1u << 28)

/* Is condition 'cond' (0..15, eq ne cs cc mi pl vs vc hi ls ge lt gt le
 * al nv) true under the NZCV bits of 'pstate'? */
bool a64_cond(unsigned cond, uint64_t pstate);

/* A growing output of whole words that knows the pc of its first one. */
struct a64_out {
	uint8_t *buf;
	size_t cap;
	size_t len;
	uint64_t pc;
};

static inline uint64_t a64_out_pc(const struct a64_out *o)
{
	return o->pc + o->len;
}

int a64_out_word(struct a64_out *o, uint32_t w);
/* b to 'to'; -ERANGE beyond +-128 MiB. */
int a64_out_b(struct a64_out *o, uint64_t to);
/* b when in reach, else the linker's veneer `ldr x16, 8; br x16; .quad
 * to`: x16 is the register AAPCS64 gives linkers for exactly that. */
int a64_out_b_any(struct a64_out *o, uint64_t to);
/* `ldr xr, .+8; br xr; .quad to`: any distance, through xr. */
int a64_out_veneer(struct a64_out *o, unsigned reg, uint64_t to);
/* Xd = addr with no other register: adr, adrp (+ add), or a literal. */
int a64_out_addr(struct a64_out *o, unsigned rd, uint64_t addr);
/* b when in reach, else adrp+add+br through a register of scratch
 * (a64_pick); -ERANGE without one or beyond +-4 GiB. */
int a64_out_jump(struct a64_out *o, uint64_t to, uint64_t scratch);
int a64_pick(uint64_t scratch);
/* The registers one word reads and writes (regs.c). */
void a64_uses(uint32_t w, struct np_reg_use *u);
/* Is w of a form regs.c knows, whose writes a64_uses() gives all of? */
bool a64_uses_known(uint32_t w);

/* The np_isa hooks, one file each. */
int a64_decode(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out);
unsigned a64_landing_pad(const uint8_t *code, size_t avail);
int a64_format(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap);
int a64_relocate(const struct np_reloc *r);
int a64_relocate_via(const struct np_reloc *r, const struct np_reloc_scratch *s);
int a64_reg_use(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out);
/* usdt.c: a USDT argument's operand (np_isa hook). */
int a64_usdt_operand(const char *text, size_t len, struct np_usdt_arg *out,
		     struct np_usdt_span *sym, const char **why);
int a64_emit_jump_via(uint8_t *buf, size_t cap, uint64_t from, uint64_t to, uint64_t scratch);
bool a64_patch_needs_stop(const uint8_t *old, const uint8_t *new_, size_t len, uint64_t addr);
int a64_simulate(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem);
int a64_emit_jump(uint8_t *buf, uint64_t from, uint64_t to);
int a64_emit_trap(uint8_t *buf);
int a64_emit_jump_any(uint8_t *buf, size_t cap, uint64_t from, uint64_t to);
int a64_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		       const struct np_branch_sink *sink);
int a64_frame_effect(const uint8_t *code, size_t avail, uint64_t pc, struct np_frame_effect *out);
int a64_vector_state_used(uint64_t fn, const struct np_mem *mem);

/* The breakpoint nanoprobe writes: brk #0x6e70 ("np"), distinct from
 * gcc's __builtin_trap (brk #0x3e8) and clang's (brk #0x1). */
#define A64_BRK_NP 0xd42dce00u

#endif /* NP_ARCH_ARM64_INTERNAL_H */

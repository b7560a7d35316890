/* SPDX-License-Identifier: MIT */
/*
 * Decoding and classification of one A64 instruction.
 *
 * Every instruction is one word, so "decoding" is matching the word
 * against mask/value pairs (internal.h). The decision runs in a fixed
 * order:
 *
 *   1. flags: control flow (branch, call, return, indirect), padding and
 *      system marks, computed for every word, rejected ones included,
 *      since the function analysis needs them (udf ends a path);
 *   2. the rule table a64_rules[], first match wins: each line names a
 *      form and says REJECTED (with the reason users will see), SIMULATED
 *      (with the simulator it binds) or OUT_OF_LINE (with why it is not
 *      simulated). A word no line names runs out of line: relocate.c
 *      rewrites every pc-relative form, and everything else in A64 means
 *      the same at any address;
 *   3. a look-ahead over the bytes that follow (the core passes the rest
 *      of the function): an instruction between a load-exclusive and its
 *      store-exclusive is refused, because a trap or a trip through a
 *      trampoline clears the exclusive monitor, the store then fails, and
 *      the retry loop hits the probe again, forever.
 *
 * Words this file knows to be unallocated are -EILSEQ (unallocated()).
 */
#include <errno.h>
#include <string.h>

#include "arch/arm64/internal.h"

#define EXCLUSIVE_LOOKAHEAD 32 /* instructions; retry loops are a handful */

int64_t a64_branch_offset(uint32_t w)
{
	if (a64_is_b(w) || a64_is_bl(w))
		return a64_sbits(w, 0, 26) * 4;
	if (a64_is_tbz(w) || a64_is_tbnz(w))
		return a64_sbits(w, 5, 14) * 4;
	return a64_sbits(w, 5, 19) * 4; /* b.cond, cbz/cbnz, literal loads */
}

uint64_t a64_pcrel_target(uint32_t w, uint64_t pc)
{
	/* adr/adrp: immhi(23:5):immlo(30:29), a signed 21-bit value */
	int64_t imm21 = a64_sbits(w, 5, 19) * 4 + (int64_t)a64_bits(w, 29, 2);

	if (a64_is_adr(w))
		return pc + (uint64_t)imm21;
	if (a64_is_adrp(w))
		return (pc & ~0xfffull) + (uint64_t)imm21 * 4096;
	return pc + (uint64_t)a64_branch_offset(w);
}

/* ------------------------------------------------------------------ */
/* 1. Flags                                                            */

static bool is_direct_branch(uint32_t w)
{
	return a64_is_b(w) || a64_is_bl(w) || a64_is_b_cond(w) || a64_is_cbz(w) ||
	       a64_is_cbnz(w) || a64_is_tbz(w) || a64_is_tbnz(w);
}

static bool is_pcrel_data(uint32_t w)
{
	return a64_is_adr(w) || a64_is_adrp(w) || a64_is_ldr_lit(w) || a64_is_ldrsw_lit(w) ||
	       a64_is_prfm_lit(w) || a64_is_ldr_lit_fp(w);
}

static uint32_t branch_flags(uint32_t w)
{
	if (a64_is_b(w))
		return NP_INSN_BRANCH | NP_INSN_NOFALL;
	if (a64_is_bl(w))
		return NP_INSN_BRANCH | NP_INSN_CALL;
	/* b.al and b.nv are both "always" in A64 */
	if (a64_is_b_cond(w) && a64_bits(w, 1, 3) == 7)
		return NP_INSN_BRANCH | NP_INSN_NOFALL;
	return NP_INSN_BRANCH | NP_INSN_COND;
}

static uint32_t other_flags(uint32_t w)
{
	if (a64_is_ret(w) || a64_is_retaa(w))
		return NP_INSN_RET | NP_INSN_NOFALL;
	if (a64_is_br(w) || a64_is_braz(w) || a64_is_bra(w))
		return NP_INSN_INDIRECT | NP_INSN_NOFALL;
	if (a64_is_blr(w) || a64_is_blraz(w) || a64_is_blra(w))
		return NP_INSN_INDIRECT | NP_INSN_CALL;
	if (a64_is_nop(w))
		return NP_INSN_PADDING;
	if (a64_is_udf(w))
		return NP_INSN_PADDING | NP_INSN_NOFALL;
	if (a64_is_eret_drps(w))
		return NP_INSN_SYSTEM | NP_INSN_NOFALL;
	if (a64_is_excgen(w) && !a64_is_brk(w))
		return NP_INSN_SYSTEM;
	if (a64_is_sys(w) || a64_is_msr_imm(w) || a64_is_mrs_msr(w))
		return NP_INSN_SYSTEM;
	return 0;
}

/* ------------------------------------------------------------------ */
/* 2. Rules                                                            */

typedef uint16_t (*a64_sim_rule)(uint32_t w);

static uint16_t sim_nop(uint32_t w)
{
	return A64_SIM(A64_SIM_NOP, 0);
}

static uint16_t sim_b(uint32_t w)
{
	return A64_SIM(A64_SIM_B, 0);
}

static uint16_t sim_bl(uint32_t w)
{
	return A64_SIM(A64_SIM_BL, 0);
}

static uint16_t sim_bcond(uint32_t w)
{
	return A64_SIM(A64_SIM_BCOND, a64_bits(w, 0, 4));
}

/* cbz/cbnz: sf(31) | 011010 | op(24) | imm19 | Rt */
static uint16_t sim_cbz(uint32_t w)
{
	return A64_SIM(A64_SIM_CBZ, a64_bits(w, 0, 5) | a64_bits(w, 31, 1) << 5 |
					    a64_bits(w, 24, 1) << 6);
}

/* tbz/tbnz: b5(31) | 011011 | op(24) | b40(23:19) | imm14 | Rt */
static uint16_t sim_tbz(uint32_t w)
{
	unsigned bit = a64_bits(w, 31, 1) << 5 | a64_bits(w, 19, 5);

	return A64_SIM(A64_SIM_TBZ, a64_bits(w, 0, 5) | bit << 5 | a64_bits(w, 24, 1) << 11);
}

static uint16_t sim_rn(unsigned kind, uint32_t w)
{
	return A64_SIM(kind, a64_bits(w, 5, 5));
}

static uint16_t sim_ret(uint32_t w)
{
	return sim_rn(A64_SIM_RET, w);
}

static uint16_t sim_br(uint32_t w)
{
	return sim_rn(A64_SIM_BR, w);
}

static uint16_t sim_blr(uint32_t w)
{
	return sim_rn(A64_SIM_BLR, w);
}

static uint16_t sim_adr(uint32_t w)
{
	return A64_SIM(A64_SIM_ADR, a64_bits(w, 0, 5));
}

static uint16_t sim_ldr_lit(uint32_t w)
{
	unsigned size = a64_is_ldrsw_lit(w) ? A64_LDR_SW : a64_bits(w, 30, 1);

	return A64_SIM(A64_SIM_LDR_LIT, a64_bits(w, 0, 5) | size << 5);
}

/* stp: opc(31:30) | 101 | V | 011 | L | imm7 | Rt2 | Rn | Rt */
static uint16_t sim_stp_pre(uint32_t w)
{
	return A64_SIM(A64_SIM_STP_PRE,
		       a64_bits(w, 0, 5) | a64_bits(w, 10, 5) << 5 | a64_bits(w, 31, 1) << 10);
}

#define REJ NP_INSN_REJECTED
#define OOL NP_INSN_OUT_OF_LINE
#define SIM NP_INSN_SIMULATED

#define EXCLUSIVE "load/store exclusive: a trap or a displaced copy clears the exclusive " \
		  "monitor, and the retry loop would never succeed"
#define LANDING   "branch target landing pad (bti, paciasp): an indirect branch into a " \
		  "guarded page must find it here (a probe at the function's entry goes " \
		  "on the next instruction)"
#define PAUTH     "pointer-authenticated branch: run, not simulated (the key is not readable)"

static const struct a64_rule {
	bool (*is)(uint32_t w);
	uint8_t cls;
	const char *why;  /* REJECTED: why; otherwise why it is not simulated */
	a64_sim_rule sim; /* SIMULATED: the sim id */
} a64_rules[] = {
	{a64_is_brk, REJ, "breakpoint already present", NULL},
	{a64_is_svc, REJ, "svc: the kernel, seccomp and tracers would see the system call "
			  "at a trampoline pc", NULL},
	{a64_is_excgen, REJ, "exception-generating instruction (hvc, smc, hlt, dcps): traps "
			     "in user mode", NULL},
	{a64_is_udf, REJ, "permanently undefined: would fault at a different pc", NULL},
	{a64_is_eret_drps, REJ, "exception return: undefined in user mode", NULL},
	{a64_is_msr_imm, REJ, "system instruction (msr to a PSTATE field)", NULL},
	{a64_is_sys, REJ, "system instruction (sys: cache, TLB or address translation)", NULL},
	{a64_is_bti, REJ, LANDING, NULL},
	{a64_is_pacsp, REJ, LANDING, NULL},
	{a64_is_ldxr, REJ, EXCLUSIVE, NULL},
	{a64_is_stxr, REJ, EXCLUSIVE, NULL},
	{a64_is_ldxp, REJ, EXCLUSIVE, NULL},
	{a64_is_stxp, REJ, EXCLUSIVE, NULL},

	{a64_is_nop, SIM, NULL, sim_nop},
	{a64_is_prfm_lit, SIM, NULL, sim_nop}, /* a prefetch has no architectural effect */
	{a64_is_b, SIM, NULL, sim_b},
	{a64_is_bl, SIM, NULL, sim_bl},
	{a64_is_b_cond, SIM, NULL, sim_bcond},
	{a64_is_cbz, SIM, NULL, sim_cbz},
	{a64_is_cbnz, SIM, NULL, sim_cbz},
	{a64_is_tbz, SIM, NULL, sim_tbz},
	{a64_is_tbnz, SIM, NULL, sim_tbz},
	{a64_is_ret, SIM, NULL, sim_ret},
	{a64_is_br, SIM, NULL, sim_br},
	{a64_is_blr, SIM, NULL, sim_blr},
	{a64_is_adr, SIM, NULL, sim_adr},
	{a64_is_adrp, SIM, NULL, sim_adr},
	{a64_is_ldr_lit, SIM, NULL, sim_ldr_lit},
	{a64_is_ldrsw_lit, SIM, NULL, sim_ldr_lit},
	{a64_is_stp_pre_sp, SIM, NULL, sim_stp_pre},

	{a64_is_ldr_lit_fp, OOL, "FP/SIMD literal load: the register file has no vector "
				 "registers", NULL},
	{a64_is_retaa, OOL, PAUTH, NULL},
	{a64_is_braz, OOL, PAUTH, NULL},
	{a64_is_blraz, OOL, PAUTH, NULL},
	{a64_is_bra, OOL, PAUTH, NULL},
	{a64_is_blra, OOL, PAUTH, NULL},
};

/* ------------------------------------------------------------------ */
/* 3. Exclusive sequences                                              */

static bool is_exclusive_load(uint32_t w)
{
	return a64_is_ldxr(w) || a64_is_ldxp(w);
}

static bool is_exclusive_store(uint32_t w)
{
	return a64_is_stxr(w) || a64_is_stxp(w);
}

/* Following fall-through from the word after 'code', is a store-exclusive
 * met before a load-exclusive or the end of the path? Then the
 * instruction at 'code' sits inside an ldxr..stxr sequence. */
static bool inside_exclusive(const uint8_t *code, size_t avail)
{
	for (size_t i = 1; i <= EXCLUSIVE_LOOKAHEAD && (i + 1) * 4 <= avail; i++) {
		uint32_t w = a64_word(code + 4 * i);

		if (is_exclusive_store(w))
			return true;
		if (is_exclusive_load(w) || ((is_direct_branch(w) ? branch_flags(w) : other_flags(w)) &
					     NP_INSN_NOFALL))
			return false;
	}
	return false;
}

static bool is_register_branch(uint32_t w)
{
	return a64_is_br(w) || a64_is_blr(w) || a64_is_ret(w) || a64_is_braz(w) ||
	       a64_is_blraz(w) || a64_is_retaa(w) || a64_is_bra(w) || a64_is_blra(w) ||
	       a64_is_eret_drps(w);
}

/*
 * Unallocated: the top-level groups op0 = x001 and x011, the literal load
 * with opc = 11 and V = 1, and, in the branch, exception and system group
 * (op0 = 101x), the top bytes no branch lives in (0x55-0x57, 0x74-0x77,
 * 0xf4-0xf7) and the register-branch space (0xd6, 0xd7) outside the forms
 * internal.h lists. Other unallocated words inside allocated groups are
 * not recognised: they run out of line (docs/arm64.md).
 */
static bool unallocated(uint32_t w)
{
	unsigned op0 = a64_bits(w, 25, 4), top = w >> 24;

	if (op0 == 1 || op0 == 3 || (a64_is_ldr_lit_fp(w) && a64_bits(w, 30, 2) == 3))
		return true;
	if ((op0 & 0xe) != 0xa)
		return false;
	if ((top >= 0x55 && top <= 0x57) || (top & 0x7c) == 0x74)
		return true;
	return (top == 0xd6 || top == 0xd7) && !is_register_branch(w);
}

int a64_decode(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out)
{
	uint32_t w;

	if (avail < 4)
		return -ENODATA;
	w = a64_word(code);
	if (unallocated(w) || (pc & 3))
		return -EILSEQ;
	memset(out, 0, sizeof(*out));
	out->pc = pc;
	out->len = 4;
	out->cls = OOL;
	if (is_direct_branch(w)) {
		out->flags = branch_flags(w);
		out->target = pc + (uint64_t)a64_branch_offset(w);
	} else {
		out->flags = other_flags(w);
	}
	if (is_pcrel_data(w)) {
		out->flags |= NP_INSN_PCREL;
		out->target = a64_pcrel_target(w, pc);
	}
	for (size_t i = 0; i < A64_ARRAY_SIZE(a64_rules); i++) {
		const struct a64_rule *r = &a64_rules[i];

		if (!r->is(w))
			continue;
		out->cls = r->cls;
		out->reason = r->why;
		out->sim = r->sim ? r->sim(w) : 0;
		break;
	}
	if (a64_is_stp_pre_sp(w))
		out->target = (uint64_t)(a64_sbits(w, 15, 7) * (a64_bits(w, 31, 1) ? 8 : 4));
	if (out->cls != REJ && inside_exclusive(code, avail)) {
		out->cls = REJ;
		out->sim = 0;
		out->reason = "inside a load/store-exclusive sequence: a trap or a trampoline "
			      "clears the exclusive monitor, and the retry loop would never succeed";
	}
	return 0;
}

/* Landing pads at a function entry (Arm ARM D8.4, branch target
 * identification): bti c / jc and paciasp / pacibsp (implicit bti c) are
 * what an indirect call into a guarded page must land on. Neither b nor
 * brk is one, so the entry probe goes after them. */
unsigned a64_landing_pad(const uint8_t *code, size_t avail)
{
	if (avail < 4)
		return NP_PAD_NONE;
	uint32_t w = a64_word(code);
	if (a64_is_bti(w))
		return NP_PAD_BTI;
	if (a64_is_pacsp(w))
		return a64_bits(w, 6, 1) ? NP_PAD_PAC_B : NP_PAD_PAC_A;
	return NP_PAD_NONE;
}

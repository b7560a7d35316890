/* SPDX-License-Identifier: MIT */
/*
 * What an instruction does to sp and x29 (np_isa.frame_effect), for the
 * stack heights of a function (src/plan/heights.c). The forms compilers
 * write for a frame, from the Arm ARM (DDI 0487, C4.1), each named; any
 * other write of either is NP_FRAME_UNKNOWN, and so is every word whose
 * writes regs.c does not know (SVE's addvl sp, sp, #-1 among them).
 *
 *   add/sub sp, sp, #imm{, lsl #12}       sp +/- imm
 *   stp/ldp/str/ldr ..., [sp, #imm]! and [sp], #imm   sp + imm (writeback)
 *   add/sub sp, x29, #imm (mov sp, x29)   sp = x29 +/- imm
 *   add/sub x29, sp, #imm (mov x29, sp)   x29 = sp +/- imm
 *   a load of x29 (ldp x29, x30, [sp], #16), any other write: unknown
 *
 * Register 31 is sp in add/sub (immediate and extended register),
 * logical immediate and as a load or store's base; elsewhere it is xzr.
 */
#include <errno.h>

#include "arch/arm64/internal.h"

#define A64_FP 29

/* add/sub Xd|sp, Xn|sp, #imm12{, lsl 12}, 64 bits; bit 30: sub */
A64_INSN(addsub_imm64, 0xbf800000, 0x91000000)
A64_INSN(addsub_imm, 0x1f000000, 0x11000000)    /* any width, flags or not */
A64_INSN(addsub_ext, 0x1f200000, 0x0b200000)    /* Rd 31 is sp unless S */
A64_INSN(logical_imm, 0x1f800000, 0x12000000)   /* Rd 31 is sp unless ands */
A64_INSN(ldst_pair_wb, 0x3a800000, 0x28800000)  /* post (24:23 01) and pre (11) index */
A64_INSN(ldst_imm9_wb, 0x3b200400, 0x38000400)  /* 11:10 01 post, 11 pre */
A64_INSN(simd_ldst_post, 0xbe800000, 0x0c800000) /* ld1..st4 post-index */

static unsigned rd(uint32_t w)
{
	return a64_bits(w, 0, 5);
}

static unsigned rn(uint32_t w)
{
	return a64_bits(w, 5, 5);
}

static int64_t addsub_imm(uint32_t w)
{
	int64_t imm = (int64_t)a64_bits(w, 10, 12) << (a64_bits(w, 22, 1) ? 12 : 0);

	return a64_bits(w, 30, 1) ? -imm : imm;
}

/* The byte offset a pair's writeback adds: imm7 scaled by the size of
 * one register (opc 31:30; V, bit 26, for the FP/SIMD forms; stgp, opc
 * 01 storing, moves 16 bytes a step). */
static int64_t pair_offset(uint32_t w)
{
	unsigned opc = a64_bits(w, 30, 2);
	bool fp = w & (1u << 26), load = w & (1u << 22);
	int64_t scale = fp ? 4 << opc : opc == 2 ? 8 : opc == 1 && !load ? 16 : 4;

	return a64_sbits(w, 15, 7) * scale;
}

static void set(uint8_t *op, int32_t *delta, uint8_t how, int64_t d)
{
	*op = how;
	*delta = (int32_t)d;
}

/* The writes of sp, the frame's forms first. */
static void sp_effect(uint32_t w, struct np_frame_effect *out)
{
	if (a64_is_addsub_imm64(w) && rd(w) == A64_SP) {
		if (rn(w) == A64_SP)
			set(&out->sp, &out->sp_delta, NP_FRAME_ADD, addsub_imm(w));
		else if (rn(w) == A64_FP)
			set(&out->sp, &out->sp_delta, NP_FRAME_FROM, addsub_imm(w));
		else
			out->sp = NP_FRAME_UNKNOWN;
	} else if (a64_is_ldst_pair_wb(w) && rn(w) == A64_SP) {
		set(&out->sp, &out->sp_delta, NP_FRAME_ADD, pair_offset(w));
	} else if (a64_is_ldst_imm9_wb(w) && rn(w) == A64_SP) {
		set(&out->sp, &out->sp_delta, NP_FRAME_ADD, a64_sbits(w, 12, 9));
	} else if ((a64_is_addsub_imm(w) && !(w & (1u << 29)) && rd(w) == A64_SP) ||
		   (a64_is_addsub_ext(w) && !(w & (1u << 29)) && rd(w) == A64_SP) ||
		   (a64_is_logical_imm(w) && a64_bits(w, 29, 2) != 3 && rd(w) == A64_SP) ||
		   (a64_is_simd_ldst_post(w) && rn(w) == A64_SP)) {
		out->sp = NP_FRAME_UNKNOWN;
	}
}

int a64_frame_effect(const uint8_t *code, size_t avail, uint64_t pc, struct np_frame_effect *out)
{
	struct np_insn in;
	int err = a64_decode(code, avail, pc, &in);
	uint32_t w;
	struct np_reg_use u;

	*out = (struct np_frame_effect){0};
	if (err)
		return err;
	w = a64_word(code);
	if (!a64_uses_known(w)) {
		out->sp = out->fp = NP_FRAME_UNKNOWN;
		return 0;
	}
	sp_effect(w, out);
	a64_uses(w, &u);
	if (!(u.written & (1ull << A64_FP)))
		return 0;
	if (a64_is_addsub_imm64(w) && rd(w) == A64_FP && rn(w) == A64_SP)
		set(&out->fp, &out->fp_delta, NP_FRAME_FROM, addsub_imm(w));
	else
		out->fp = NP_FRAME_UNKNOWN;
	return 0;
}

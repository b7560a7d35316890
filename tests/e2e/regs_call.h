/* SPDX-License-Identifier: MIT */
/*
 * Shared by regs_call.c and regs_call_<isa>.S: the state the assembly
 * loads into every register before it calls a leaf function, and dumps
 * from them after the call, in one layout for every ISA.
 */
#ifndef NP_E2E_REGS_CALL_H
#define NP_E2E_REGS_CALL_H

#define RC_RESULT 0x2a2a2a2a   /* what the leaves return */
#define RC_OVERRIDE 0x5eed5eed /* what override_return makes them return */

/* struct rc_state offsets */
#define RC_GPR 0    /* 32 quads, by hardware register number */
#define RC_MISC 256 /* 16 quads: x86-64 k0-k7, mxcsr; arm64 fpsr, fpcr;
		     * riscv64 fcsr */
#define RC_VEC 384  /* 32 vector registers, 64 bytes each (low bytes used) */
#define RC_SIZE 2432

/* x86-64: which vector registers rc_call loads (its fourth argument) */
#define RC_SSE 0    /* xmm0-15 */
#define RC_AVX 1    /* ymm0-15 */
#define RC_AVX512 2 /* zmm0-31, k0-7 */

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Functions with branch protection, in a shared library whose GNU property
 * note says BTI and PAC: the dynamic loader maps its code guarded
 * (PROT_BTI) when the CPU has BTI, as qemu-aarch64's does. An indirect
 * branch into it must land on a matching landing pad, or the program gets
 * SIGILL. bti.c probes the entries (which the engine moves past the pad)
 * and calls every function directly, through the PLT (br x17), through a
 * pointer (blr) and from inside the library (call_via).
 */
#include "asm_arm64.h"

#define BTI_C hint #34
#define BTI_J hint #36
#define PACIASP hint #25
#define AUTIASP hint #29
#define PACIBSP hint #27
#define AUTIBSP hint #31

	.text
	.p2align 4
/* uint64_t bti_c_add1(uint64_t x): x + 1, a leaf with bti c */
FUNC(bti_c_add1)
	BTI_C
.Ladd1:
	add x0, x0, #1
	ret
ENDF(bti_c_add1)

/* uint64_t pac_a_twice(uint64_t x): 2 (x + 1), signing x30 with key A
 * and spilling it around a call, as gcc's pac-ret prologue does */
	.p2align 4
FUNC(pac_a_twice)
	PACIASP
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	bl .Ladd1
	lsl x0, x0, #1
	ldp x29, x30, [sp], #16
	AUTIASP
	ret
ENDF(pac_a_twice)

/* uint64_t pac_b_twice(uint64_t x): the same with key B */
	.p2align 4
FUNC(pac_b_twice)
	PACIBSP
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	bl .Ladd1
	lsl x0, x0, #1
	ldp x29, x30, [sp], #16
	AUTIBSP
	ret
ENDF(pac_b_twice)

/* uint64_t pac_a_retaa(uint64_t x): x + 4, returning with retaa */
	.p2align 4
FUNC(pac_a_retaa)
	PACIASP
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	bl .Ladd1
	add x0, x0, #3
	ldp x29, x30, [sp], #16
	.inst 0xd65f0bff		/* retaa (armv8.3) */
ENDF(pac_a_retaa)

/* uint64_t bti_pac(uint64_t x): 3 (x + 1): two pads, bti c then paciasp */
	.p2align 4
FUNC(bti_pac)
	BTI_C
	PACIASP
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	bl .Ladd1
	add x0, x0, x0, lsl #1
	ldp x29, x30, [sp], #16
	AUTIASP
	ret
ENDF(bti_pac)

/* uint64_t bti_jt(uint64_t x): x + 5, through an indirect jump that must
 * land on bti j (a jump-table target; from a guarded page, br through
 * any register but x16/x17 wants bti j) */
	.p2align 4
FUNC(bti_jt)
	BTI_C
	adr x1, .Ljt_target
	br x1
	.globl bti_jt_target
bti_jt_target:
.Ljt_target:
	BTI_J
	add x0, x0, #5
	ret
ENDF(bti_jt)

/* uint64_t call_via(uint64_t (*fn)(uint64_t), uint64_t x): fn(x), by blr
 * from a guarded page */
	.p2align 4
FUNC(call_via)
	PACIASP
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	mov x2, x0
	mov x0, x1
	blr x2
	ldp x29, x30, [sp], #16
	AUTIASP
	ret
ENDF(call_via)

/* uint64_t bti_nopad(uint64_t x): x + 1, no landing pad: an indirect call
 * faults where BTI is enforced */
	.p2align 4
FUNC(bti_nopad)
	add x0, x0, #1
	ret
ENDF(bti_nopad)

/* GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI | PAC */
	.section .note.gnu.property, "a"
	.p2align 3
	.word 4, 16, 5
	.asciz "GNU"
	.word 0xc0000000, 4, 3, 0

	NOTE_GNU_STACK

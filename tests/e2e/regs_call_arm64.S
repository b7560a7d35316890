/* SPDX-License-Identifier: MIT */
/*
 * void rc_call(const struct rc_state *in, struct rc_state *out,
 *              void (*leaf)(void), unsigned mode);
 *
 * arm64 twin of regs_call_x86_64.S: x0-x29, q0-q31, fpsr and fpcr hold
 * values from `in` across the call to `leaf` (x30 carries the call), then
 * everything is dumped to `out` (layout in regs_call.h). `mode` is for
 * x86-64 only.
 *
 * The leaves write x0 alone: rc_leaf returns RC_RESULT in three
 * instructions, the second of them rc_leaf_mid; rc_leaf_store stores
 * rc_watched's own address in it (for watchpoints) before doing the same.
 */
#include "asm_arm64.h"
#include "regs_call.h"

	.text
	.p2align 4
FUNC(rc_call)
	stp x29, x30, [sp, #-96]!
	stp x19, x20, [sp, #16]
	stp x21, x22, [sp, #32]
	stp x23, x24, [sp, #48]
	stp x25, x26, [sp, #64]
	stp x27, x28, [sp, #80]
	stp d8, d9, [sp, #-64]!
	stp d10, d11, [sp, #16]
	stp d12, d13, [sp, #32]
	stp d14, d15, [sp, #48]
	mrs x4, fpcr
	stp x1, x2, [sp, #-32]!		/* out, leaf */
	str x4, [sp, #16]		/* the caller's rounding mode */
	add x5, x0, #RC_VEC
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	ldr q\n, [x5, #64 * \n]
	.endr
	ldp x5, x6, [x0, #RC_MISC]
	msr fpsr, x5
	msr fpcr, x6
	ldp x1, x2, [x0, #RC_GPR + 8 * 1]
	ldp x3, x4, [x0, #RC_GPR + 8 * 3]
	ldp x5, x6, [x0, #RC_GPR + 8 * 5]
	ldp x7, x8, [x0, #RC_GPR + 8 * 7]
	ldp x9, x10, [x0, #RC_GPR + 8 * 9]
	ldp x11, x12, [x0, #RC_GPR + 8 * 11]
	ldp x13, x14, [x0, #RC_GPR + 8 * 13]
	ldp x15, x16, [x0, #RC_GPR + 8 * 15]
	ldp x17, x18, [x0, #RC_GPR + 8 * 17]
	ldp x19, x20, [x0, #RC_GPR + 8 * 19]
	ldp x21, x22, [x0, #RC_GPR + 8 * 21]
	ldp x23, x24, [x0, #RC_GPR + 8 * 23]
	ldp x25, x26, [x0, #RC_GPR + 8 * 25]
	ldp x27, x28, [x0, #RC_GPR + 8 * 27]
	ldr x29, [x0, #RC_GPR + 8 * 29]
	ldr x0, [x0, #RC_GPR]
	ldr x30, [sp, #8]
	blr x30
	stp x0, x1, [sp, #-256]!	/* x<n> at 8n(sp) */
	stp x2, x3, [sp, #8 * 2]
	stp x4, x5, [sp, #8 * 4]
	stp x6, x7, [sp, #8 * 6]
	stp x8, x9, [sp, #8 * 8]
	stp x10, x11, [sp, #8 * 10]
	stp x12, x13, [sp, #8 * 12]
	stp x14, x15, [sp, #8 * 14]
	stp x16, x17, [sp, #8 * 16]
	stp x18, x19, [sp, #8 * 18]
	stp x20, x21, [sp, #8 * 20]
	stp x22, x23, [sp, #8 * 22]
	stp x24, x25, [sp, #8 * 24]
	stp x26, x27, [sp, #8 * 26]
	stp x28, x29, [sp, #8 * 28]
	str x30, [sp, #240]
	ldr x0, [sp, #256]		/* out */
	mrs x1, fpsr
	mrs x2, fpcr
	stp x1, x2, [x0, #RC_MISC]
	add x1, x0, #RC_VEC
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	str q\n, [x1, #64 * \n]
	.endr
	mov x1, #0
1:	ldr x2, [sp, x1]
	str x2, [x0, x1]
	add x1, x1, #8
	cmp x1, #248
	b.ne 1b
	ldr x1, [sp, #256 + 16]
	msr fpcr, x1
	add sp, sp, #256 + 32
	ldp d14, d15, [sp, #48]
	ldp d12, d13, [sp, #32]
	ldp d10, d11, [sp, #16]
	ldp d8, d9, [sp], #64
	ldp x27, x28, [sp, #80]
	ldp x25, x26, [sp, #64]
	ldp x23, x24, [sp, #48]
	ldp x21, x22, [sp, #32]
	ldp x19, x20, [sp, #16]
	ldp x29, x30, [sp], #96
	ret
ENDF(rc_call)

	.p2align 4
FUNC(rc_leaf)
	movz x0, #((RC_RESULT - 1) & 0xffff)
	.globl rc_leaf_mid
rc_leaf_mid:
	movk x0, #((RC_RESULT - 1) >> 16), lsl #16
	add x0, x0, #1
	ret
ENDF(rc_leaf)

	.p2align 4
FUNC(rc_leaf_store)
	adrp x0, rc_watched
	add x0, x0, :lo12:rc_watched
	str x0, [x0]
	movz x0, #(RC_RESULT & 0xffff)
	movk x0, #(RC_RESULT >> 16), lsl #16
	ret
ENDF(rc_leaf_store)

	.bss
	.balign 8
	.globl rc_watched
rc_watched:
	.quad 0

	NOTE_GNU_STACK

/* SPDX-License-Identifier: MIT */
/*
 * arm64 targets of torture.c: the counterparts of torture_x86_64.S, each
 * function in its own 32-byte slot (FUNC_BYTES), with the word offsets
 * torture.c probes noted beside them.
 */
#include "asm_arm64.h"

	.section .rodata
	.balign 8
t_rip_k: .quad 0x1234567

	.text
	.p2align 5
FUNC(t_short)		/* x + 1 */
	stp x29, x30, [sp, #-16]!	/* +0 */
	add x0, x0, #1			/* +4 */
	ldp x29, x30, [sp], #16		/* +8 */
	ret				/* +12 */
ENDF(t_short)

	.p2align 5
FUNC(t_cmp)		/* a < b, unsigned */
	cmp x0, x1			/* +0 */
	cset x0, lo			/* +4 */
	ret				/* +8 */
ENDF(t_cmp)

	.p2align 5
FUNC(t_loopy)		/* x * n, n >= 1 */
	mov x2, #0			/* +0 */
1:	add x2, x2, x0			/* +4 */
	subs x1, x1, #1			/* +8 */
	b.ne 1b				/* +12 */
	mov x0, x2			/* +16 */
	ret				/* +20 */
ENDF(t_loopy)

	.p2align 5
FUNC(t_ret1)
	ret				/* +0 */
ENDF(t_ret1)

	.p2align 5
FUNC(t_ret1_caller)	/* x, through a call to t_ret1 */
	stp x29, x30, [sp, #-16]!	/* +0 */
	bl t_ret1			/* +4 */
	ldp x29, x30, [sp], #16		/* +8 */
	ret				/* +12 */
ENDF(t_ret1_caller)

	.p2align 5
FUNC(t_rip)		/* x + 0x1234567, through a literal load */
	ldr x1, t_rip_k			/* +0 */
	add x0, x0, x1			/* +4 */
	ret				/* +8 */
ENDF(t_rip)

	NOTE_GNU_STACK

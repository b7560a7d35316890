/* SPDX-License-Identifier: MIT */
/*
 * Target of sigframe.c: a loop a thread spins in until *flag is set. A
 * probe at +2 makes a jal over [2, 6). qemu-user delivers a signal where
 * a translated block begins, after a branch: at +0 or at +4, strictly
 * inside that jal (on hardware, anywhere in the loop).
 */
#include "asm_riscv64.h"

	.text
	.option norelax
	.p2align 2
/* uint64_t t_sig_spin(const volatile int *flag): *flag + 1 */
FUNC(t_sig_spin)
	c.lw a1, 0(a0)		/* +0 */
	c.bnez a1, 1f		/* +2 */
	c.mv a2, a1		/* +4 */
	c.j t_sig_spin		/* +6 */
1:	addi a0, a1, 1		/* +8 */
	ret
ENDF(t_sig_spin)

	NOTE_GNU_STACK

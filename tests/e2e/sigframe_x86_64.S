/* SPDX-License-Identifier: MIT */
/*
 * Target of sigframe.c: a loop a thread spins in until *flag is set. A
 * probe at +0 makes a jump over [0, 6): the pc a signal interrupts the
 * loop at lies strictly inside that jump two times in three (+2, +4).
 */
#include "asm_x86_64.h"

	.text
	.p2align 4
/* uint64_t t_sig_spin(const volatile int *flag): *flag + 1 */
FUNC(t_sig_spin)
	mov (%rdi), %eax	/* +0 */
	test %eax, %eax		/* +2 */
	je t_sig_spin		/* +4 */
	inc %eax		/* +6 */
	ret
ENDF(t_sig_spin)

	NOTE_GNU_STACK

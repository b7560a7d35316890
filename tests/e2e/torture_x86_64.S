/* SPDX-License-Identifier: MIT */
/*
 * Small functions for the attach/detach torture test. Most start with a
 * short instruction, so a 5-byte jump displaces several; t_loopy has a
 * branch target at +2; t_ret1 is a lone ret followed by padding; t_rip
 * starts with a rip-relative load. torture.c checks the layout.
 */
#include "asm_x86_64.h"

	.section .rodata
	.balign 8
t_rip_k: .quad 0x1234567

	.text
	.p2align 4
FUNC(t_short)		/* x + 1 */
	push %rbx		/* +0 */
	mov %rdi, %rbx		/* +1 */
	lea 1(%rbx), %rax	/* +4 */
	pop %rbx		/* +8 */
	ret			/* +9 */
ENDF(t_short)

	.p2align 4
FUNC(t_cmp)		/* a < b, unsigned */
	xor %eax, %eax		/* +0 */
	cmp %rsi, %rdi		/* +2 */
	setb %al		/* +5 */
	ret			/* +8 */
ENDF(t_cmp)

	.p2align 4
FUNC(t_loopy)		/* x * n, n >= 1 */
	xor %eax, %eax		/* +0 */
1:	add %rdi, %rax		/* +2 */
	dec %rsi		/* +5 */
	jnz 1b			/* +8 */
	ret			/* +10 */
ENDF(t_loopy)

	.p2align 4
FUNC(t_ret1)
	ret			/* +0 */
ENDF(t_ret1)

	.p2align 4
FUNC(t_ret1_caller)	/* x, through a call to t_ret1 */
	mov %rdi, %rax		/* +0 */
	call t_ret1		/* +3 */
	ret			/* +8 */
ENDF(t_ret1_caller)

	.p2align 4
FUNC(t_rip)		/* x + 0x1234567 */
	mov t_rip_k(%rip), %rax	/* +0 */
	add %rdi, %rax		/* +7 */
	ret			/* +10 */
ENDF(t_rip)

	NOTE_GNU_STACK

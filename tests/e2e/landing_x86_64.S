/* SPDX-License-Identifier: MIT */
/*
 * Functions whose first displaced bytes hold a system call, so that a
 * thread can be parked, for as long as a test likes, inside the
 * trampoline of a probe at their entry: read(fd, buf, len) from there.
 * A probe at +4 then makes a jump whose bytes cover +7, where that
 * trampoline jumps back to. landing.c checks the layout.
 */
#include "asm_x86_64.h"

	.text
#define PARK(f)								\
	.p2align 4;							\
FUNC(f)				/* read(rdi, rsi, rdx) */		\
	xor %eax, %eax;		/* +0: SYS_read */			\
	syscall;		/* +2 */				\
	mov %rax, %rcx;		/* +4 */				\
	mov %rcx, %rax;		/* +7 */				\
	ret;			/* +10 */				\
ENDF(f)

PARK(t_park_single)
PARK(t_park_batch)

/* For the storm: a probe at +4 makes a region [4, 9) that jumps back to
 * +9, one at +8 a jump over [8, 13) (t_short of torture_x86_64.S; the
 * padding after it takes part)... */
	.p2align 4
FUNC(t_land_short)	/* x + 1 */
	push %rbx		/* +0 */
	mov %rdi, %rbx		/* +1 */
	lea 1(%rbx), %rax	/* +4 */
	pop %rbx		/* +8 */
	ret			/* +9 */
ENDF(t_land_short)

/* ... and here +0 makes [0, 5), back to +5, and +2 a jump over [2, 7)
 * (t_cmp). */
	.p2align 4
FUNC(t_land_cmp)		/* a < b, unsigned */
	xor %eax, %eax		/* +0 */
	cmp %rsi, %rdi		/* +2 */
	setb %al		/* +5 */
	ret			/* +8 */
ENDF(t_land_cmp)

	NOTE_GNU_STACK

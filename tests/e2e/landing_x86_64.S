/* SPDX-License-Identifier: MIT */
/*
 * Functions whose first displaced bytes hold a system call, so that a
 * thread can be parked, for as long as a test likes, inside the
 * trampoline of a probe at their entry: read(fd, buf, len) from there.
 * A probe at +4 then makes a jump whose bytes cover +7, where that
 * trampoline jumps back to. landing.c checks the layout. The storm of
 * landing.c uses t_short and t_cmp of torture_x86_64.S.
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
PARK(t_park_rounds)
PARK(t_park_deaf)

	NOTE_GNU_STACK

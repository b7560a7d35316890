/* SPDX-License-Identifier: MIT */
/*
 * riscv64 targets of torture.c: the counterparts of torture_x86_64.S, each
 * function in its own 32-byte slot (FUNC_BYTES), with the byte offsets
 * torture.c probes noted beside them. Compressed and full-length
 * instructions are placed on purpose: a jal over two compressed
 * instructions (t_short +0..+6) is a patch written with every other thread
 * stopped; one over a single aligned word (t_cmp +0) is one store.
 */
#include "asm_riscv64.h"

	.option norelax
	.section .rodata
	.balign 8
t_rip_k: .quad 0x1234567

	.text
	.p2align 5
FUNC(t_short)		/* x + 1 */
	c.addi16sp sp, -16		/* +0 */
	c.sdsp ra, 8(sp)		/* +2 */
	c.addi a0, 1			/* +4 */
	c.ldsp ra, 8(sp)		/* +6 */
	c.addi16sp sp, 16		/* +8 */
	c.jr ra				/* +10 */
ENDF(t_short)

	.p2align 5
FUNC(t_cmp)		/* a < b, unsigned */
	sltu a0, a0, a1			/* +0 */
	c.jr ra				/* +4 */
ENDF(t_cmp)

	.p2align 5
FUNC(t_loopy)		/* x * n, n >= 1 */
	c.li a2, 0			/* +0 */
1:	c.add a2, a0			/* +2 */
	c.addi a1, -1			/* +4 */
	c.bnez a1, 1b			/* +6 */
	c.mv a0, a2			/* +8 */
	c.jr ra				/* +10 */
ENDF(t_loopy)

	.p2align 5
FUNC(t_ret1)
	c.jr ra				/* +0 */
ENDF(t_ret1)

	.p2align 5
FUNC(t_ret1_caller)	/* x, through a call to t_ret1 */
	c.addi16sp sp, -16		/* +0 */
	c.sdsp ra, 8(sp)		/* +2 */
	.option push
	.option norvc
	jal t_ret1			/* +4 */
	.option pop
	c.ldsp ra, 8(sp)		/* +8 */
	c.addi16sp sp, 16		/* +10 */
	c.jr ra				/* +12 */
ENDF(t_ret1_caller)

	.p2align 5
FUNC(t_rip)		/* x + 0x1234567, through a pc-relative load */
1:	auipc a1, %pcrel_hi(t_rip_k)	/* +0 */
	ld a1, %pcrel_lo(1b)(a1)	/* +4 */
	c.add a0, a1			/* +8 */
	c.jr ra				/* +10 */
ENDF(t_rip)

	NOTE_GNU_STACK

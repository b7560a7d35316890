/* SPDX-License-Identifier: MIT */
/*
 * Targets of trapback.c: sites whose out-of-line copy cannot jump back.
 * Once the memory within a jal's reach (+-1 MiB) is taken, the jump back
 * needs a register free after the instruction, and there is none here:
 * the function first writes every temporary the calling convention
 * leaves dead at its entry, and from the sites on every register is read
 * before it is written, up to a return (where all are live).
 */
#include "asm_riscv64.h"

	.text
	.p2align 2
/* uint64_t tb_far(const uint64_t *p): *p + 0x12345 + 19 */
FUNC(tb_far)
	li t1, 1
	li t3, 3
	li t4, 4
	li t5, 5
	li t6, 6
	.globl tb_far_lui
tb_far_lui:
	lui a1, 0x12            /* out of line: it depends on no address */
	addi a1, a1, 0x345
	.globl tb_far_load
tb_far_load:
	ld a0, 0(a0)            /* a load, out of line as well */
	add a0, a0, a1
	.globl tb_far_add
tb_far_add:
	c.add t1, t3            /* compressed */
	add t1, t1, t4
	add t1, t1, t5
	add t1, t1, t6
	add a0, a0, t1
	ret
ENDF(tb_far)

	NOTE_GNU_STACK

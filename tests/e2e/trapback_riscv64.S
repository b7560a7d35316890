/* SPDX-License-Identifier: MIT */
/*
 * Targets of trapback.c: sites whose out-of-line copy cannot jump back.
 * Once the memory within a jal's reach (+-1 MiB) is taken, the jump back
 * needs a register free after the instruction, and there is none here:
 * tb_far writes nothing but a0 and a1, its result registers, so a caller
 * that calls it directly may keep a value in any other caller-saved
 * register across the call (-fipa-ra), and from the sites on a0 and a1
 * are read before they are written, up to the return.
 */
#include "asm_riscv64.h"

	.text
	.p2align 2
/* uint64_t tb_far(const uint64_t *p): *p + 0x12345 + 19 */
FUNC(tb_far)
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
	c.addi a0, 10           /* compressed */
	addi a0, a0, 9
	ret
ENDF(tb_far)

	NOTE_GNU_STACK

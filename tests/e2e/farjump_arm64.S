/* SPDX-License-Identifier: MIT */
/*
 * Targets of farjump.c: functions whose probes must take the long JUMP
 * form (adrp; add; br through a free register, 12 bytes) once the memory
 * within a b's reach (+-128 MiB) is taken. Each labelled site starts the
 * three words the patch displaces; among them a word that depends on its
 * address (cbz, adr, bl), which the trampoline, far away, must rebuild
 * through a scratch register.
 */
#include "asm_arm64.h"

	.text
	.p2align 4
/* uint64_t far_entry(uint64_t x): 3x + 7; the entry probe displaces the
 * three adds (x16, x17 are free at a function entry by AAPCS64) */
FUNC(far_entry)
	add x1, x0, x0
	add x0, x1, x0
	add x0, x0, #7
	ret
ENDF(far_entry)

/* uint64_t far_branch(uint64_t x): x ? x + 100 : 1; the site's words are
 * cbz, add, nop, and cbz's target lies in the function, far from any
 * trampoline */
	.p2align 4
FUNC(far_branch)
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	.globl far_branch_site
far_branch_site:
	cbz x0, 1f
	add x0, x0, #100
	nop
	ldp x29, x30, [sp], #16
	ret
1:	mov x0, #1
	ldp x29, x30, [sp], #16
	ret
ENDF(far_branch)

/* uint64_t far_call(uint64_t x): far_entry(x) + 1000; the site's words
 * are adr, ldr, bl: the relocated call links with the original return
 * address */
	.p2align 4
FUNC(far_call)
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	.globl far_call_site
far_call_site:
	adr x3, .Lthousand
	ldr x4, [x3]
	bl far_entry
	add x0, x0, x4
	ldp x29, x30, [sp], #16
	ret
	.p2align 3
.Lthousand:
	.quad 1000
ENDF(far_call)


	NOTE_GNU_STACK

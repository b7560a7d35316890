/* SPDX-License-Identifier: MIT */
/*
 * arm64 twins of api_x86_64.S: functions with a known instruction layout
 * for api.c, which checks the words before relying on the offsets below.
 * On arm64 a JUMP displaces one word, so the x86-64 cases about bytes a
 * jump displaces (a loop head, a neighbour's jump target inside them, a
 * function too short for the jump) become cases where the jump goes in
 * and everything around it keeps working.
 */
#include "asm_arm64.h"

	.text
	.p2align 4
/* uint64_t api_seq(uint64_t x): 3x + 7 */
FUNC(api_seq)
	stp x29, x30, [sp, #-16]!	/* +0  a9bf7bfd */
	mov x29, sp			/* +4  910003fd */
	add x0, x0, x0, lsl #1		/* +8  8b000400 */
	add x0, x0, #7			/* +12 91001c00 */
	ldp x29, x30, [sp], #16		/* +16 a8c17bfd */
	ret				/* +20 d65f03c0 */
ENDF(api_seq)

/* The same function across a page boundary: its first two words in one
 * page, the rest in the next. */
	.p2align 12
	.skip 4096 - 8, 0
FUNC(api_seq_straddle)
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	add x0, x0, x0, lsl #1
	add x0, x0, #7
	ldp x29, x30, [sp], #16
	ret
ENDF(api_seq_straddle)

	.p2align 4
/* uint64_t api_loop(uint64_t x, uint64_t n): x * n, n >= 1. The loop head
 * at +4 is a branch target right after the first word. */
FUNC(api_loop)
	mov x2, #0			/* +0 */
1:	add x2, x2, x0			/* +4 */
	subs x1, x1, #1			/* +8 */
	b.ne 1b				/* +12 */
	mov x0, x2			/* +16 */
	ret				/* +20 */
ENDF(api_loop)

	.p2align 4
/* A one-word function with the next function right after it. */
FUNC(api_tiny_nopad)
	ret				/* +0 */
ENDF(api_tiny_nopad)
FUNC(api_after_tiny)
	mov x0, #1
	ret
ENDF(api_after_tiny)

	.p2align 4
/* uint64_t api_nb_tail(uint64_t x): x + 1, by jumping into the middle of
 * the next function, with unwind info, as real functions have. */
FUNC(api_nb_tail)
	.cfi_startproc
	mov x1, x0			/* +0 */
	b .Lnb_inner			/* +4 */
	.cfi_endproc
ENDF(api_nb_tail)

	.p2align 4
/* uint64_t api_nb_target(uint64_t x): 2x + 1; +4 is entered from api_nb_tail */
FUNC(api_nb_target)
	.cfi_startproc
	add x1, x0, x0			/* +0 */
.Lnb_inner:
	add x0, x1, #1			/* +4 */
	ret				/* +8 */
	.cfi_endproc
ENDF(api_nb_target)

	.p2align 4
/* uint64_t api_far_target(uint64_t x): 3x + 1; +4 is entered from
 * api_far_tail, 16 KiB away. */
FUNC(api_far_target)
	.cfi_startproc
	add x1, x0, x0, lsl #1		/* +0 */
.Lfar_inner:
	add x0, x1, #1			/* +4 */
	ret				/* +8 */
	.cfi_endproc
ENDF(api_far_target)

	.skip 16384, 0
	.p2align 4
/* uint64_t api_far_tail(uint64_t x): x + 1, through api_far_target+4 */
FUNC(api_far_tail)
	.cfi_startproc
	mov x1, x0
	b .Lfar_inner
	.cfi_endproc
ENDF(api_far_tail)

	.p2align 4
/* uint64_t api_excl(uint64_t *p): atomically ++*p, old value returned: a
 * load/store-exclusive retry loop, whose words no probe may take. */
FUNC(api_excl)
	mov x2, x0			/* +0 */
1:	ldaxr x0, [x2]			/* +4 */
	add x1, x0, #1			/* +8 */
	stlxr w3, x1, [x2]		/* +12 */
	cbnz w3, 1b			/* +16 */
	ret				/* +20 */
ENDF(api_excl)

	NOTE_GNU_STACK

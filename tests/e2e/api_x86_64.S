/* SPDX-License-Identifier: MIT */
/*
 * Functions with a known instruction layout for api.c, which checks the
 * bytes before relying on the offsets below.
 */
#include "asm_x86_64.h"

	.text
	.p2align 4
/* uint64_t api_seq(uint64_t x): 3x + 7 */
FUNC(api_seq)
	push %rbp			/* +0  55 */
	mov %rsp, %rbp			/* +1  48 89 e5 */
	lea (%rdi,%rdi,2), %rax		/* +4  48 8d 04 7f */
	add $7, %rax			/* +8  48 83 c0 07 */
	pop %rbp			/* +12 5d */
	ret				/* +13 c3 */
ENDF(api_seq)

	.p2align 4
/* uint64_t api_loop(uint64_t x, uint64_t n): x * n, n >= 1. The loop head
 * at +2 is a branch target inside the first 5 bytes. */
FUNC(api_loop)
	xor %eax, %eax			/* +0  31 c0 */
1:	add %rdi, %rax			/* +2  48 01 f8 */
	dec %rsi			/* +5  48 ff ce */
	jnz 1b				/* +8  75 f8 */
	ret				/* +10 c3 */
ENDF(api_loop)

	.p2align 4
/* A 1-byte function with no padding after it: the next function starts at
 * +1, so a 5-byte jump cannot fit. */
FUNC(api_tiny_nopad)
	ret				/* +0 c3 */
ENDF(api_tiny_nopad)
FUNC(api_after_tiny)
	mov $1, %eax
	ret
ENDF(api_after_tiny)

	NOTE_GNU_STACK

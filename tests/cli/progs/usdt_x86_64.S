/* SPDX-License-Identifier: MIT */
/*
 * usdt_forms(r): a USDT probe whose twelve arguments take every operand
 * form GAS writes for x86-64, written out by hand (<sys/sdt.h>'s assembler
 * form), each value a function of r:
 *
 *   arg0  -4@%r9d                   -r                    32-bit register
 *   arg1  8@%rdi                    r
 *   arg2  -4@$-5                    -5                    constant
 *   arg3  8@8(%rax,%rdx,8)          usdt_table[r % 4 + 1] base, index, scale, disp
 *   arg4  -8@(%rax,%rdx,8)          usdt_table[r % 4]     base, index, scale
 *   arg5  -8@-16(%rsp)              r                     the red zone, below sp
 *   arg6  -2@usdt_words+2(%rip)     -200                  a global through a symbol
 *   arg7  1@%ch                     r & 0xff              a high byte register
 *   arg8  2@%r10w                   0x2345                16-bit register
 *   arg9  4@usdt_words(%rip)        0xff380064            both words at once
 *   arg10 -1@%r11b                  -3                    8-bit register
 *   arg11 -8@usdt_table+32(%rip)    -55                   symbol + offset
 *
 * A leaf function: the red zone is its own.
 */
#include <sys/sdt.h>

	.section .data
	.p2align 3
	.globl usdt_table
usdt_table:
	.quad 11, -22, 33, -44, -55
	.globl usdt_words
usdt_words:
	.short 100, -200

	.text
	.p2align 4
	.globl usdt_forms
	.type usdt_forms, @function
usdt_forms:
	leaq	usdt_table(%rip), %rax
	movq	%rdi, %rdx
	andq	$3, %rdx
	movl	%edi, %r9d
	negl	%r9d
	movq	%rdi, %rcx
	shlq	$8, %rcx
	movl	$0x12345, %r10d
	movq	$-3, %r11
	movq	%rdi, -16(%rsp)
	STAP_PROBE12(usdt_asm, forms, -4@%r9d, 8@%rdi, -4@$-5, 8@8(%rax,%rdx,8), -8@(%rax,%rdx,8), -8@-16(%rsp), -2@usdt_words+2(%rip), 1@%ch, 2@%r10w, 4@usdt_words(%rip), -1@%r11b, -8@usdt_table+32(%rip))
	/* the six forms bpftrace 0.17 reads (through bcc), for the
	 * differential suite: it reads no arg6.. on x86-64, nor %ch, %r10w,
	 * %r11b */
	STAP_PROBE6(usdt_asm, args, 8@8(%rax,%rdx,8), -8@(%rax,%rdx,8), -8@-16(%rsp), -2@usdt_words+2(%rip), -4@%r9d, -4@$-5)
	movq	%rdi, %rax
	ret
	.size usdt_forms, . - usdt_forms

	.section .note.GNU-stack, "", @progbits

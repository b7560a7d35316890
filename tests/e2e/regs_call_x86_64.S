/* SPDX-License-Identifier: MIT */
/*
 * void rc_call(const struct rc_state *in, struct rc_state *out,
 *              void (*leaf)(void), unsigned mode);
 *
 * A caller as GCC's -fipa-ra may compile it: every general register but
 * rsp, mxcsr and the vector registers of `mode` (regs_call.h) hold values
 * from `in` across the call to `leaf`, which writes only rax; everything
 * is then dumped to `out` in the same layout. The ABI lets a callee
 * clobber the caller-saved ones; a caller that knows its callee may keep
 * values there all the same, so a probe must not change any of them.
 *
 * The leaves: rc_leaf returns RC_RESULT in two instructions, the entry
 * site (5 bytes) and rc_leaf_mid (6), each long enough for a jump;
 * rc_leaf_store also stores it in rc_watched, for watchpoints.
 */
#include "asm_x86_64.h"
#include "regs_call.h"

#define G(n) (RC_GPR + 8 * (n))

	.text
	.p2align 4
FUNC(rc_call)
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rsi			/* out: 16(%rsp) */
	push %rdx			/* leaf: 8(%rsp) */
	push %rcx			/* mode: (%rsp); rsp is 16-byte aligned */
	cmp $RC_AVX, %ecx
	je 2f
	ja 3f
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu RC_VEC+64*\n(%rdi), %xmm\n
	.endr
	jmp 4f
2:	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu RC_VEC+64*\n(%rdi), %ymm\n
	.endr
	jmp 4f
3:	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	vmovdqu64 RC_VEC+64*\n(%rdi), %zmm\n
	.endr
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7
	kmovq RC_MISC+8*\n(%rdi), %k\n
	.endr
4:	ldmxcsr RC_MISC+64(%rdi)
	mov G(0)(%rdi), %rax
	mov G(1)(%rdi), %rcx
	mov G(2)(%rdi), %rdx
	mov G(3)(%rdi), %rbx
	mov G(5)(%rdi), %rbp
	mov G(6)(%rdi), %rsi
	mov G(8)(%rdi), %r8
	mov G(9)(%rdi), %r9
	mov G(10)(%rdi), %r10
	mov G(11)(%rdi), %r11
	mov G(12)(%rdi), %r12
	mov G(13)(%rdi), %r13
	mov G(14)(%rdi), %r14
	mov G(15)(%rdi), %r15
	mov G(7)(%rdi), %rdi
	call *8(%rsp)
	/* gpr[n] at n*8(%rsp), rsp's slot unused */
	push %r15
	push %r14
	push %r13
	push %r12
	push %r11
	push %r10
	push %r9
	push %r8
	push %rdi
	push %rsi
	push %rbp
	lea -8(%rsp), %rsp
	push %rbx
	push %rdx
	push %rcx
	push %rax
	mov 128+16(%rsp), %rax		/* out */
	stmxcsr RC_MISC+64(%rax)
	movl $0, RC_MISC+68(%rax)
	cmpl $RC_AVX, 128(%rsp)
	je 2f
	ja 3f
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu %xmm\n, RC_VEC+64*\n(%rax)
	.endr
	jmp 4f
2:	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu %ymm\n, RC_VEC+64*\n(%rax)
	.endr
	jmp 4f
3:	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	vmovdqu64 %zmm\n, RC_VEC+64*\n(%rax)
	.endr
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7
	kmovq %k\n, RC_MISC+8*\n(%rax)
	.endr
4:	xor %ecx, %ecx
5:	mov (%rsp,%rcx,8), %rdx
	mov %rdx, RC_GPR(%rax,%rcx,8)
	inc %ecx
	cmp $16, %ecx
	jne 5b
	cmpl $RC_SSE, 128(%rsp)
	je 6f
	vzeroupper
6:	lea 128+24(%rsp), %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret
ENDF(rc_call)

	.p2align 4
FUNC(rc_leaf)
	mov $RC_RESULT - 0x101, %eax		/* the entry site: 5 bytes */
	.globl rc_leaf_mid
rc_leaf_mid:
	.byte 0x48, 0x05, 0x01, 0x01, 0x00, 0x00 /* add $0x101, %rax */
	ret
ENDF(rc_leaf)

	.p2align 4
FUNC(rc_leaf_store)
	mov $RC_RESULT, %eax
	mov %rax, rc_watched(%rip)
	ret
ENDF(rc_leaf_store)

	.bss
	.balign 8
	.globl rc_watched
rc_watched:
	.quad 0

	NOTE_GNU_STACK

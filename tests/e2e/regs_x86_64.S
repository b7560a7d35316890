/* SPDX-License-Identifier: MIT */
/*
 * void regs_run_sse(struct regs_out *out, uint64_t rflags, const void *vec);
 * void regs_run_avx(struct regs_out *out, uint64_t rflags, const void *vec);
 *
 * Load a known value into every general register, rflags (popfq), the red
 * zone and xmm0-15 (ymm0-15 for _avx; vec is 16 x 32 bytes), pass three
 * probe sites, then dump everything to out (layout in regs.h). Site a is a
 * 5-byte nop, site b a 1-byte nop followed by short instructions, site c a
 * nop reached with rsp 8 bytes lower (misaligned for a call). The sites are
 * published in regs_sites[]: sse a, b, c, then avx a, b, c.
 */
#include "asm_x86_64.h"
#include "regs.h"

#define DUMP_RSP (16 * 8 + 256) /* from rsp after the dump pushes to the site rsp */

.macro REGS_BODY avx, site_a, site_b, site_c
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rdi		/* out; rsp is now the site rsp */
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.if \avx
	vmovdqu 32*\n(%rdx), %ymm\n
	.else
	movdqu 32*\n(%rdx), %xmm\n
	.endif
	.endr
	push %rsi
	popfq
	movabs $REDZONE_BASE, %rax	/* mov and lea leave the flags alone */
	.irp k, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
	mov %rax, -8*\k(%rsp)
	lea 1(%rax), %rax
	.endr
	movabs $PAT_RAX, %rax
	movabs $PAT_RBX, %rbx
	movabs $PAT_RCX, %rcx
	movabs $PAT_RDX, %rdx
	movabs $PAT_RSI, %rsi
	movabs $PAT_RDI, %rdi
	movabs $PAT_RBP, %rbp
	movabs $PAT_R8, %r8
	movabs $PAT_R9, %r9
	movabs $PAT_R10, %r10
	movabs $PAT_R11, %r11
	movabs $PAT_R12, %r12
	movabs $PAT_R13, %r13
	movabs $PAT_R14, %r14
	movabs $PAT_R15, %r15
\site_a:
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0(%rax,%rax) */
\site_b:
	nop
	xchg %ax, %ax
	nop
	lea -8(%rsp), %rsp
\site_c:
	nop
	lea 8(%rsp), %rsp
	/* Dump below the red zone so it survives. */
	lea -256(%rsp), %rsp
	pushfq
	push %r15
	push %r14
	push %r13
	push %r12
	push %r11
	push %r10
	push %r9
	push %r8
	push %rbp
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %rbx
	push %rax
	mov DUMP_RSP(%rsp), %rdi
	.irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	mov 8*\i(%rsp), %rax
	mov %rax, OUT_GPR+8*\i(%rdi)
	.endr
	lea DUMP_RSP(%rsp), %rax
	mov %rax, OUT_RSP(%rdi)
	.irp k, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
	mov (DUMP_RSP-8*\k)(%rsp), %rax
	mov %rax, OUT_REDZONE+8*(\k-1)(%rdi)
	.endr
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.if \avx
	vmovdqu %ymm\n, OUT_VEC+32*\n(%rdi)
	.else
	movdqu %xmm\n, OUT_VEC+32*\n(%rdi)
	.endif
	.endr
	.if \avx
	vzeroupper
	.endif
	cld
	lea DUMP_RSP(%rsp), %rsp
	pop %rdi
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret
.endm

	.text
	.p2align 4
FUNC(regs_run_sse)
	REGS_BODY 0, .Lsse_a, .Lsse_b, .Lsse_c
ENDF(regs_run_sse)

	.p2align 4
FUNC(regs_run_avx)
	REGS_BODY 1, .Lavx_a, .Lavx_b, .Lavx_c
ENDF(regs_run_avx)

	.section .data.rel.ro, "aw"
	.balign 8
	.globl regs_sites
regs_sites:
	.quad .Lsse_a, .Lsse_b, .Lsse_c, .Lavx_a, .Lavx_b, .Lavx_c

	NOTE_GNU_STACK

/* SPDX-License-Identifier: MIT */
/*
 * x86-64 end-to-end suite: each group's entry function returns MAGIC only if
 * every instruction ran correctly, in the style of the kernel's
 * arch/riscv/kernel/tests/kprobes/test-kprobes-asm.S. Every instruction a
 * relocator or emulator could get wrong is labelled with I() (see
 * asm_x86_64.h) so the C side can probe each one and knows how often it
 * must fire per call.
 *
 * Groups are called through suite_call(fn), which saves the callee-saved
 * registers, so a group may clobber anything; a failed check jumps to a
 * stub that loads 0xbad0000 + source line into %eax and unwinds through
 * suite_fail, which restores %rsp.
 *
 * Numeric labels: 9 is I()'s, 7 is FAILIF()'s; the code uses the others.
 */
#include "asm_x86_64.h"

#define FAILIF(cc)                                                           \
	I(j##cc 7f);                                                         \
	.pushsection .text.np_fail, "ax";                                    \
	7: mov $(0xbad0000 + __LINE__), %eax;                                \
	jmp suite_fail;                                                      \
	.popsection

	.data
	.balign 16
suite_saved_rsp: .quad 0
rr_q:	.quad 0x1111222233334444
rr_w:	.quad 0
rr_b:	.byte 0x5a
	.balign 8
c_fnptr: .quad c_retaddr
c_jmpptr: .quad .Lc_jtarget

	.section .rodata
	.balign 16
rr_ro:	.quad 0x0badf00d12345678
	.balign 16
rr_ro_x: .quad 0x3ff0000000000000, 0x4000000000000000 /* 1.0, 2.0 */
	.balign 4
sw_table:
	.long .Lsw0 - sw_table, .Lsw1 - sw_table
	.long .Lsw2 - sw_table, .Lsw3 - sw_table

	.text
/* uint64_t suite_call(uint64_t (*group)(void)) */
	.p2align 4
FUNC(suite_call)
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	sub $8, %rsp
	mov %rsp, suite_saved_rsp(%rip)
	call *%rdi
.Lsuite_out:
	add $8, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret
ENDF(suite_call)

FUNC(suite_fail)
	mov suite_saved_rsp(%rip), %rsp
	cld
	jmp .Lsuite_out
ENDF(suite_fail)

/* ---- push/pop of every register, immediates, memory, 16-bit ---------- */
GROUP_BEGIN(t_pushpop)
FUNC(t_pushpop)
	IJ(sub $0x128, %rsp)
	I(mov $0x1001, %eax)
	I(mov $0x1002, %ebx)
	I(mov $0x1003, %ecx)
	I(mov $0x1004, %edx)
	I(mov $0x1005, %esi)
	I(mov $0x1006, %edi)
	I(mov $0x1007, %ebp)
	I(mov $0x1008, %r8d)
	I(mov $0x1009, %r9d)
	I(mov $0x100a, %r10d)
	I(mov $0x100b, %r11d)
	I(mov $0x100c, %r12d)
	I(mov $0x100d, %r13d)
	I(mov $0x100e, %r14d)
	I(movabs $0x0123456789abcdef, %r15)
	I(push %rax)
	I(push %rbx)
	I(push %rcx)
	I(push %rdx)
	I(push %rsi)
	I(push %rdi)
	I(push %rbp)
	I(push %r8)
	I(push %r9)
	I(push %r10)
	I(push %r11)
	I(push %r12)
	I(push %r13)
	I(push %r14)
	I(push %r15)
	I(pop %rax)	/* r15's value */
	I(pop %rbx)
	I(pop %rcx)
	I(pop %rdx)
	I(pop %rsi)
	I(pop %rdi)
	I(pop %rbp)
	I(pop %r8)
	I(pop %r9)
	I(pop %r10)
	I(pop %r11)
	I(pop %r12)
	I(pop %r13)
	I(pop %r14)
	I(pop %r15)	/* rax's value */
	I(cmp $0x100e, %rbx)
	FAILIF(ne)
	I(cmp $0x100d, %rcx)
	FAILIF(ne)
	I(cmp $0x100c, %rdx)
	FAILIF(ne)
	I(cmp $0x100b, %rsi)
	FAILIF(ne)
	I(cmp $0x100a, %rdi)
	FAILIF(ne)
	I(cmp $0x1009, %rbp)
	FAILIF(ne)
	I(cmp $0x1008, %r8)
	FAILIF(ne)
	I(cmp $0x1007, %r9)
	FAILIF(ne)
	I(cmp $0x1006, %r10)
	FAILIF(ne)
	I(cmp $0x1005, %r11)
	FAILIF(ne)
	I(cmp $0x1004, %r12)
	FAILIF(ne)
	I(cmp $0x1003, %r13)
	FAILIF(ne)
	I(cmp $0x1002, %r14)
	FAILIF(ne)
	I(cmp $0x1001, %r15)
	FAILIF(ne)
	I(movabs $0x0123456789abcdef, %rbx)
	I(cmp %rbx, %rax)
	FAILIF(ne)
	I(push $0x7f)
	I(pushq $0x12345678)
	I(push 8(%rsp))		/* pushes 0x7f again */
	I(pop %rax)
	I(cmp $0x7f, %rax)
	FAILIF(ne)
	I(pop (%rsp))		/* address taken after the pop: overwrites 0x7f */
	I(pop %rcx)
	I(cmp $0x12345678, %rcx)
	FAILIF(ne)
	I(mov $0x4321, %eax)
	I(mov %rsp, %rsi)
	I(push %ax)		/* 66 50: moves rsp by 2 only */
	I(pop %dx)
	I(cmp %rsp, %rsi)
	FAILIF(ne)
	I(cmp $0x4321, %dx)
	FAILIF(ne)
	I(add $0x128, %rsp)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_pushpop)
GROUP_END(t_pushpop)

/* ---- rip-relative loads, stores, lea, immediates, vector, lock ------- */
GROUP_BEGIN(t_riprel)
FUNC(t_riprel)
	I(movq $0, rr_w(%rip))		/* rip-relative with imm32 */
	I(mov rr_q(%rip), %rax)		/* .data load */
	I(mov %rax, rr_w(%rip))		/* .data store */
	I(mov rr_ro(%rip), %rcx)	/* .rodata load */
	I(lea rr_ro(%rip), %rdx)
	I(cmp (%rdx), %rcx)
	FAILIF(ne)
	I(cmpl $0x33334444, rr_w(%rip))
	FAILIF(ne)
	I(addq $1, rr_w(%rip))
	I(cmpb $0x45, rr_w(%rip))	/* rip-relative with imm8 */
	FAILIF(ne)
	I(lock incq rr_w(%rip))
	I(lea rr_w(%rip), %rdi)
	I(mov (%rdi), %rax)
	I(movabs $0x1111222233334446, %rcx)
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(movzbl rr_b(%rip), %esi)
	I(cmp $0x5a, %esi)
	FAILIF(ne)
	I(push rr_q(%rip))
	I(pop %r8)
	I(cmp rr_q(%rip), %r8)
	FAILIF(ne)
	I(movsd rr_ro_x(%rip), %xmm0)
	I(addsd rr_ro_x+8(%rip), %xmm0)	/* 1.0 + 2.0 */
	I(movq %xmm0, %rax)
	I(movabs $0x4008000000000000, %rcx)
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(movdqa rr_ro_x(%rip), %xmm1)
	I(pextrq $1, %xmm1, %rax)
	I(movabs $0x4000000000000000, %rcx)
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_riprel)
GROUP_END(t_riprel)

/* ---- jmp rel8/rel32, forward and backward ---------------------------- */
GROUP_BEGIN(t_jumps)
FUNC(t_jumps)
	IJ(mov $0, %eax)
	I(jmp 1f)			/* rel8 forward */
	I0(jmp suite_fail)
1:	I(add $1, %eax)
	I({disp32} jmp 2f)		/* rel32 forward */
	I0(jmp suite_fail)
3:	I(add $4, %eax)
	I(jmp 4f)
2:	I(add $2, %eax)
	I(jmp 3b)			/* rel8 backward */
4:	I({disp32} jmp 5f)
6:	I(add $8, %eax)
	I(jmp 8f)
5:	I({disp32} jmp 6b)		/* rel32 backward */
8:	I(cmp $15, %eax)
	FAILIF(ne)
	I(jmp 1f)			/* rel32 by distance */
	.fill 160, 1, 0x90
1:	I(add $16, %eax)
	I(jmp 2f)
3:	I(add $32, %eax)
	I(jmp 4f)
2:	.fill 160, 1, 0x90		/* run through, then far back */
	I(jmp 3b)
4:	I(cmp $63, %eax)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_jumps)
GROUP_END(t_jumps)

/* ---- every common jcc, taken and not taken, rel8 and rel32 ----------- */
#define COMMA_ ,
#define TAKEN(setup, jcc) I(setup); I(jcc 1f); I0(jmp suite_fail); 1:
#define TAKEN32(setup, jcc) I(setup); I({disp32} jcc 1f); I0(jmp suite_fail); 1:
#define NOTTAKEN(setup, cc) I(setup); FAILIF(cc)
GROUP_BEGIN(t_jcc)
FUNC(t_jcc)
	IJ(mov $5, %eax)
	I(mov $-3, %rbx)
	I(movabs $0x7fffffffffffffff, %rcx)
	TAKEN(cmp $5 COMMA_ %rax, je)
	NOTTAKEN(cmp $6 COMMA_ %rax, e)
	TAKEN32(cmp $6 COMMA_ %rax, jne)
	NOTTAKEN(cmp $5 COMMA_ %rax, ne)
	TAKEN(cmp $6 COMMA_ %rax, jb)
	NOTTAKEN(cmp $4 COMMA_ %rax, b)
	TAKEN32(cmp $4 COMMA_ %rax, jae)
	NOTTAKEN(cmp $6 COMMA_ %rax, ae)
	TAKEN(cmp $5 COMMA_ %rax, jbe)
	NOTTAKEN(cmp $4 COMMA_ %rax, be)
	TAKEN32(cmp $4 COMMA_ %rax, ja)
	NOTTAKEN(cmp $5 COMMA_ %rax, a)
	TAKEN(cmp $6 COMMA_ %rax, jl)
	NOTTAKEN(cmp $5 COMMA_ %rax, l)
	TAKEN32(cmp $5 COMMA_ %rax, jge)
	NOTTAKEN(cmp $6 COMMA_ %rax, ge)
	TAKEN(cmp $5 COMMA_ %rax, jle)
	NOTTAKEN(cmp $4 COMMA_ %rax, le)
	TAKEN32(cmp $4 COMMA_ %rax, jg)
	NOTTAKEN(cmp $5 COMMA_ %rax, g)
	TAKEN(test %rbx COMMA_ %rbx, js)
	NOTTAKEN(test %rax COMMA_ %rax, s)
	TAKEN32(test %rax COMMA_ %rax, jns)
	NOTTAKEN(test %rbx COMMA_ %rbx, ns)
	TAKEN(cmp $-1 COMMA_ %rcx, jo)
	NOTTAKEN(cmp $1 COMMA_ %rcx, o)
	TAKEN32(cmp $1 COMMA_ %rcx, jno)
	NOTTAKEN(cmp $-1 COMMA_ %rcx, no)
	TAKEN(cmp $5 COMMA_ %rax, jp)		/* result 0: even parity */
	NOTTAKEN(cmp $4 COMMA_ %rax, p)		/* result 1: odd parity */
	TAKEN32(cmp $4 COMMA_ %rax, jnp)
	NOTTAKEN(cmp $5 COMMA_ %rax, np)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_jcc)
GROUP_END(t_jcc)

/* ---- jrcxz, jecxz, loop, loopne: rel8-only branches ------------------ */
GROUP_BEGIN(t_rcx)
FUNC(t_rcx)
	IJ(mov $0, %ecx)
	I(jrcxz 1f)			/* taken */
	I0(jmp suite_fail)
1:	I(mov $1, %ecx)
	I(jrcxz 2f)			/* not taken */
	I(jmp 3f)
2:	I0(jmp suite_fail)
3:	I(movabs $0x100000000, %rcx)
	I(jecxz 1f)			/* ecx is 0: taken */
	I0(jmp suite_fail)
1:	I(jrcxz 2b)			/* rcx is not 0 */
	I(mov $5, %ecx)
	I(xor %eax, %eax)
4:	IN(5, add $3, %eax)
	IN(5, loop 4b)
	I(cmp $15, %eax)
	FAILIF(ne)
	I(test %rcx, %rcx)
	FAILIF(nz)
	I(mov $10, %ecx)
	I(xor %edx, %edx)
5:	IN(3, inc %edx)
	IN(3, cmp $3, %edx)
	IN(3, loopne 5b)		/* ends on ZF=1 after 3 rounds */
	I(cmp $7, %ecx)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_rcx)
GROUP_END(t_rcx)

/* ---- calls: rel32, indirect via register and memory, ret imm16 ------- */
GROUP_BEGIN(t_calls)
FUNC(t_calls)
	IJ(sub $0x98, %rsp)
	I(call c_retaddr)
1:	I(lea 1b(%rip), %rcx)		/* the callee saw this return address */
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(lea c_retaddr(%rip), %rdx)
	I(call *%rdx)
2:	I(lea 2b(%rip), %rcx)
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(call *c_fnptr(%rip))
3:	I(lea 3b(%rip), %rcx)
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(mov %rsp, %rbx)
	I(pushq $7)
	I(pushq $35)
	I(call c_ret16)
	I(cmp %rsp, %rbx)		/* ret $16 dropped the two arguments */
	FAILIF(ne)
	I(cmp $42, %rax)
	FAILIF(ne)
	I(lea 4f(%rip), %rax)
	I(jmp *%rax)
	I0(jmp suite_fail)
4:	I(jmp *c_jmpptr(%rip))
	I0(jmp suite_fail)
.Lc_jtarget:
	I(add $0x98, %rsp)
	I(jmp c_tail_magic)		/* tail call into another function */
ENDF(t_calls)
	.p2align 4
FUNC(c_retaddr)
	IN(3, mov (%rsp), %rax)
	IN(3, ret)
ENDF(c_retaddr)
	.p2align 4
FUNC(c_ret16)
	I(mov 8(%rsp), %rax)
	I(add 16(%rsp), %rax)
	I(ret $16)
ENDF(c_ret16)
	.p2align 4
FUNC(c_tail_magic)
	IJ(mov $MAGIC, %eax)
	I(ret)
ENDF(c_tail_magic)
GROUP_END(t_calls)

/* ---- a call as a function's first instruction ------------------------ */
GROUP_BEGIN(t_callfirst)
FUNC(t_callfirst)
	I(call cf_retaddr)
1:	I(lea 1b(%rip), %rcx)
	I(cmp %rcx, %rax)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_callfirst)
	.p2align 4
FUNC(cf_retaddr)
	I(mov (%rsp), %rax)
	I(ret)
ENDF(cf_retaddr)
GROUP_END(t_callfirst)

/* ---- a hand-written jump table ---------------------------------------- */
GROUP_BEGIN(t_switch)
FUNC(t_switch)
	IJ(mov $0, %r8d)
	I(xor %eax, %eax)
1:	IN(4, lea sw_table(%rip), %rdx)
	IN(4, movslq (%rdx,%r8,4), %rcx)
	IN(4, add %rdx, %rcx)
	IN(4, jmp *%rcx)
.Lsw0:	I(add $1, %eax)
	I(jmp 2f)
.Lsw1:	I(add $10, %eax)
	I(jmp 2f)
.Lsw2:	I(add $100, %eax)
	I(jmp 2f)
.Lsw3:	I(add $1000, %eax)		/* falls through */
2:	IN(4, inc %r8d)
	IN(4, cmp $4, %r8d)
	IN(4, jb 1b)
	I(cmp $1111, %eax)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_switch)
GROUP_END(t_switch)

/* ---- leaf function using the red zone ---------------------------------- */
GROUP_BEGIN(t_redzone)
FUNC(t_redzone)
	IJ(movabs $0x0101010101010101, %rax)
	.irp off, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128
	I(mov %rax, -\off(%rsp))
	I(lea 1(%rax), %rax)
	.endr
	I(nop)
	I(.byte 0x0f, 0x1f, 0x44, 0x00, 0x00)
	I(xor %ecx, %ecx)
	.irp off, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128
	I(add -\off(%rsp), %rcx)
	.endr
	I(movabs $0x1010101010101088, %rdx)	/* 16 * base + 0 + 1 + ... + 15 */
	I(cmp %rdx, %rcx)
	FAILIF(ne)
	I(movabs $0x0101010101010110, %rdx)
	I(cmp -128(%rsp), %rdx)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_redzone)
GROUP_END(t_redzone)

/* ---- rsp-relative operands ------------------------------------------- */
GROUP_BEGIN(t_rsprel)
FUNC(t_rsprel)
	IJ(sub $0x88, %rsp)
	I(movq $3, (%rsp))
	I(movq $4, 8(%rsp))
	I(mov (%rsp), %rax)
	I(add 8(%rsp), %rax)
	I(lea 0x10(%rsp), %rcx)
	I(mov %rax, (%rcx))
	I(mov $2, %edx)
	I(mov (%rsp,%rdx,8), %rsi)
	I(cmp $7, %rsi)
	FAILIF(ne)
	I(imul $6, 0x10(%rsp), %rdi)
	I(cmp $42, %rdi)
	FAILIF(ne)
	I(xchg %rdi, 0x80(%rsp))
	I(mov 0x80(%rsp), %r8)
	I(cmp $42, %r8)
	FAILIF(ne)
	I(add $0x88, %rsp)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_rsprel)
GROUP_END(t_rsprel)

/* ---- a loop: sites hit many times ------------------------------------ */
GROUP_BEGIN(t_loop)
FUNC(t_loop)
	IJ(mov $100, %ecx)
	I(xor %eax, %eax)
1:	IN(100, add %rcx, %rax)
	IN(100, dec %ecx)
	IN(100, jnz 1b)
	I(cmp $5050, %eax)
	FAILIF(ne)
	I(mov $4, %esi)
	I(xor %edx, %edx)
2:	IN(4, mov $3, %edi)
3:	IN(12, inc %edx)
	IN(12, dec %edi)
	IN(12, jnz 3b)
	IN(4, dec %esi)
	IN(4, jnz 2b)
	I(cmp $12, %edx)
	FAILIF(ne)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_loop)
GROUP_END(t_loop)

/* ---- every nop form, endbr64, pause ---------------------------------- */
GROUP_BEGIN(t_nops)
FUNC(t_nops)
	IJ(.byte 0x0f, 0x1f, 0x44, 0x00, 0x00)		/* nopl 0(%rax,%rax) */
	I(nop)
	I(.byte 0x66, 0x90)				/* xchg %ax,%ax */
	I(.byte 0x0f, 0x1f, 0x00)			/* nopl (%rax) */
	I(.byte 0x0f, 0x1f, 0x40, 0x00)			/* nopl 0(%rax) */
	I(.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00)	/* nopw 0(%rax,%rax) */
	I(.byte 0x0f, 0x1f, 0x80, 0, 0, 0, 0)		/* nopl 0L(%rax) */
	I(.byte 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0)	/* nopl 0L(%rax,%rax) */
	I(.byte 0x66, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0)	/* nopw 0L(%rax,%rax) */
	I(.byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0) /* cs nopw */
	I(endbr64)
	I(pause)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_nops)
GROUP_END(t_nops)

/* ---- flags live across probe sites ----------------------------------- */
GROUP_BEGIN(t_flags)
FUNC(t_flags)
	IJ(mov $5, %eax)
	I(cmp $5, %eax)			/* ZF=1 CF=0 */
	I(mov %eax, %edx)
	I(lea 1(%rdx), %rdx)
	FAILIF(ne)
	I(cmp $6, %eax)			/* CF=1 SF=1 */
	I(nop)
	FAILIF(ae)
	FAILIF(ns)
	I(stc)
	I(mov $0, %edx)
	I(adc $0, %edx)
	I(cmp $1, %edx)
	FAILIF(ne)
	I(clc)
	I(nop)
	I(mov $0, %edx)
	I(adc $0, %edx)
	I(test %edx, %edx)
	FAILIF(nz)
	I(cmp $5, %eax)			/* ZF=1 PF=1, others 0 */
	I(nop)
	I(lahf)
	I(cmp $0x46, %ah)
	FAILIF(ne)
	I(mov $0x10, %ecx)
	I(cmp $1, %ecx)			/* AF=1: borrow out of bit 3 */
	I(.byte 0x0f, 0x1f, 0x44, 0x00, 0x00)
	I(lahf)
	I(test $0x10, %ah)
	FAILIF(z)
	I(movabs $0x7fffffffffffffff, %rcx)
	I(cmp $-1, %rcx)		/* OF=1 */
	I(mov %rcx, %rdx)
	FAILIF(no)
	I(seto %dl)
	I(cmp $1, %dl)
	FAILIF(ne)
	I(mov $5, %eax)			/* lahf wrote %ah */
	I(cmp $6, %eax)
	I(mov $0, %esi)
	I(cmovb %eax, %esi)
	I(cmp $5, %esi)
	FAILIF(ne)
	I(std)				/* DF=1 across two sites */
	I(nop)
	I(.byte 0x0f, 0x1f, 0x44, 0x00, 0x00)
	I(pushf)
	I(cld)
	I(pop %rcx)
	I(test $0x400, %ecx)
	FAILIF(z)
	I(mov $MAGIC, %eax)
	I(ret)
ENDF(t_flags)
GROUP_END(t_flags)

/* ---- one-byte functions followed by padding (nops, then int3) -------- */
GROUP_BEGIN(t_tiny)
FUNC(t_tiny)
	IJ(mov $MAGIC, %eax)
	I(call tiny_ret)
	I(call tiny_ret_cc)
	I(cmp $MAGIC, %eax)
	FAILIF(ne)
	I(ret)
ENDF(t_tiny)
	.p2align 4
FUNC(tiny_ret)
	I(ret)
ENDF(tiny_ret)
	.p2align 4
FUNC(tiny_ret_cc)
	I(ret)
ENDF(tiny_ret_cc)
	.p2align 4, 0xcc
GROUP_END(t_tiny)

	NOTE_GNU_STACK

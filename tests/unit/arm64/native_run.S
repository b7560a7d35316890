/* SPDX-License-Identifier: MIT */
/*
 * Runs A64 code with a chosen register file, on arm64 itself or under
 * qemu-aarch64 (native_test.c).
 *
 *   void np_a64_run(const struct np_regs *in, uint64_t code);
 *
 * loads x0..x30, sp and NZCV from 'in' (x16 is used to branch: it holds
 * 'code'), and jumps to 'code'. The code under test ends by branching to
 * one of the landing stubs native_test.c writes, `movz x16, #k; b
 * np_a64_exit`, which stores the whole register file, with the landing
 * number k in x16, into np_a64_out and returns to the caller of
 * np_a64_run, and q0..q7 (zeroed at the start) into np_a64_out_q. np_regs layout: gpr[32] at 0 (sp at 248), pc at 256, flags
 * at 264 (arch.h).
 */
	.text
	.p2align 2
	.global np_a64_run
	.type np_a64_run, %function
np_a64_run:
	mov	x16, x1
	adrp	x9, host_save
	add	x9, x9, :lo12:host_save
	stp	x19, x20, [x9, #0]
	stp	x21, x22, [x9, #16]
	stp	x23, x24, [x9, #32]
	stp	x25, x26, [x9, #48]
	stp	x27, x28, [x9, #64]
	stp	x29, x30, [x9, #80]
	mov	x10, sp
	str	x10, [x9, #96]
	stp	d8, d9, [x9, #112]
	stp	d10, d11, [x9, #128]
	stp	d12, d13, [x9, #144]
	stp	d14, d15, [x9, #160]
	movi	v0.16b, #0
	movi	v1.16b, #0
	movi	v2.16b, #0
	movi	v3.16b, #0
	movi	v4.16b, #0
	movi	v5.16b, #0
	movi	v6.16b, #0
	movi	v7.16b, #0
	ldr	x10, [x0, #264]
	msr	nzcv, x10
	ldr	x10, [x0, #248]
	mov	sp, x10
	ldp	x2, x3, [x0, #16]
	ldp	x4, x5, [x0, #32]
	ldp	x6, x7, [x0, #48]
	ldp	x8, x9, [x0, #64]
	ldp	x10, x11, [x0, #80]
	ldp	x12, x13, [x0, #96]
	ldp	x14, x15, [x0, #112]
	ldr	x17, [x0, #136]
	ldp	x18, x19, [x0, #144]
	ldp	x20, x21, [x0, #160]
	ldp	x22, x23, [x0, #176]
	ldp	x24, x25, [x0, #192]
	ldp	x26, x27, [x0, #208]
	ldp	x28, x29, [x0, #224]
	ldr	x30, [x0, #240]
	ldp	x0, x1, [x0]
	br	x16
	.size np_a64_run, . - np_a64_run

	.global np_a64_exit
	.type np_a64_exit, %function
np_a64_exit:
	str	x17, [sp, #-16]!
	adrp	x17, np_a64_out
	add	x17, x17, :lo12:np_a64_out
	stp	x0, x1, [x17, #0]
	stp	x2, x3, [x17, #16]
	stp	x4, x5, [x17, #32]
	stp	x6, x7, [x17, #48]
	stp	x8, x9, [x17, #64]
	stp	x10, x11, [x17, #80]
	stp	x12, x13, [x17, #96]
	stp	x14, x15, [x17, #112]
	str	x16, [x17, #128]
	stp	x18, x19, [x17, #144]
	stp	x20, x21, [x17, #160]
	stp	x22, x23, [x17, #176]
	stp	x24, x25, [x17, #192]
	stp	x26, x27, [x17, #208]
	stp	x28, x29, [x17, #224]
	str	x30, [x17, #240]
	mrs	x0, nzcv
	str	x0, [x17, #264]
	ldr	x0, [sp], #16
	str	x0, [x17, #136]
	mov	x0, sp
	str	x0, [x17, #248]
	adrp	x0, np_a64_out_q
	add	x0, x0, :lo12:np_a64_out_q
	stp	q0, q1, [x0, #0]
	stp	q2, q3, [x0, #32]
	stp	q4, q5, [x0, #64]
	stp	q6, q7, [x0, #96]
	adrp	x9, host_save
	add	x9, x9, :lo12:host_save
	ldp	x19, x20, [x9, #0]
	ldp	x21, x22, [x9, #16]
	ldp	x23, x24, [x9, #32]
	ldp	x25, x26, [x9, #48]
	ldp	x27, x28, [x9, #64]
	ldp	x29, x30, [x9, #80]
	ldr	x10, [x9, #96]
	mov	sp, x10
	ldp	d8, d9, [x9, #112]
	ldp	d10, d11, [x9, #128]
	ldp	d12, d13, [x9, #144]
	ldp	d14, d15, [x9, #160]
	ret
	.size np_a64_exit, . - np_a64_exit

	.bss
	.p2align 4
host_save:
	.skip	176
	.global np_a64_out
np_a64_out:
	.skip	272
	.global np_a64_out_q
np_a64_out_q:
	.skip	128
	.section .note.GNU-stack,"",%progbits

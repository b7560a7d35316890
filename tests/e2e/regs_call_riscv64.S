/* SPDX-License-Identifier: MIT */
/*
 * void rc_call(const struct rc_state *in, struct rc_state *out,
 *              void (*leaf)(void), unsigned mode);
 *
 * riscv64 twin of regs_call_x86_64.S: t0-t6, s0-s11, a0-a7, f0-f31 and
 * fcsr hold values from `in` across the call to `leaf` (ra carries the
 * call; zero, sp, gp, tp stay the program's), then everything is dumped
 * to `out` (layout in regs_call.h). `mode` is for x86-64 only.
 *
 * The leaves write a0 alone: rc_leaf returns RC_RESULT in three 4-byte
 * instructions, the second of them rc_leaf_mid; rc_leaf_store stores
 * rc_watched's own address in it (for watchpoints) before doing the same.
 */
#include "asm_riscv64.h"
#include "regs_call.h"

/* rc_call's frame: out, leaf, the caller's fcsr, ra, s0-s11, fs0-fs11 */
#define F_OUT 0
#define F_LEAF 8
#define F_FCSR 16
#define F_RA 24
#define F_S(i) (32 + 8 * (i))
#define F_FS(i) (128 + 8 * (i))
#define FRAME 224
#define DUMP 256

/* s0-s11 are x8, x9, x18-x27; fs0-fs11 are f8, f9, f18-f27 */
.macro CALLEE_SAVED op, fop
	\op ra, F_RA(sp)
	\op x8, F_S(0)(sp)
	\op x9, F_S(1)(sp)
	.irp n, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27
	\op x\n, F_S(\n - 16)(sp)
	.endr
	\fop f8, F_FS(0)(sp)
	\fop f9, F_FS(1)(sp)
	.irp n, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27
	\fop f\n, F_FS(\n - 16)(sp)
	.endr
.endm

	.text
	.p2align 3
FUNC(rc_call)
	addi sp, sp, -FRAME
	sd a1, F_OUT(sp)
	sd a2, F_LEAF(sp)
	frcsr t0
	sd t0, F_FCSR(sp)
	CALLEE_SAVED sd, fsd
	addi t0, a0, RC_VEC
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	fld f\n, 64 * \n(t0)
	.endr
	ld t0, RC_MISC(a0)
	fscsr t0
	.irp n, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	ld x\n, RC_GPR + 8 * \n(a0)
	.endr
	ld a0, RC_GPR + 8 * 10(a0)
	ld ra, F_LEAF(sp)
	jalr ra
	addi sp, sp, -DUMP		/* x<n> at 8n(sp) */
	.irp n, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	sd x\n, 8 * \n(sp)
	.endr
	sd zero, 0(sp)
	addi t1, sp, DUMP
	sd t1, 16(sp)
	ld t0, DUMP + F_OUT(sp)
	frcsr t1
	sd t1, RC_MISC(t0)
	addi t1, t0, RC_VEC
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	fsd f\n, 64 * \n(t1)
	.endr
	mv t1, sp
	addi t2, sp, DUMP
1:	ld t3, 0(t1)
	sd t3, RC_GPR(t0)
	addi t1, t1, 8
	addi t0, t0, 8
	bne t1, t2, 1b
	addi sp, sp, DUMP
	ld t0, F_FCSR(sp)
	fscsr t0			/* the caller's rounding mode and flags */
	CALLEE_SAVED ld, fld
	addi sp, sp, FRAME
	ret
ENDF(rc_call)

	.p2align 3
FUNC(rc_leaf)
	.option push
	.option norvc			/* 4-byte sites */
	lui a0, %hi(RC_RESULT - 1)
	.globl rc_leaf_mid
rc_leaf_mid:
	addiw a0, a0, %lo(RC_RESULT - 1)
	addi a0, a0, 1
	.option pop
	ret
ENDF(rc_leaf)

	.p2align 3
FUNC(rc_leaf_store)
	lla a0, rc_watched
	sd a0, 0(a0)
	li a0, RC_RESULT
	ret
ENDF(rc_leaf_store)

	.bss
	.balign 8
	.globl rc_watched
rc_watched:
	.quad 0

	NOTE_GNU_STACK

/* SPDX-License-Identifier: MIT */
/*
 * Functions that return 0x600dc0de only if every instruction in them ran
 * correctly, probed at every instruction by probe_suite.c (as the
 * kernel's arch/riscv/kernel/tests/kprobes/test-kprobes-asm.S). Each
 * tests its instructions' results against constants and jumps to 'fail'
 * (return 0) on any mismatch. Sites a correct run never reaches are
 * listed by NEVER in section rv_never, so the driver knows to expect no
 * hit there; sites a loop runs N times are listed by TIMES N in rv_times;
 * every other site runs exactly once per call.
 */
#define MAGIC 0x600dc0de

	.macro NEVER
	.pushsection rv_never, "a"
	.dc.a .Lnever\@
	.popsection
.Lnever\@:
	.endm

	.macro TIMES n
	.pushsection rv_times, "a"
	.dc.a .Ltimes\@, \n
	.popsection
.Ltimes\@:
	.endm

	.macro FUNC name
	.globl \name
	.type \name, @function
	.p2align 2
\name:
	.endm

	.macro ENDFUNC name
	.size \name, .-\name
	.globl \name\()_end
\name\()_end:
	.endm

	.section .rodata
	.p2align 3
rv_data:
	.dword 0x1122334455667788
	.dword 42

	.text
	.option rvc

/* Arithmetic, compressed and not, and loads/stores on the stack. */
FUNC rv_suite_alu
	addi	sp, sp, -32
	sd	ra, 24(sp)
	c.li	a0, 5
	c.addi	a0, 3
	li	t1, 8
	bne	a0, t1, 9f
	.option norvc
	slli	a1, a0, 4
	addiw	a1, a1, -1
	.option rvc
	sd	a1, 8(sp)
	c.ldsp	a2, 8(sp)
	li	t1, 127
	bne	a2, t1, 9f
	c.mv	a3, a2
	c.add	a3, a0
	c.sub	a3, a0
	bne	a3, a2, 9f
	lui	a4, 0x12
	srli	a4, a4, 12
	li	t1, 0x12
	bne	a4, t1, 9f
	li	a0, MAGIC
	ld	ra, 24(sp)
	addi	sp, sp, 32
	ret
9:	NEVER
	li	a0, 0
	NEVER
	ld	ra, 24(sp)
	NEVER
	addi	sp, sp, 32
	NEVER
	ret
ENDFUNC rv_suite_alu

/* pc-relative data (auipc+ld, auipc+addi), in both lengths around it. */
FUNC rv_suite_pcrel
	.option norelax
1:	auipc	a5, %pcrel_hi(rv_data)
	ld	a0, %pcrel_lo(1b)(a5)
2:	auipc	a4, %pcrel_hi(rv_data)
	addi	a4, a4, %pcrel_lo(2b)
	c.ld	a1, 8(a4)
	li	t1, 42
	bne	a1, t1, 9f
	li	t2, 0x55667788
	sext.w	a2, a0
	bne	a2, t2, 9f
	li	a0, MAGIC
	ret
9:	NEVER
	li	a0, 0
	NEVER
	ret
	.option relax
ENDFUNC rv_suite_pcrel

/* Calls: jal, jalr, c.jalr, and the returns they come back through. */
FUNC rv_suite_calls
	addi	sp, sp, -16
	sd	ra, 8(sp)
	li	a0, 1
	call	rv_helper_add2          /* auipc ra + jalr, or jal when relaxed */
	jal	rv_helper_add2
	la	a5, rv_helper_add2
	jalr	a5
	c.jalr	a5
	li	t1, 9
	bne	a0, t1, 9f
	li	a0, MAGIC
	ld	ra, 8(sp)
	addi	sp, sp, 16
	ret
9:	NEVER
	li	a0, 0
	NEVER
	ld	ra, 8(sp)
	NEVER
	addi	sp, sp, 16
	NEVER
	ret
ENDFUNC rv_suite_calls

FUNC rv_helper_add2
	addi	a0, a0, 2
	ret
ENDFUNC rv_helper_add2

/* Every branch, taken and not, in both lengths, and c.j / j forward. */
FUNC rv_suite_branches
	li	a0, 3
	li	a1, -1
	beq	a0, a0, 1f
	NEVER
	j	9f
1:	bne	a0, a0, 9f
	blt	a1, a0, 2f
	NEVER
	j	9f
2:	bltu	a1, a0, 9f
	bge	a0, a1, 3f
	NEVER
	j	9f
3:	bgeu	a0, a1, 9f
	c.beqz	a0, 9f
	c.bnez	a0, 4f
	NEVER
	j	9f
4:	c.j	5f
	NEVER
	j	9f
5:	li	a0, MAGIC
	ret
9:	NEVER
	li	a0, 0
	NEVER
	ret
ENDFUNC rv_suite_branches

/* Atomics, fences, the M and D extensions and a loop: lr and sc (and what
 * lies between) are refused, the rest runs out of line or is simulated. */
FUNC rv_suite_misc
	addi	sp, sp, -16
	sd	zero, 0(sp)
	li	a1, 7
1:	lr.d	t0, (sp)
	add	t0, t0, a1
	sc.d	t1, t0, (sp)
	bnez	t1, 1b
	ld	a2, 0(sp)
	bne	a2, a1, 9f
	fence	rw, rw
	li	a3, 2
	amoadd.d a4, a3, (sp)
	ld	a4, 0(sp)
	li	t1, 9
	bne	a4, t1, 9f
	mul	a5, a4, a3
	li	t1, 18
	bne	a5, t1, 9f
	fcvt.d.l fa0, a5
	fadd.d	fa0, fa0, fa0
	fcvt.l.d a6, fa0, rtz
	li	t1, 36
	bne	a6, t1, 9f
	li	a0, 0
	li	a7, 3
2:	TIMES 3
	addi	a0, a0, 5
	TIMES 3
	addi	a7, a7, -1
	TIMES 3
	bnez	a7, 2b
	li	t1, 15
	bne	a0, t1, 9f
	li	a0, MAGIC
	addi	sp, sp, 16
	ret
9:	NEVER
	li	a0, 0
	NEVER
	addi	sp, sp, 16
	NEVER
	ret
ENDFUNC rv_suite_misc

/* Every register is live from the second instruction on: the function
 * writes nothing but a0, so under -fipa-ra a caller may keep a value in
 * any other caller-saved register across a call to it (t1, t3..t6
 * included, which the convention alone would call free at an entry), and
 * a0 is read by each addi until the result is made. Beyond jal's reach
 * (long) no jump fits there and no register is free after an instruction
 * for its out-of-line copy to jump back with: the copy traps back
 * (region.c). */
FUNC rv_suite_busy
	.option norvc
	li	a0, 1
	addi	a0, a0, 2
	addi	a0, a0, 3
	addi	a0, a0, 4
	addi	a0, a0, 5
	addi	a0, a0, -15
	bnez	a0, 9f
	li	a0, MAGIC
	ret
9:	NEVER
	li	a0, 0
	NEVER
	ret
	.option rvc
ENDFUNC rv_suite_busy

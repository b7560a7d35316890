/* SPDX-License-Identifier: MIT */
/*
 * void regs_run(struct regs_out *out, uint64_t nzcv, const void *vec, uint64_t fpcr);
 * void regs_call(struct regs_out *out, uint64_t nzcv, const void *vec, uint64_t fpcr);
 *
 * Load a known value into x0-x30, NZCV, FPCR, FPSR and q0-q31 (vec is
 * 32 x 16 bytes), pass probe sites, then dump everything to out (layout in
 * regs_arm64.h). regs_run passes three sites in its middle: a `nop`, an
 * `and x9, x9, x9`, and a `nop` reached with sp 16 bytes lower. regs_call
 * calls regs_leaf, whose first instruction is the fourth site: a function
 * entry, where the args-only save applies; x30 is then the return address
 * regs_call_ret. The sites are published in regs_sites[]: a, b, c, entry.
 */
#include "asm_arm64.h"
#include "regs_arm64.h"

/* pattern of x\n into x\n, flags untouched */
.macro PATTERNS
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
	ldr x\n, =(PAT_BASE + \n * PAT_STEP)
	.endr
.endm

/* Save the callee-saved registers and out; load the state. */
.macro PROLOGUE
	stp x29, x30, [sp, #-96]!
	stp x19, x20, [sp, #16]
	stp x21, x22, [sp, #32]
	stp x23, x24, [sp, #48]
	stp x25, x26, [sp, #64]
	stp x27, x28, [sp, #80]
	stp d8, d9, [sp, #-64]!
	stp d10, d11, [sp, #16]
	stp d12, d13, [sp, #32]
	stp d14, d15, [sp, #48]
	stp x0, xzr, [sp, #-16]!	/* out; sp is now the site sp */
	ld1 {v0.16b, v1.16b, v2.16b, v3.16b}, [x2], #64
	ld1 {v4.16b, v5.16b, v6.16b, v7.16b}, [x2], #64
	ld1 {v8.16b, v9.16b, v10.16b, v11.16b}, [x2], #64
	ld1 {v12.16b, v13.16b, v14.16b, v15.16b}, [x2], #64
	ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [x2], #64
	ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [x2], #64
	ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [x2], #64
	ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [x2], #64
	msr fpcr, x3
	ldr x3, =FPSR_PATTERN
	msr fpsr, x3
	msr nzcv, x1
	PATTERNS
.endm

/* Dump below the site sp, then restore and return. */
.macro DUMP_AND_RETURN
	stp x0, x1, [sp, #-256]!
	stp x2, x3, [sp, #16]
	stp x4, x5, [sp, #32]
	stp x6, x7, [sp, #48]
	stp x8, x9, [sp, #64]
	stp x10, x11, [sp, #80]
	stp x12, x13, [sp, #96]
	stp x14, x15, [sp, #112]
	stp x16, x17, [sp, #128]
	stp x18, x19, [sp, #144]
	stp x20, x21, [sp, #160]
	stp x22, x23, [sp, #176]
	stp x24, x25, [sp, #192]
	stp x26, x27, [sp, #208]
	stp x28, x29, [sp, #224]
	str x30, [sp, #240]
	mrs x1, nzcv
	mrs x2, fpsr
	mrs x3, fpcr
	ldr x0, [sp, #256]		/* out */
	str x1, [x0, #OUT_NZCV]
	str x2, [x0, #OUT_FPSR]
	str x3, [x0, #OUT_FPCR]
	add x1, sp, #256
	str x1, [x0, #OUT_SP]
	mov x1, #0
1:	ldr x2, [sp, x1]
	str x2, [x0, x1]
	add x1, x1, #8
	cmp x1, #248
	b.ne 1b
	add x0, x0, #OUT_VEC
	st1 {v0.16b, v1.16b, v2.16b, v3.16b}, [x0], #64
	st1 {v4.16b, v5.16b, v6.16b, v7.16b}, [x0], #64
	st1 {v8.16b, v9.16b, v10.16b, v11.16b}, [x0], #64
	st1 {v12.16b, v13.16b, v14.16b, v15.16b}, [x0], #64
	st1 {v16.16b, v17.16b, v18.16b, v19.16b}, [x0], #64
	st1 {v20.16b, v21.16b, v22.16b, v23.16b}, [x0], #64
	st1 {v24.16b, v25.16b, v26.16b, v27.16b}, [x0], #64
	st1 {v28.16b, v29.16b, v30.16b, v31.16b}, [x0], #64
	mov x0, #0
	msr fpcr, x0			/* the caller's rounding mode */
	add sp, sp, #256 + 16
	ldp d14, d15, [sp, #48]
	ldp d12, d13, [sp, #32]
	ldp d10, d11, [sp, #16]
	ldp d8, d9, [sp], #64
	ldp x27, x28, [sp, #80]
	ldp x25, x26, [sp, #64]
	ldp x23, x24, [sp, #48]
	ldp x21, x22, [sp, #32]
	ldp x19, x20, [sp, #16]
	ldp x29, x30, [sp], #96
	ret
.endm

	.text
	.p2align 4
FUNC(regs_run)
	PROLOGUE
.Lsite_a:
	nop
.Lsite_b:
	and x9, x9, x9
	sub sp, sp, #16
.Lsite_c:
	nop
	add sp, sp, #16
	DUMP_AND_RETURN
	.ltorg
ENDF(regs_run)

	.p2align 4
FUNC(regs_call)
	PROLOGUE
	bl regs_leaf
	.globl regs_call_ret
regs_call_ret:
	DUMP_AND_RETURN
	.ltorg
ENDF(regs_call)

/* Changes nothing: the probe at its first word is the test. */
	.p2align 4
FUNC(regs_leaf)
.Lsite_entry:
	nop
	ret
ENDF(regs_leaf)

	.section .data.rel.ro, "aw"
	.balign 8
	.globl regs_sites
regs_sites:
	.quad .Lsite_a, .Lsite_b, .Lsite_c, .Lsite_entry

	NOTE_GNU_STACK

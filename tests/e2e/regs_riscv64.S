/* SPDX-License-Identifier: MIT */
/*
 * void regs_run(struct regs_out *out, uint64_t fcsr, const uint64_t *fpr);
 * void regs_call(struct regs_out *out, uint64_t fcsr, const uint64_t *fpr);
 *
 * Load a known value into ra and t0..t6, s0..s11, a0..a7 (x1, x5..x31),
 * f0..f31 (fpr: 32 doublewords) and fcsr (rounding mode and flags), pass
 * probe sites, then dump everything to out (layout in regs_riscv64.h),
 * gp and tp included, which are left as the caller had them. regs_run
 * passes four sites in its middle: a `nop`, an `and s1, s1, s1`, the
 * `addi sp, sp, -16` that changes sp, and a `nop` reached with sp 16
 * bytes lower. regs_call calls regs_leaf, whose first instruction is the
 * fifth site, a function entry; ra is then the return address
 * regs_call_ret. The sites are published in regs_sites[]: a, b, c, d,
 * entry. Each is a 4-byte instruction (a handler may skip it by moving pc
 * 4 bytes on).
 */
#include "asm_riscv64.h"
#include "regs_riscv64.h"

/* the function's frame: out, the caller's fcsr, ra, s0-s11, fs0-fs11 */
#define F_OUT 0
#define F_FCSR 8
#define F_RA 16
#define F_S(i) (24 + 8 * (i))
#define F_FS(i) (120 + 8 * (i))

.macro PATTERNS
	.irp n, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	li x\n, (PAT_BASE + \n * PAT_STEP)
	.endr
.endm

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

/* Save the callee-saved state and out; load the state. */
.macro PROLOGUE
	addi sp, sp, -SAVE_FRAME
	sd a0, F_OUT(sp)		/* sp is now the site sp */
	frcsr t0
	sd t0, F_FCSR(sp)
	CALLEE_SAVED sd, fsd
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	fld f\n, 8 * \n(a2)
	.endr
	fscsr a1
	PATTERNS
.endm

/* Dump below the site sp, then restore and return. */
.macro DUMP_AND_RETURN
	addi sp, sp, -DUMP_FRAME
	.irp n, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	sd x\n, 8 * \n(sp)
	.endr
	sd zero, 0(sp)
	addi t1, sp, DUMP_FRAME
	sd t1, 16(sp)			/* x2: the site sp */
	ld t0, (DUMP_FRAME + F_OUT)(sp)
	frcsr t1
	sd t1, OUT_FCSR(t0)
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	fsd f\n, OUT_FPR + 8 * \n(t0)
	.endr
	mv t1, sp
	addi t2, sp, DUMP_FRAME
1:	ld t3, 0(t1)
	sd t3, OUT_GPR(t0)
	addi t1, t1, 8
	addi t0, t0, 8
	bne t1, t2, 1b
	addi sp, sp, DUMP_FRAME
	ld t0, F_FCSR(sp)
	fscsr t0			/* the caller's rounding mode and flags */
	CALLEE_SAVED ld, fld
	addi sp, sp, SAVE_FRAME
	ret
.endm

	.text
	.p2align 3
FUNC(regs_run)
	PROLOGUE
	.option push
	.option norvc			/* 4-byte sites */
.Lsite_a:
	nop
.Lsite_b:
	and s1, s1, s1
.Lsite_c:
	addi sp, sp, -16
.Lsite_d:
	nop
	addi sp, sp, 16
	.option pop
	DUMP_AND_RETURN
ENDF(regs_run)

	.p2align 3
FUNC(regs_call)
	PROLOGUE
	jal ra, regs_leaf
	.globl regs_call_ret
regs_call_ret:
	DUMP_AND_RETURN
ENDF(regs_call)

/* Changes nothing: the probe at its first instruction is the test. */
	.p2align 3
FUNC(regs_leaf)
	.option push
	.option norvc
.Lsite_entry:
	nop
	.option pop
	ret
ENDF(regs_leaf)

	.section .data.rel.ro, "aw"
	.balign 8
	.globl regs_sites
regs_sites:
	.quad .Lsite_a, .Lsite_b, .Lsite_c, .Lsite_d, .Lsite_entry

	NOTE_GNU_STACK

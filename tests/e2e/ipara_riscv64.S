/* SPDX-License-Identifier: MIT */
/*
 * Targets of ipara.c: a caller that keeps a value in a caller-saved
 * register across a direct call, as GCC's -fipa-ra does on x86-64 and
 * arm64 and LLVM's -enable-ipra on riscv64 (GCC 12 does not implement it
 * for riscv64, so the code is written out here as such a compiler emits
 * it). ipa_leaf writes only a0 and t4, so its caller may keep t1 live
 * across `jal ipa_leaf`; both have unwind info (FDEs), as compiled
 * functions do, so the engine sees the call (src/arch/regsum.c).
 */
#include "asm_riscv64.h"

	.text
	.p2align 2
/* uint64_t ipa_caller(uint64_t x): ipa_leaf(x) + x + 1, x + 1 kept in t1 */
FUNC(ipa_caller)
	.cfi_startproc
	addi sp, sp, -16
	.cfi_def_cfa_offset 16
	sd ra, 8(sp)
	.cfi_offset ra, -8
	addi t1, a0, 1          /* live across the call: ipa_leaf keeps it */
	jal ipa_leaf
	add a0, a0, t1
	ld ra, 8(sp)
	.cfi_restore ra
	addi sp, sp, 16
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
ENDF(ipa_caller)

	.p2align 2
/* uint64_t ipa_leaf(uint64_t x): 3 * x + 7, writing a0 and t4 only */
FUNC(ipa_leaf)
	.cfi_startproc
	slli t4, a0, 1
	add a0, a0, t4
	addi a0, a0, 7
	ret
	.cfi_endproc
ENDF(ipa_leaf)

	.p2align 2
/* uint64_t ipa_orphan(uint64_t x, uint64_t y): x + y, writing only a0.
 * Called through a pointer only: the convention alone reaches it, so at
 * its entry t1, t3..t6 are free again, which its own bytes cannot show
 * (the module's summary does: src/arch/regsum.c). */
FUNC(ipa_orphan)
	.cfi_startproc
	.option push
	.option norvc           /* room for the 8-byte long form */
	add a0, a0, a1
	addi a0, a0, 1
	addi a0, a0, -1
	ret
	.option pop
	.cfi_endproc
ENDF(ipa_orphan)

	NOTE_GNU_STACK

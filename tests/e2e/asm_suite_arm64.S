/* SPDX-License-Identifier: MIT */
/*
 * arm64 end-to-end suite, the counterpart of asm_suite_x86_64.S: each
 * group's entry function returns MAGIC only if every instruction ran
 * correctly; every instruction the relocator or the simulator could get
 * wrong is labelled with I() (asm_arm64.h), with how often one call of its
 * group runs it.
 *
 * Groups are called through suite_call(fn), which saves the callee-saved
 * registers (x19-x28, d8-d15); a failed check branches to a stub that puts
 * 0xbad0000 + source line in w0 and leaves through suite_fail, which
 * restores sp. x16 and x17 are the checks' scratch registers.
 *
 * Numeric labels: 9 is I()'s, 7 is FAILIF()'s; the code uses the others.
 */
#include "asm_arm64.h"

#define FAILIF(cc)                                                           \
	I(b.cc 7f);                                                          \
	.pushsection .text.np_fail, "ax";                                    \
	7: movz w0, #0xbad, lsl #16;                                         \
	movk w0, #__LINE__;                                                  \
	b suite_fail;                                                        \
	.popsection

/* reg must equal the 64-bit value (not probed: the checks are the test) */
#define EXPECT(reg, value)                                                   \
	ldr x17, =value;                                                     \
	cmp reg, x17;                                                        \
	FAILIF(ne)
#define EXPECT_REG(reg, want)                                                \
	cmp reg, want;                                                       \
	FAILIF(ne)
#define EXPECT_ADR(reg, label)                                               \
	adr x17, label;                                                      \
	EXPECT_REG(reg, x17)

	.data
	.balign 16
suite_saved_sp: .quad 0
rr_q:	.quad 0x1111222233334444
rr_w:	.quad 0
	.balign 8
fnptr:	.quad leaf_add3

	.section .rodata
	.balign 16
lit_q:	.quad 0x0badf00d12345678

	.text
/* uint64_t suite_call(uint64_t (*group)(void)) */
	.p2align 4
FUNC(suite_call)
	stp x29, x30, [sp, #-160]!
	mov x29, sp
	stp x19, x20, [sp, #16]
	stp x21, x22, [sp, #32]
	stp x23, x24, [sp, #48]
	stp x25, x26, [sp, #64]
	stp x27, x28, [sp, #80]
	stp d8, d9, [sp, #96]
	stp d10, d11, [sp, #112]
	stp d12, d13, [sp, #128]
	stp d14, d15, [sp, #144]
	adrp x1, suite_saved_sp
	mov x2, sp
	str x2, [x1, :lo12:suite_saved_sp]
	blr x0
.Lsuite_out:
	ldp x19, x20, [sp, #16]
	ldp x21, x22, [sp, #32]
	ldp x23, x24, [sp, #48]
	ldp x25, x26, [sp, #64]
	ldp x27, x28, [sp, #80]
	ldp d8, d9, [sp, #96]
	ldp d10, d11, [sp, #112]
	ldp d12, d13, [sp, #128]
	ldp d14, d15, [sp, #144]
	ldp x29, x30, [sp], #160
	ret
ENDF(suite_call)

FUNC(suite_fail)
	adrp x1, suite_saved_sp
	ldr x1, [x1, :lo12:suite_saved_sp]
	mov sp, x1
	b .Lsuite_out
ENDF(suite_fail)

/* ---- a C-like function: prologue, call, epilogue ---------------------- */
GROUP_BEGIN(t_prologue)
FUNC(t_prologue)
	IJ(stp x29, x30, [sp, #-32]!)
	I(mov x29, sp)
	I(str x19, [sp, #16])
	I(mov x19, #40)
	I(mov x0, x19)
	I(bl leaf_add3)
	I(add x19, x19, x0)		/* 40 + 43 */
	I(mov x0, #7)
	I(bl leaf_add3)
	I(add x19, x19, x0)		/* + 10 = 93 */
	EXPECT(x19, 93)
	I(ldr x19, [sp, #16])
	I(ldp x29, x30, [sp], #32)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_prologue)

FUNC(leaf_add3)
	IN(2, add x0, x0, #3)		/* t_calls calls it too: */
	IN(2, ret)			/* its probes are gone by then */
ENDF(leaf_add3)
	.ltorg
GROUP_END(t_prologue)

/* ---- conditional branches, taken and not, every condition --------------- */
GROUP_BEGIN(t_branches)
FUNC(t_branches)
	I(mov x9, #0)
	I(mov x1, #5)
	I(cmp x1, #5)
	I(b.eq 1f)
	b suite_fail
1:	I(b.ne 2f)			/* not taken */
	I(add x9, x9, #1)
2:	I(cmp x1, #3)			/* 5 vs 3: hi, hs, gt, ge, ne, pl */
	I(b.hi 1f)
	b suite_fail
1:	I(b.ls 2f)
	I(b.hs 1f)
	b suite_fail
2:	b suite_fail
1:	I(b.lo 2f)
	I(b.gt 1f)
	b suite_fail
2:	b suite_fail
1:	I(b.le 2f)
	I(b.ge 1f)
	b suite_fail
2:	b suite_fail
1:	I(b.lt 2f)
	I(b.pl 1f)
	b suite_fail
2:	b suite_fail
1:	I(b.mi 2f)
	I(mov x2, #0x7fffffffffffffff)
	I(adds x3, x2, #1)		/* signed overflow: V set, N set */
	I(b.vs 1f)
	b suite_fail
2:	b suite_fail
1:	I(b.vc 2f)
	I(b.mi 1f)
	b suite_fail
2:	b suite_fail
1:	I(b.al 1f)
	b suite_fail
1:	I(cbz x9, 2f)			/* x9 == 1: not taken */
	I(cbnz x9, 1f)
2:	b suite_fail
1:	I(mov w4, #0)
	I(cbz w4, 1f)
	b suite_fail
1:	I(cbnz w4, 2f)
	I(mov x5, #0x80)
	I(tbz x5, #7, 2f)
	I(tbnz x5, #7, 1f)
2:	b suite_fail
1:	I(tbnz x5, #6, 2f)
	I(tbz x5, #6, 1f)
	b suite_fail
2:	b suite_fail
1:	I(mov x6, #1)
	I(lsl x6, x6, #40)
	I(tbnz x6, #40, 1f)
	b suite_fail
1:	I(b 1f)
	b suite_fail
1:	EXPECT(x9, 1)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_branches)
	.ltorg
GROUP_END(t_branches)

/* ---- pc-relative data: adr, adrp, literal loads ------------------------ */
GROUP_BEGIN(t_pcrel)
FUNC(t_pcrel)
	I(adr x1, lit_here)
	I(ldr x2, [x1])
	EXPECT(x2, 0x5566778899aabbcc)
	I(adrp x3, rr_q)
	I(add x3, x3, :lo12:rr_q)
	I(ldr x4, [x3])
	EXPECT(x4, 0x1111222233334444)
	I(adrp x5, lit_q)
	I(ldr x6, [x5, :lo12:lit_q])
	EXPECT(x6, 0x0badf00d12345678)
	I(ldr x7, lit_here)
	EXPECT(x7, 0x5566778899aabbcc)
	I(ldr w8, lit_here)
	EXPECT(x8, 0x99aabbcc)
	I(ldrsw x9, lit_here)
	EXPECT(x9, 0xffffffff99aabbcc)
	I(ldr d0, lit_here)
	I(fmov x10, d0)
	EXPECT(x10, 0x5566778899aabbcc)
	I(ldr q1, lit_vec)
	I(mov x11, v1.d[1])
	EXPECT(x11, 0x2122232425262728)
	I(ldr s2, lit_here)
	I(fmov w12, s2)
	EXPECT(x12, 0x99aabbcc)
	I(prfm pldl1keep, lit_here)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_pcrel)
	.balign 16			/* outside the function: not code */
lit_here: .quad 0x5566778899aabbcc
lit_vec: .quad 0x1112131415161718, 0x2122232425262728
	.ltorg
GROUP_END(t_pcrel)

/* ---- calls and indirect branches --------------------------------------- */
GROUP_BEGIN(t_calls)
FUNC(t_calls)
	I(stp x29, x30, [sp, #-16]!)
	I(mov x0, #1)
	I(adrp x1, fnptr)
	I(ldr x1, [x1, :lo12:fnptr])
	I(blr x1)			/* leaf_add3: 4 */
	I(bl leaf_twice)		/* 8 */
	EXPECT(x0, 8)
	I(adr x2, 1f)
	I(br x2)
	b suite_fail
1:	I(adr x30, 2f)
	I(ret)				/* ret to a computed address */
	b suite_fail
2:	I(adr x3, 3f)
	I(ret x3)
	b suite_fail
3:	I(mov x4, x30)
	I(adr x5, 4f)
	EXPECT_ADR(x4, 2b)
	I(blr x5)
6:	b suite_fail
4:	EXPECT_ADR(x30, 6b)		/* blr set x30 to the word after it */
	I(ldp x29, x30, [sp], #16)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_calls)

/* called by t_calls only, once */
FUNC(leaf_twice)
	I(lsl x0, x0, #1)
	I(ret)
ENDF(leaf_twice)
	.ltorg
GROUP_END(t_calls)

/* ---- loops: sites that run many times ------------------------------------ */
GROUP_BEGIN(t_loop)
FUNC(t_loop)
	I(mov x1, #10)
	I(mov x2, #0)
1:	IN(10, add x2, x2, x1)
	IN(10, subs x1, x1, #1)
	IN(10, b.ne 1b)
	EXPECT(x2, 55)
	I(mov x3, #4)
	I(mov x4, #0)
2:	IN(4, add x4, x4, #2)
	IN(4, sub x3, x3, #1)
	IN(4, cbnz x3, 2b)
	EXPECT(x4, 8)
	I(mov x5, #0)
	I(mov x6, #0)
3:	IN(8, add x6, x6, x5)
	IN(8, add x5, x5, #1)
	IN(8, tbz x5, #3, 3b)
	EXPECT(x6, 28)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_loop)
	.ltorg
GROUP_END(t_loop)

/* ---- flags live across probed instructions --------------------------------- */
GROUP_BEGIN(t_flags)
FUNC(t_flags)
	I(mov x1, #3)
	I(cmp x1, #7)			/* lo, lt, ne */
	I(mov x2, #1)			/* probes between the compare and its use */
	I(add x3, x2, x2)
	I(csel x4, x1, x2, lo)
	EXPECT(x4, 3)
	I(cmp x1, #7)
	I(cset x5, lt)
	I(cinc x5, x5, ne)
	EXPECT(x5, 2)
	I(mov x6, #-1)
	I(adds x7, x6, #1)		/* carry out, zero */
	I(adc x8, xzr, xzr)
	EXPECT(x8, 1)
	I(mov x9, #5)
	I(cmp x9, #5)
	I(ccmp x9, #6, #0, eq)		/* 5 vs 6: ne */
	I(cset x10, ne)
	EXPECT(x10, 1)
	I(mov x11, #0)
	I(negs x12, x11)
	I(cset x13, eq)
	EXPECT(x13, 1)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_flags)
	.ltorg
GROUP_END(t_flags)

/* ---- loads, stores, the stack ---------------------------------------------- */
GROUP_BEGIN(t_mem)
FUNC(t_mem)
	I(stp x19, x20, [sp, #-48]!)
	I(stp w1, w2, [sp, #16])
	I(mov x19, #0x1234)
	I(mov x20, #0x5678)
	I(stp x19, x20, [sp, #24])
	I(ldp x3, x4, [sp, #24])
	EXPECT(x3, 0x1234)
	EXPECT(x4, 0x5678)
	I(mov w5, #11)
	I(mov w6, #22)
	I(stp w5, w6, [sp, #-16]!)	/* a 32-bit pre-indexed pair on sp */
	I(ldp w7, w8, [sp], #16)
	EXPECT(x7, 11)
	EXPECT(x8, 22)
	I(adrp x9, rr_w)
	I(add x9, x9, :lo12:rr_w)
	I(mov x10, #0x77)
	I(str x10, [x9])
	I(ldr x11, [x9], #8)		/* post-index */
	EXPECT(x11, 0x77)
	I(sub x9, x9, #8)
	I(strb w10, [x9, #1]!)		/* pre-index */
	I(ldrb w12, [x9])
	EXPECT(x12, 0x77)
	I(mov x13, sp)
	I(sub sp, sp, #32)
	I(add sp, sp, #32)
	I(mov x14, sp)
	EXPECT_REG(x14, x13)
	I(ldp x19, x20, [sp], #48)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_mem)
	.ltorg
GROUP_END(t_mem)

/* ---- FP and SIMD state kept across probes ------------------------------------ */
GROUP_BEGIN(t_fp)
FUNC(t_fp)
	I(fmov d1, #1.5)
	I(fmov d2, #2.0)
	I(fadd d3, d1, d2)
	I(fmov d4, #3.5)
	I(fcmp d3, d4)
	I(b.eq 1f)
	b suite_fail
1:	I(movi v5.16b, #0x42)
	I(movi v6.16b, #0x01)
	I(add v7.16b, v5.16b, v6.16b)
	I(mov x1, v7.d[0])
	I(mov x2, v7.d[1])
	EXPECT(x1, 0x4343434343434343)
	EXPECT(x2, 0x4343434343434343)
	I(fmov d16, #-2.0)
	I(fmul d17, d16, d16)
	I(fmov x3, d17)
	EXPECT(x3, 0x4010000000000000)	/* 4.0 */
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_fp)
	.ltorg
GROUP_END(t_fp)

/* ---- a jump table: targets inside the function ------------------------------ */
GROUP_BEGIN(t_switch)
FUNC(t_switch)
	I(mov x1, #0)
	I(mov x5, #0)
1:	IN(4, adrp x2, sw_tab)
	IN(4, add x2, x2, :lo12:sw_tab)
	IN(4, ldrb w3, [x2, x1])
	IN(4, adr x4, 4f)
	IN(4, add x4, x4, w3, uxtb #2)
	IN(4, br x4)
4:	IN(1, add x5, x5, #1)
	IN(1, b 5f)
	IN(1, add x5, x5, #10)
	IN(1, b 5f)
	IN(1, add x5, x5, #100)
	IN(1, b 5f)
	IN(1, add x5, x5, #1000)
5:	IN(4, add x1, x1, #1)
	IN(4, cmp x1, #4)
	IN(4, b.ne 1b)
	EXPECT(x5, 1111)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_switch)
	.pushsection .rodata
sw_tab:	.byte 0, 2, 4, 6
	.popsection
	.ltorg
GROUP_END(t_switch)

/* ---- every general register survives a probe ------------------------------ */
#define SETREG(n) I(mov x##n, #(0x100 + n))
#define CHKREG(n) EXPECT(x##n, 0x100 + n)
GROUP_BEGIN(t_regs)
FUNC(t_regs)
	I(stp x29, x30, [sp, #-16]!)
	SETREG(0); SETREG(1); SETREG(2); SETREG(3); SETREG(4); SETREG(5)
	SETREG(6); SETREG(7); SETREG(8); SETREG(9); SETREG(10); SETREG(11)
	SETREG(12); SETREG(13); SETREG(14); SETREG(15); SETREG(18); SETREG(19)
	SETREG(20); SETREG(21); SETREG(22); SETREG(23); SETREG(24); SETREG(25)
	SETREG(26); SETREG(27); SETREG(28); SETREG(29)
	I(nop)
	I(nop)
	CHKREG(0); CHKREG(1); CHKREG(2); CHKREG(3); CHKREG(4); CHKREG(5)
	CHKREG(6); CHKREG(7); CHKREG(8); CHKREG(9); CHKREG(10); CHKREG(11)
	CHKREG(12); CHKREG(13); CHKREG(14); CHKREG(15); CHKREG(18); CHKREG(19)
	CHKREG(20); CHKREG(21); CHKREG(22); CHKREG(23); CHKREG(24); CHKREG(25)
	CHKREG(26); CHKREG(27); CHKREG(28); CHKREG(29)
	I(ldp x29, x30, [sp], #16)
	I(ldr x0, =MAGIC)
	I(ret)
ENDF(t_regs)
	.ltorg
GROUP_END(t_regs)

NOTE_GNU_STACK

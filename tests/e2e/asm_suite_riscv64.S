/* SPDX-License-Identifier: MIT */
/*
 * riscv64 end-to-end suite, the counterpart of asm_suite_x86_64.S and
 * asm_suite_arm64.S: each group's entry function returns MAGIC only if
 * every instruction ran correctly; every instruction the relocator or the
 * simulator could get wrong is labelled with I() (asm_riscv64.h), with how
 * often one call of its group runs it. Compressed instructions are written
 * as such (c.*) and the assembler also compresses what it can (RV64GC),
 * so both lengths are probed throughout, and a jal over two compressed
 * instructions is written with every other thread stopped.
 *
 * Groups are called through suite_call(fn), which saves the callee-saved
 * registers (s0-s11, fs0-fs11); a failed check puts 0xbad0000 + source
 * line in a0 and leaves through suite_fail, which restores sp. t5 and t6
 * are the checks' scratch registers. lr/sc sequences are not labelled:
 * the engine refuses every site between the two.
 *
 * Relaxation is off: the linker must not rewrite labelled instructions.
 * Numeric labels: 9 is I()'s, 8 is EXPECT's; the code uses the others.
 */
#include "asm_riscv64.h"

	.option norelax

/* reg must equal the 64-bit value (the compare is probed; the failure path
 * never runs) */
#define EXPECT(reg, value)                                                   \
	li t6, value;                                                        \
	I(beq reg, t6, 8f);                                                  \
	li a0, 0xbad0000 + __LINE__;                                         \
	j suite_fail;                                                        \
	8:
#define EXPECT_REG(reg, want)                                                \
	I(beq reg, want, 8f);                                                \
	li a0, 0xbad0000 + __LINE__;                                         \
	j suite_fail;                                                        \
	8:
#define EXPECT_ADDR(reg, label)                                              \
	lla t6, label;                                                       \
	EXPECT_REG(reg, t6)
#define FAIL                                                                 \
	li a0, 0xbad0000 + __LINE__;                                         \
	j suite_fail

	.data
	.balign 16
suite_saved_sp: .quad 0
rw_q:	.quad 0x1111222233334444
rw_w:	.quad 0
	.balign 8
fnptr:	.quad leaf_add3
dbl_2:	.double 2.5

	.section .rodata
	.balign 16
lit_q:	.quad 0x0badf00d12345678
jtab:	.word jt_0 - jtab, jt_1 - jtab, jt_2 - jtab, jt_3 - jtab

	.text
/* uint64_t suite_call(uint64_t (*group)(void)) */
	.p2align 3
FUNC(suite_call)
	addi sp, sp, -208
	sd ra, 200(sp)
	sd s0, 192(sp)
	sd s1, 184(sp)
	sd s2, 176(sp)
	sd s3, 168(sp)
	sd s4, 160(sp)
	sd s5, 152(sp)
	sd s6, 144(sp)
	sd s7, 136(sp)
	sd s8, 128(sp)
	sd s9, 120(sp)
	sd s10, 112(sp)
	sd s11, 104(sp)
	fsd fs0, 96(sp)
	fsd fs1, 88(sp)
	fsd fs2, 80(sp)
	fsd fs3, 72(sp)
	fsd fs4, 64(sp)
	fsd fs5, 56(sp)
	fsd fs6, 48(sp)
	fsd fs7, 40(sp)
	fsd fs8, 32(sp)
	fsd fs9, 24(sp)
	fsd fs10, 16(sp)
	fsd fs11, 8(sp)
	la t0, suite_saved_sp
	sd sp, 0(t0)
	jalr a0
.Lsuite_out:
	ld ra, 200(sp)
	ld s0, 192(sp)
	ld s1, 184(sp)
	ld s2, 176(sp)
	ld s3, 168(sp)
	ld s4, 160(sp)
	ld s5, 152(sp)
	ld s6, 144(sp)
	ld s7, 136(sp)
	ld s8, 128(sp)
	ld s9, 120(sp)
	ld s10, 112(sp)
	ld s11, 104(sp)
	fld fs0, 96(sp)
	fld fs1, 88(sp)
	fld fs2, 80(sp)
	fld fs3, 72(sp)
	fld fs4, 64(sp)
	fld fs5, 56(sp)
	fld fs6, 48(sp)
	fld fs7, 40(sp)
	fld fs8, 32(sp)
	fld fs9, 24(sp)
	fld fs10, 16(sp)
	fld fs11, 8(sp)
	addi sp, sp, 208
	ret
ENDF(suite_call)

FUNC(suite_fail)
	la t0, suite_saved_sp
	ld sp, 0(t0)
	j .Lsuite_out
ENDF(suite_fail)

/* ---- a C-like function: prologue, calls, epilogue ------------------------ */
GROUP_BEGIN(t_prologue)
FUNC(t_prologue)
	IJ(addi sp, sp, -32)
	I(sd ra, 24(sp))
	I(sd s0, 16(sp))
	I(c.addi4spn s0, sp, 32)
	I(sd s1, 8(sp))
	I(li s1, 40)
	I(c.mv a0, s1)
	I(jal leaf_add3)
	I(c.add s1, a0)			/* 40 + 43 */
	I(li a0, 7)
	I(call leaf_add3)		/* auipc ra + jalr ra */
	I(c.add s1, a0)			/* + 10 = 93 */
	EXPECT(s1, 93)
	I(addi t0, s0, -32)
	EXPECT_REG(t0, sp)
	I(ld s1, 8(sp))
	I(c.ldsp s0, 16(sp))
	I(c.ldsp ra, 24(sp))
	I(c.addi16sp sp, 32)
	I(li a0, MAGIC)
	I(c.jr ra)
ENDF(t_prologue)

FUNC(leaf_add3)
	IN(2, c.addi a0, 3)		/* t_calls calls it too: */
	IN(2, ret)			/* its probes are gone by then */
ENDF(leaf_add3)
GROUP_END(t_prologue)

/* ---- conditional branches, taken and not, every condition ---------------- */
GROUP_BEGIN(t_branches)
FUNC(t_branches)
	IJ(li t0, 0)
	I(li a1, 5)
	I(li a2, 3)
	I(li a3, -1)
	I(beq a1, a1, 1f)
	FAIL
1:	I(beq a1, a2, 2f)		/* not taken */
	I(addi t0, t0, 1)
2:	I(bne a1, a2, 1f)
	FAIL
1:	I(bne a1, a1, 2f)
	I(addi t0, t0, 1)
2:	I(blt a2, a1, 1f)
	FAIL
1:	I(blt a1, a2, 2f)
	I(addi t0, t0, 1)
2:	I(blt a3, a2, 1f)		/* signed: -1 < 3 */
	FAIL
1:	I(bge a1, a2, 1f)
	FAIL
1:	I(bge a3, a1, 2f)
	I(addi t0, t0, 1)
2:	I(bge a1, a1, 1f)		/* equal: taken */
	FAIL
1:	I(bltu a2, a1, 1f)
	FAIL
1:	I(bltu a3, a1, 2f)		/* unsigned: ~0 is the largest */
	I(addi t0, t0, 1)
2:	I(bgeu a3, a1, 1f)
	FAIL
1:	I(bgeu a2, a1, 2f)
	I(addi t0, t0, 1)
2:	I(li s0, 0)
	I(c.beqz s0, 1f)
	FAIL
1:	I(c.bnez s0, 2f)
	I(c.addi t0, 1)
2:	I(li s1, 9)
	I(c.bnez s1, 1f)
	FAIL
1:	I(c.beqz s1, 2f)
	I(c.addi t0, 1)
2:	I(c.j 1f)
	FAIL
1:	I(j 1f)
	FAIL
1:	I(beqz zero, 1f)		/* beq x0, x0 */
	FAIL
1:	EXPECT(t0, 8)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_branches)
GROUP_END(t_branches)

/* ---- pc-relative data: auipc with every use of it ------------------------ */
GROUP_BEGIN(t_pcrel)
FUNC(t_pcrel)
1:	IJ(auipc a1, %pcrel_hi(lit_q))
	I(ld a2, %pcrel_lo(1b)(a1))
	EXPECT(a2, 0x0badf00d12345678)
1:	I(auipc a3, %pcrel_hi(rw_q))
	I(addi a3, a3, %pcrel_lo(1b))
	I(c.ld a4, 0(a3))
	EXPECT(a4, 0x1111222233334444)
	I(li a5, 0x5a5a)
	I(c.sd a5, 8(a3))		/* rw_w */
1:	I(auipc a6, %pcrel_hi(rw_w))
	I(ld a7, %pcrel_lo(1b)(a6))
	EXPECT(a7, 0x5a5a)
1:	I(auipc t0, 0)			/* its own address */
	EXPECT_ADDR(t0, 1b)
1:	I(auipc t1, %pcrel_hi(t_pcrel))
	I(addi t1, t1, %pcrel_lo(1b))
	EXPECT_ADDR(t1, t_pcrel)
	I(lla t2, fnptr)		/* auipc+addi */
	I(ld t2, 0(t2))
	EXPECT_ADDR(t2, leaf_add3)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_pcrel)
GROUP_END(t_pcrel)

/* ---- calls of every form and the returns they come back through ---------- */
GROUP_BEGIN(t_calls)
FUNC(t_calls)
	I(addi sp, sp, -16)		/* the c.jr below: one instruction only */
	I(sd ra, 8(sp))
	I(li a0, 1)
	I(lla t1, leaf_add3)
	I(jalr t1)			/* jalr ra, 0(t1) */
	I(c.jalr t1)
	EXPECT(a0, 7)
	I(lla t2, leaf_add3 - 8)
	I(jalr ra, 8(t2))		/* with an offset */
	EXPECT(a0, 10)
	I(lla t3, link_t3)
	I(jalr t3, 0(t3))		/* links through t3, which it also reads */
	EXPECT(a0, 11)
	I(lla t4, fnptr)
	I(ld t4, 0(t4))
	I(jalr t4)			/* through a function pointer */
	EXPECT(a0, 14)
	I(lla a5, 1f)
	I(c.jr a5)			/* a computed jump */
	FAIL
1:	I(call tail_add1)
	EXPECT(a0, 15)
	I(ld ra, 8(sp))
	I(addi sp, sp, 16)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_calls)

/* returns through the link register it was called with */
FUNC(link_t3)
	I(addi a0, a0, 1)
	I(jr t3)
ENDF(link_t3)

/* a tail call: the callee returns to our caller */
FUNC(tail_add1)
	I(li t0, 1)
	I(j add_t0)
ENDF(tail_add1)

FUNC(add_t0)
	I(c.add a0, t0)
	I(ret)
ENDF(add_t0)
GROUP_END(t_calls)

/* ---- loops ---------------------------------------------------------------- */
GROUP_BEGIN(t_loops)
FUNC(t_loops)
	IJ(li a0, 0)
	I(li a1, 10)
1:	IN(10, c.addi a0, 3)
	IN(10, c.addi a1, -1)
	IN(10, c.bnez a1, 1b)
	EXPECT(a0, 30)
	I(li a2, 4)
	I(li a3, 0)
2:	IN(4, li a4, 3)
3:	IN(12, addi a3, a3, 1)
	IN(12, addiw a4, a4, -1)
	IN(12, bgtz a4, 3b)
	IN(4, addi a2, a2, -1)
	IN(4, bnez a2, 2b)
	EXPECT(a3, 12)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_loops)
GROUP_END(t_loops)

/* ---- integer arithmetic, compressed and not ------------------------------- */
GROUP_BEGIN(t_alu)
FUNC(t_alu)
	IJ(c.li a0, 5)
	I(c.addi a0, 3)
	I(c.addiw a0, -1)		/* 7 */
	I(c.slli a0, 4)			/* 112 */
	I(c.srli a0, 2)			/* 28 */
	I(c.mv a1, a0)
	I(c.add a1, a0)			/* 56 */
	I(c.sub a1, a0)			/* 28 */
	I(li a2, 0x0f)
	I(c.and a2, a1)			/* 12 */
	I(c.or a2, a0)			/* 28 */
	I(c.xor a2, a0)			/* 0 */
	EXPECT(a2, 0)
	I(c.andi a1, 0x1c)		/* 28 */
	I(c.lui a3, 0x12)
	I(c.srai a3, 12)		/* 0x12 */
	I(li a4, -8)
	I(c.addw a4, a3)		/* 10 */
	I(c.subw a4, a1)		/* -18 */
	EXPECT(a4, -18)
	I(lui a5, 0x80000)		/* sign-extended */
	I(srai a5, a5, 31)
	EXPECT(a5, -1)
	I(li a6, 7)
	I(mul a7, a6, a1)		/* 196 */
	I(divu t0, a7, a6)
	I(remu t1, a7, a1)
	EXPECT(t0, 28)
	EXPECT(t1, 0)
	I(sltu t2, a6, a1)
	I(slti t3, a4, 0)
	I(c.add t2, t3)
	EXPECT(t2, 2)
	I(sext.w t4, a5)
	I(zext.b a5, a5)
	EXPECT(a5, 0xff)
	I(c.nop)
	I(nop)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_alu)
GROUP_END(t_alu)

/* ---- loads, stores and atomics on the stack -------------------------------- */
GROUP_BEGIN(t_mem)
FUNC(t_mem)
	IJ(c.addi16sp sp, -64)
	I(li a1, 0x0102030405060708)
	I(c.sdsp a1, 0(sp))
	I(c.ldsp a2, 0(sp))
	EXPECT_REG(a2, a1)
	I(c.swsp a1, 8(sp))
	I(c.lwsp a3, 8(sp))
	EXPECT(a3, 0x05060708)
	I(c.addi4spn a4, sp, 16)
	I(c.sd a1, 0(a4))
	I(c.lw a5, 4(a4))
	EXPECT(a5, 0x01020304)
	I(lbu a6, 1(a4))
	I(lh a7, 2(a4))
	EXPECT(a6, 0x07)
	EXPECT(a7, 0x0506)
	I(sb zero, 0(a4))
	I(sh zero, 6(a4))
	I(ld t0, 0(a4))
	EXPECT(t0, 0x0000030405060700)
	I(sd zero, 24(sp))
	I(addi t1, sp, 24)
	I(li t2, 5)
	I(amoadd.d t3, t2, (t1))
	I(amoswap.w.aqrl t4, t2, (t1))
	I(ld t3, 0(t1))
	EXPECT(t3, 5)
	I(fence rw, rw)
	I(fence.tso)
	/* a load-reserved/store-conditional loop: not probed (refused) */
1:	lr.d t0, (t1)
	addi t0, t0, 2
	sc.d t2, t0, (t1)
	bnez t2, 1b
	I(ld t4, 24(sp))
	EXPECT(t4, 7)
	I(c.addi16sp sp, 64)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_mem)
GROUP_END(t_mem)

/* ---- floating point: state live across probes ------------------------------ */
GROUP_BEGIN(t_fp)
FUNC(t_fp)
	IJ(li a1, 3)
	I(fcvt.d.l fa0, a1)
	I(lla a2, dbl_2)
	I(c.fld fa1, 0(a2))
	I(fadd.d fa2, fa0, fa1)		/* 5.5 */
	I(fmul.d fa3, fa2, fa1)		/* 13.75 */
	I(fsgnjn.d fa4, fa3, fa3)	/* -13.75 */
	I(fcvt.l.d a3, fa4, rtz)
	EXPECT(a3, -13)
	I(feq.d a4, fa2, fa2)
	EXPECT(a4, 1)
	I(fmv.x.d a5, fa1)
	EXPECT(a5, 0x4004000000000000)
	I(addi sp, sp, -16)
	I(c.fsdsp fa3, 0(sp))
	I(c.fldsp fa5, 0(sp))
	I(addi sp, sp, 16)
	I(feq.d a6, fa5, fa3)
	EXPECT(a6, 1)
	csrr a7, fcsr			/* a CSR read: refused, so not labelled */
	I(li a0, MAGIC)
	I(ret)
ENDF(t_fp)
GROUP_END(t_fp)

/* ---- a jump table (a switch) ----------------------------------------------- */
GROUP_BEGIN(t_switch)
FUNC(t_switch)
	IJ(addi sp, sp, -16)
	I(sd ra, 8(sp))
	I(li a0, 0)
	I(li a1, 0)
1:	IN(4, call sw)
	IN(4, c.addi a1, 1)
	IN(4, li t0, 4)
	IN(4, blt a1, t0, 1b)
	EXPECT(a0, 1 + 20 + 300 + 4000)
	I(ld ra, 8(sp))
	I(addi sp, sp, 16)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_switch)

/* a0 += {1, 20, 300, 4000}[a1] through a table of offsets */
FUNC(sw)
	IN(4, lla t1, jtab)
	IN(4, slli t2, a1, 2)
	IN(4, add t2, t2, t1)
	IN(4, lw t2, 0(t2))
	IN(4, add t2, t2, t1)
	IN(4, jr t2)
jt_0:	I(addi a0, a0, 1)
	I(ret)
jt_1:	I(addi a0, a0, 20)
	I(ret)
jt_2:	I(addi a0, a0, 300)
	I(ret)
jt_3:	I(li t3, 4000)
	I(add a0, a0, t3)
	I(ret)
ENDF(sw)
GROUP_END(t_switch)

/* ---- every general register preserved across probed instructions ---------- */
GROUP_BEGIN(t_regs)
FUNC(t_regs)
	IJ(addi sp, sp, -16)
	I(sd ra, 8(sp))
	li ra, 0x101
	li t0, 0x105
	li t1, 0x106
	li t2, 0x107
	li s0, 0x108
	li s1, 0x109
	li a0, 0x10a
	li a1, 0x10b
	li a2, 0x10c
	li a3, 0x10d
	li a4, 0x10e
	li a5, 0x10f
	li a6, 0x110
	li a7, 0x111
	li s2, 0x112
	li s3, 0x113
	li s4, 0x114
	li s5, 0x115
	li s6, 0x116
	li s7, 0x117
	li s8, 0x118
	li s9, 0x119
	li s10, 0x11a
	li s11, 0x11b
	li t3, 0x11c
	li t4, 0x11d
	I(c.nop)
	I(addi zero, zero, 0)
	I(c.mv t5, t4)
	I(c.mv t5, t3)
	I(c.nop)
	EXPECT(ra, 0x101)
	EXPECT(t0, 0x105)
	EXPECT(t1, 0x106)
	EXPECT(t2, 0x107)
	EXPECT(s0, 0x108)
	EXPECT(s1, 0x109)
	EXPECT(a0, 0x10a)
	EXPECT(a1, 0x10b)
	EXPECT(a2, 0x10c)
	EXPECT(a3, 0x10d)
	EXPECT(a4, 0x10e)
	EXPECT(a5, 0x10f)
	EXPECT(a6, 0x110)
	EXPECT(a7, 0x111)
	EXPECT(s2, 0x112)
	EXPECT(s3, 0x113)
	EXPECT(s4, 0x114)
	EXPECT(s5, 0x115)
	EXPECT(s6, 0x116)
	EXPECT(s7, 0x117)
	EXPECT(s8, 0x118)
	EXPECT(s9, 0x119)
	EXPECT(s10, 0x11a)
	EXPECT(s11, 0x11b)
	EXPECT(t3, 0x11c)
	EXPECT(t4, 0x11d)
	EXPECT(t5, 0x11c)
	I(ld ra, 8(sp))
	I(addi sp, sp, 16)
	I(li a0, MAGIC)
	I(ret)
ENDF(t_regs)
GROUP_END(t_regs)

NOTE_GNU_STACK

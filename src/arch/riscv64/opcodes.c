/* SPDX-License-Identifier: MIT */
/*
 * Every RV64GC instruction as one mask/value line, with the operand
 * template objdump prints (the idea of binutils' riscv-opc.c, written
 * from the unprivileged ISA manual's opcode map). A word is valid when
 * some line matches; the first match names it, so each alias (li, mv,
 * ret, beqz, ...) comes before the instruction it abbreviates and carries
 * the extra fixed fields in its mask. Like objdump (binutils 2.40), the
 * register-immediate forms print under the register-register name
 * (addi as add, slli as sll, csrsi as csrs), so the table names them so.
 *
 * Template codes (format.c prints them):
 *   d s t    rd rs1 rs2 (integer)       D S T R  rd rs1 rs2 rs3 (float)
 *   j        I immediate, decimal        q        S immediate, decimal
 *   u        U immediate >> 12, hex      > <      shamt (6, 5 bits), hex
 *   p a      branch, jal target          m        ",rm" unless dynamic
 *   E Z      CSR, 5-bit CSR immediate    P Q      fence pred, succ
 * Anything else is printed as is.
 */
#include "arch/riscv64/opcodes.h"

#define RD   (31u << 7)
#define RS1  (31u << 15)
#define RS2  (31u << 20)
#define IMM  (0xfffu << 20)
#define RM   (7u << 12)
#define F3   (7u << 12)
#define OPC  0x7fu
#define F7   (0x7fu << 25)

#define M_I   (OPC | F3)          /* opcode + funct3 */
#define M_R   (OPC | F3 | F7)     /* + funct7 */
#define M_SH  (OPC | F3 | (0x3fu << 26)) /* 64-bit shifts: funct6 */
#define M_FR  (OPC | F7)          /* float with rm */
#define M_F2  (OPC | F7 | RS2)    /* float unary with rm */
#define M_AMO (OPC | F3 | (0x1fu << 27))

#define I(op, f3)      ((uint32_t)(op) | (uint32_t)(f3) << 12)
#define R(op, f3, f7)  (I(op, f3) | (uint32_t)(f7) << 25)
#define F(f7)          ((uint32_t)RV_OP_FP | (uint32_t)(f7) << 25)
#define F2(f7, rs2)    (F(f7) | (uint32_t)(rs2) << 20)
#define AMO(f3, f5)    (I(RV_OP_AMO, f3) | (uint32_t)(f5) << 27)
#define CSR(n)         ((uint32_t)(n) << 20)

const struct rv_opcode rv_opcodes[] = {
	/* ---- RV64I: aliases first ---- */
	{"nop", "", 0xffffffffu, I(RV_OP_IMM, 0), 0},
	{"li", "d,j", M_I | RS1, I(RV_OP_IMM, 0), 0},
	{"mv", "d,s", M_I | IMM, I(RV_OP_IMM, 0), 0},
	{"add", "d,s,j", M_I, I(RV_OP_IMM, 0), 0},
	{"slti", "d,s,j", M_I, I(RV_OP_IMM, 2), 0},
	{"seqz", "d,s", M_I | IMM, I(RV_OP_IMM, 3) | 1u << 20, 0},
	{"sltiu", "d,s,j", M_I, I(RV_OP_IMM, 3), 0},
	{"not", "d,s", M_I | IMM, I(RV_OP_IMM, 4) | 0xfffu << 20, 0},
	{"xor", "d,s,j", M_I, I(RV_OP_IMM, 4), 0},
	{"or", "d,s,j", M_I, I(RV_OP_IMM, 6), 0},
	{"zext.b", "d,s", M_I | IMM, I(RV_OP_IMM, 7) | 0xffu << 20, 0},
	{"and", "d,s,j", M_I, I(RV_OP_IMM, 7), 0},
	{"sll", "d,s,>", M_SH, I(RV_OP_IMM, 1), 0},
	{"srl", "d,s,>", M_SH, I(RV_OP_IMM, 5), 0},
	{"sra", "d,s,>", M_SH, I(RV_OP_IMM, 5) | 0x10u << 26, 0},
	{"sext.w", "d,s", M_I | IMM, I(RV_OP_IMM_32, 0), 0},
	{"addw", "d,s,j", M_I, I(RV_OP_IMM_32, 0), 0},
	{"sllw", "d,s,<", M_R, I(RV_OP_IMM_32, 1), 0},
	{"srlw", "d,s,<", M_R, I(RV_OP_IMM_32, 5), 0},
	{"sraw", "d,s,<", M_R, R(RV_OP_IMM_32, 5, 0x20), 0},
	{"lui", "d,u", OPC, RV_OP_LUI, 0},
	{"auipc", "d,u", OPC, RV_OP_AUIPC, 0},
	{"neg", "d,t", M_R | RS1, R(RV_OP_OP, 0, 0x20), 0},
	{"add", "d,s,t", M_R, R(RV_OP_OP, 0, 0), 0},
	{"sub", "d,s,t", M_R, R(RV_OP_OP, 0, 0x20), 0},
	{"sll", "d,s,t", M_R, R(RV_OP_OP, 1, 0), 0},
	{"sgtz", "d,t", M_R | RS1, R(RV_OP_OP, 2, 0), 0},
	{"sltz", "d,s", M_R | RS2, R(RV_OP_OP, 2, 0), 0},
	{"slt", "d,s,t", M_R, R(RV_OP_OP, 2, 0), 0},
	{"snez", "d,t", M_R | RS1, R(RV_OP_OP, 3, 0), 0},
	{"sltu", "d,s,t", M_R, R(RV_OP_OP, 3, 0), 0},
	{"xor", "d,s,t", M_R, R(RV_OP_OP, 4, 0), 0},
	{"srl", "d,s,t", M_R, R(RV_OP_OP, 5, 0), 0},
	{"sra", "d,s,t", M_R, R(RV_OP_OP, 5, 0x20), 0},
	{"or", "d,s,t", M_R, R(RV_OP_OP, 6, 0), 0},
	{"and", "d,s,t", M_R, R(RV_OP_OP, 7, 0), 0},
	{"addw", "d,s,t", M_R, R(RV_OP_OP_32, 0, 0), 0},
	{"negw", "d,t", M_R | RS1, R(RV_OP_OP_32, 0, 0x20), 0},
	{"subw", "d,s,t", M_R, R(RV_OP_OP_32, 0, 0x20), 0},
	{"sllw", "d,s,t", M_R, R(RV_OP_OP_32, 1, 0), 0},
	{"srlw", "d,s,t", M_R, R(RV_OP_OP_32, 5, 0), 0},
	{"sraw", "d,s,t", M_R, R(RV_OP_OP_32, 5, 0x20), 0},
	{"lb", "d,j(s)", M_I, I(RV_OP_LOAD, 0), 0},
	{"lh", "d,j(s)", M_I, I(RV_OP_LOAD, 1), 0},
	{"lw", "d,j(s)", M_I, I(RV_OP_LOAD, 2), 0},
	{"ld", "d,j(s)", M_I, I(RV_OP_LOAD, 3), 0},
	{"lbu", "d,j(s)", M_I, I(RV_OP_LOAD, 4), 0},
	{"lhu", "d,j(s)", M_I, I(RV_OP_LOAD, 5), 0},
	{"lwu", "d,j(s)", M_I, I(RV_OP_LOAD, 6), 0},
	{"sb", "t,q(s)", M_I, I(RV_OP_STORE, 0), 0},
	{"sh", "t,q(s)", M_I, I(RV_OP_STORE, 1), 0},
	{"sw", "t,q(s)", M_I, I(RV_OP_STORE, 2), 0},
	{"sd", "t,q(s)", M_I, I(RV_OP_STORE, 3), 0},
	/* control flow */
	{"j", "a", OPC | RD, RV_OP_JAL, 0},
	{"jal", "a", OPC | RD, RV_OP_JAL | 1u << 7, 0},
	{"jal", "d,a", OPC, RV_OP_JAL, 0},
	{"ret", "", 0xffffffffu, I(RV_OP_JALR, 0) | 1u << 15, 0},
	{"jr", "s", M_I | RD | IMM, I(RV_OP_JALR, 0), 0},
	{"jr", "j(s)", M_I | RD, I(RV_OP_JALR, 0), 0},
	{"jalr", "s", M_I | RD | IMM, I(RV_OP_JALR, 0) | 1u << 7, 0},
	{"jalr", "j(s)", M_I | RD, I(RV_OP_JALR, 0) | 1u << 7, 0},
	{"jalr", "d,s", M_I | IMM, I(RV_OP_JALR, 0), 0},
	{"jalr", "d,j(s)", M_I, I(RV_OP_JALR, 0), 0},
	{"beqz", "s,p", M_I | RS2, I(RV_OP_BRANCH, 0), 0},
	{"beq", "s,t,p", M_I, I(RV_OP_BRANCH, 0), 0},
	{"bnez", "s,p", M_I | RS2, I(RV_OP_BRANCH, 1), 0},
	{"bne", "s,t,p", M_I, I(RV_OP_BRANCH, 1), 0},
	{"bltz", "s,p", M_I | RS2, I(RV_OP_BRANCH, 4), 0},
	{"bgtz", "t,p", M_I | RS1, I(RV_OP_BRANCH, 4), 0},
	{"blt", "s,t,p", M_I, I(RV_OP_BRANCH, 4), 0},
	{"blez", "t,p", M_I | RS1, I(RV_OP_BRANCH, 5), 0},
	{"bgez", "s,p", M_I | RS2, I(RV_OP_BRANCH, 5), 0},
	{"bge", "s,t,p", M_I, I(RV_OP_BRANCH, 5), 0},
	{"bltu", "s,t,p", M_I, I(RV_OP_BRANCH, 6), 0},
	{"bgeu", "s,t,p", M_I, I(RV_OP_BRANCH, 7), 0},
	/* fences and system */
	{"fence.tso", "", 0xffffffffu, 0x8330000fu, 0},
	{"fence", "", 0xffffffffu, 0x0ff0000fu, 0},
	{"fence", "P,Q", M_I | RD | RS1 | 0xf0000000u, I(RV_OP_MISC_MEM, 0), 0},
	{"fence.i", "", M_I | RD | RS1 | IMM, I(RV_OP_MISC_MEM, 1), 0},
	{"unimp", "", 0xffffffffu, 0xc0001073u, 0}, /* csrrw zero, cycle, zero */
	{"ecall", "", 0xffffffffu, 0x00000073u, 0},
	{"ebreak", "", 0xffffffffu, 0x00100073u, 0},
	{"frflags", "d", M_I | RS1 | IMM, I(RV_OP_SYSTEM, 2) | CSR(1), 0},
	{"fsflags", "s", M_I | RD | IMM, I(RV_OP_SYSTEM, 1) | CSR(1), 0},
	{"fsflags", "d,s", M_I | IMM, I(RV_OP_SYSTEM, 1) | CSR(1), 0},
	{"frrm", "d", M_I | RS1 | IMM, I(RV_OP_SYSTEM, 2) | CSR(2), 0},
	{"fsrm", "s", M_I | RD | IMM, I(RV_OP_SYSTEM, 1) | CSR(2), 0},
	{"fsrm", "d,s", M_I | IMM, I(RV_OP_SYSTEM, 1) | CSR(2), 0},
	{"frcsr", "d", M_I | RS1 | IMM, I(RV_OP_SYSTEM, 2) | CSR(3), 0},
	{"fscsr", "s", M_I | RD | IMM, I(RV_OP_SYSTEM, 1) | CSR(3), 0},
	{"fscsr", "d,s", M_I | IMM, I(RV_OP_SYSTEM, 1) | CSR(3), 0},
	{"rdcycle", "d", M_I | RS1 | IMM, I(RV_OP_SYSTEM, 2) | CSR(0xc00), 0},
	{"rdtime", "d", M_I | RS1 | IMM, I(RV_OP_SYSTEM, 2) | CSR(0xc01), 0},
	{"rdinstret", "d", M_I | RS1 | IMM, I(RV_OP_SYSTEM, 2) | CSR(0xc02), 0},
	{"csrr", "d,E", M_I | RS1, I(RV_OP_SYSTEM, 2), 0},
	{"csrw", "E,s", M_I | RD, I(RV_OP_SYSTEM, 1), 0},
	{"csrs", "E,s", M_I | RD, I(RV_OP_SYSTEM, 2), 0},
	{"csrc", "E,s", M_I | RD, I(RV_OP_SYSTEM, 3), 0},
	{"csrw", "E,Z", M_I | RD, I(RV_OP_SYSTEM, 5), 0},
	{"csrs", "E,Z", M_I | RD, I(RV_OP_SYSTEM, 6), 0},
	{"csrc", "E,Z", M_I | RD, I(RV_OP_SYSTEM, 7), 0},
	{"csrrw", "d,E,s", M_I, I(RV_OP_SYSTEM, 1), 0},
	{"csrrs", "d,E,s", M_I, I(RV_OP_SYSTEM, 2), 0},
	{"csrrc", "d,E,s", M_I, I(RV_OP_SYSTEM, 3), 0},
	{"csrrw", "d,E,Z", M_I, I(RV_OP_SYSTEM, 5), 0},
	{"csrrs", "d,E,Z", M_I, I(RV_OP_SYSTEM, 6), 0},
	{"csrrc", "d,E,Z", M_I, I(RV_OP_SYSTEM, 7), 0},
	{"wfi", "", 0xffffffffu, 0x10500073u, 0},
	{"mret", "", 0xffffffffu, 0x30200073u, 0},
	{"sret", "", 0xffffffffu, 0x10200073u, 0},

	/* ---- M ---- */
	{"mul", "d,s,t", M_R, R(RV_OP_OP, 0, 1), 0},
	{"mulh", "d,s,t", M_R, R(RV_OP_OP, 1, 1), 0},
	{"mulhsu", "d,s,t", M_R, R(RV_OP_OP, 2, 1), 0},
	{"mulhu", "d,s,t", M_R, R(RV_OP_OP, 3, 1), 0},
	{"div", "d,s,t", M_R, R(RV_OP_OP, 4, 1), 0},
	{"divu", "d,s,t", M_R, R(RV_OP_OP, 5, 1), 0},
	{"rem", "d,s,t", M_R, R(RV_OP_OP, 6, 1), 0},
	{"remu", "d,s,t", M_R, R(RV_OP_OP, 7, 1), 0},
	{"mulw", "d,s,t", M_R, R(RV_OP_OP_32, 0, 1), 0},
	{"divw", "d,s,t", M_R, R(RV_OP_OP_32, 4, 1), 0},
	{"divuw", "d,s,t", M_R, R(RV_OP_OP_32, 5, 1), 0},
	{"remw", "d,s,t", M_R, R(RV_OP_OP_32, 6, 1), 0},
	{"remuw", "d,s,t", M_R, R(RV_OP_OP_32, 7, 1), 0},

	/* ---- A: the ordering bits are printed by format.c ---- */
	{"lr.w", "d,(s)", M_AMO | RS2, AMO(2, 0x02), RV_OPC_AQRL},
	{"lr.d", "d,(s)", M_AMO | RS2, AMO(3, 0x02), RV_OPC_AQRL},
	{"sc.w", "d,t,(s)", M_AMO, AMO(2, 0x03), RV_OPC_AQRL},
	{"sc.d", "d,t,(s)", M_AMO, AMO(3, 0x03), RV_OPC_AQRL},
	{"amoswap.w", "d,t,(s)", M_AMO, AMO(2, 0x01), RV_OPC_AQRL},
	{"amoadd.w", "d,t,(s)", M_AMO, AMO(2, 0x00), RV_OPC_AQRL},
	{"amoxor.w", "d,t,(s)", M_AMO, AMO(2, 0x04), RV_OPC_AQRL},
	{"amoand.w", "d,t,(s)", M_AMO, AMO(2, 0x0c), RV_OPC_AQRL},
	{"amoor.w", "d,t,(s)", M_AMO, AMO(2, 0x08), RV_OPC_AQRL},
	{"amomin.w", "d,t,(s)", M_AMO, AMO(2, 0x10), RV_OPC_AQRL},
	{"amomax.w", "d,t,(s)", M_AMO, AMO(2, 0x14), RV_OPC_AQRL},
	{"amominu.w", "d,t,(s)", M_AMO, AMO(2, 0x18), RV_OPC_AQRL},
	{"amomaxu.w", "d,t,(s)", M_AMO, AMO(2, 0x1c), RV_OPC_AQRL},
	{"amoswap.d", "d,t,(s)", M_AMO, AMO(3, 0x01), RV_OPC_AQRL},
	{"amoadd.d", "d,t,(s)", M_AMO, AMO(3, 0x00), RV_OPC_AQRL},
	{"amoxor.d", "d,t,(s)", M_AMO, AMO(3, 0x04), RV_OPC_AQRL},
	{"amoand.d", "d,t,(s)", M_AMO, AMO(3, 0x0c), RV_OPC_AQRL},
	{"amoor.d", "d,t,(s)", M_AMO, AMO(3, 0x08), RV_OPC_AQRL},
	{"amomin.d", "d,t,(s)", M_AMO, AMO(3, 0x10), RV_OPC_AQRL},
	{"amomax.d", "d,t,(s)", M_AMO, AMO(3, 0x14), RV_OPC_AQRL},
	{"amominu.d", "d,t,(s)", M_AMO, AMO(3, 0x18), RV_OPC_AQRL},
	{"amomaxu.d", "d,t,(s)", M_AMO, AMO(3, 0x1c), RV_OPC_AQRL},

	/* ---- F and D: fmt 0 single, 1 double in funct7's low bits ---- */
	{"flw", "D,j(s)", M_I, I(RV_OP_LOAD_FP, 2), 0},
	{"fld", "D,j(s)", M_I, I(RV_OP_LOAD_FP, 3), 0},
	{"fsw", "T,q(s)", M_I, I(RV_OP_STORE_FP, 2), 0},
	{"fsd", "T,q(s)", M_I, I(RV_OP_STORE_FP, 3), 0},
	{"fmadd.s", "D,S,T,Rm", OPC | 3u << 25, RV_OP_MADD, 0},
	{"fmadd.d", "D,S,T,Rm", OPC | 3u << 25, RV_OP_MADD | 1u << 25, 0},
	{"fmsub.s", "D,S,T,Rm", OPC | 3u << 25, RV_OP_MSUB, 0},
	{"fmsub.d", "D,S,T,Rm", OPC | 3u << 25, RV_OP_MSUB | 1u << 25, 0},
	{"fnmsub.s", "D,S,T,Rm", OPC | 3u << 25, RV_OP_NMSUB, 0},
	{"fnmsub.d", "D,S,T,Rm", OPC | 3u << 25, RV_OP_NMSUB | 1u << 25, 0},
	{"fnmadd.s", "D,S,T,Rm", OPC | 3u << 25, RV_OP_NMADD, 0},
	{"fnmadd.d", "D,S,T,Rm", OPC | 3u << 25, RV_OP_NMADD | 1u << 25, 0},
	{"fadd.s", "D,S,Tm", M_FR, F(0x00), 0},
	{"fadd.d", "D,S,Tm", M_FR, F(0x01), 0},
	{"fsub.s", "D,S,Tm", M_FR, F(0x04), 0},
	{"fsub.d", "D,S,Tm", M_FR, F(0x05), 0},
	{"fmul.s", "D,S,Tm", M_FR, F(0x08), 0},
	{"fmul.d", "D,S,Tm", M_FR, F(0x09), 0},
	{"fdiv.s", "D,S,Tm", M_FR, F(0x0c), 0},
	{"fdiv.d", "D,S,Tm", M_FR, F(0x0d), 0},
	{"fsqrt.s", "D,Sm", M_F2, F2(0x2c, 0), 0},
	{"fsqrt.d", "D,Sm", M_F2, F2(0x2d, 0), 0},
	{"fsgnj.s", "D,S,T", M_R, R(RV_OP_FP, 0, 0x10), RV_OPC_FSGNJ},
	{"fsgnjn.s", "D,S,T", M_R, R(RV_OP_FP, 1, 0x10), RV_OPC_FSGNJ},
	{"fsgnjx.s", "D,S,T", M_R, R(RV_OP_FP, 2, 0x10), RV_OPC_FSGNJ},
	{"fsgnj.d", "D,S,T", M_R, R(RV_OP_FP, 0, 0x11), RV_OPC_FSGNJ},
	{"fsgnjn.d", "D,S,T", M_R, R(RV_OP_FP, 1, 0x11), RV_OPC_FSGNJ},
	{"fsgnjx.d", "D,S,T", M_R, R(RV_OP_FP, 2, 0x11), RV_OPC_FSGNJ},
	{"fmin.s", "D,S,T", M_R, R(RV_OP_FP, 0, 0x14), 0},
	{"fmax.s", "D,S,T", M_R, R(RV_OP_FP, 1, 0x14), 0},
	{"fmin.d", "D,S,T", M_R, R(RV_OP_FP, 0, 0x15), 0},
	{"fmax.d", "D,S,T", M_R, R(RV_OP_FP, 1, 0x15), 0},
	{"fcvt.s.d", "D,Sm", M_F2, F2(0x20, 1), 0},
	{"fcvt.d.s", "D,S", M_F2 | RM, F2(0x21, 0), 0},
	{"fcvt.d.s", "D,Sm", M_F2, F2(0x21, 0), 0},
	{"feq.s", "d,S,T", M_R, R(RV_OP_FP, 2, 0x50), 0},
	{"flt.s", "d,S,T", M_R, R(RV_OP_FP, 1, 0x50), 0},
	{"fle.s", "d,S,T", M_R, R(RV_OP_FP, 0, 0x50), 0},
	{"feq.d", "d,S,T", M_R, R(RV_OP_FP, 2, 0x51), 0},
	{"flt.d", "d,S,T", M_R, R(RV_OP_FP, 1, 0x51), 0},
	{"fle.d", "d,S,T", M_R, R(RV_OP_FP, 0, 0x51), 0},
	{"fcvt.w.s", "d,Sm", M_F2, F2(0x60, 0), 0},
	{"fcvt.wu.s", "d,Sm", M_F2, F2(0x60, 1), 0},
	{"fcvt.l.s", "d,Sm", M_F2, F2(0x60, 2), 0},
	{"fcvt.lu.s", "d,Sm", M_F2, F2(0x60, 3), 0},
	{"fcvt.w.d", "d,Sm", M_F2, F2(0x61, 0), 0},
	{"fcvt.wu.d", "d,Sm", M_F2, F2(0x61, 1), 0},
	{"fcvt.l.d", "d,Sm", M_F2, F2(0x61, 2), 0},
	{"fcvt.lu.d", "d,Sm", M_F2, F2(0x61, 3), 0},
	{"fcvt.s.w", "D,sm", M_F2, F2(0x68, 0), 0},
	{"fcvt.s.wu", "D,sm", M_F2, F2(0x68, 1), 0},
	{"fcvt.s.l", "D,sm", M_F2, F2(0x68, 2), 0},
	{"fcvt.s.lu", "D,sm", M_F2, F2(0x68, 3), 0},
	{"fcvt.d.w", "D,s", M_F2 | RM, F2(0x69, 0), 0},
	{"fcvt.d.wu", "D,s", M_F2 | RM, F2(0x69, 1), 0},
	{"fcvt.d.w", "D,sm", M_F2, F2(0x69, 0), 0},
	{"fcvt.d.wu", "D,sm", M_F2, F2(0x69, 1), 0},
	{"fcvt.d.l", "D,sm", M_F2, F2(0x69, 2), 0},
	{"fcvt.d.lu", "D,sm", M_F2, F2(0x69, 3), 0},
	{"fmv.x.w", "d,S", M_F2 | F3, F2(0x70, 0), 0},
	{"fclass.s", "d,S", M_F2 | F3, F2(0x70, 0) | 1u << 12, 0},
	{"fmv.x.d", "d,S", M_F2 | F3, F2(0x71, 0), 0},
	{"fclass.d", "d,S", M_F2 | F3, F2(0x71, 0) | 1u << 12, 0},
	{"fmv.w.x", "D,s", M_F2 | F3, F2(0x78, 0), 0},
	{"fmv.d.x", "D,s", M_F2 | F3, F2(0x79, 0), 0},
};
const size_t rv_nopcodes = RV_ARRAY_SIZE(rv_opcodes);

const struct rv_opcode *rv_lookup(uint32_t x)
{
	for (size_t i = 0; i < rv_nopcodes; i++)
		if ((x & rv_opcodes[i].mask) == rv_opcodes[i].match)
			return &rv_opcodes[i];
	return NULL;
}

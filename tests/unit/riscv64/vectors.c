/* SPDX-License-Identifier: MIT */
/*
 * riscv64 instruction vectors, each decoded at PC (0x10000).
 *
 * The text is what format() prints. The table was made by assembling the
 * instruction in the comment with riscv64-linux-gnu-as -march=rv64gc
 * (compressed lines under .option rvc, the others under .option norvc)
 * and disassembling it with riscv64-linux-gnu-objdump 2.40 -d -z
 * --adjust-vma=0x10000, objdump's "10040 <sym>" written 0x10040;
 * format_test.c repeats that check whenever the cross binutils are
 * installed. Classes and flags are the ISA layer's contract.
 */
#include "rv_test.h"

#define REJ NP_INSN_REJECTED
#define OOL NP_INSN_OUT_OF_LINE
#define SIM NP_INSN_SIMULATED

#define BR     NP_INSN_BRANCH
#define COND   NP_INSN_COND
#define CALL   NP_INSN_CALL
#define RET    NP_INSN_RET
#define IND    NP_INSN_INDIRECT
#define PCREL  NP_INSN_PCREL
#define NOFALL NP_INSN_NOFALL
#define PAD    NP_INSN_PADDING
#define SYS    NP_INSN_SYSTEM
#define LR     NP_INSN_LOAD_RESERVED
#define SC     NP_INSN_STORE_COND

const struct rv_vec rv_vectors[] = {
	/* ---- simulated: control flow and auipc ---- */
	{W(0x100000ef), "jal\t0x10100", SIM, BR | CALL, 0x10100}, /* jal ra,.+0x100 */
	{W(0xfe1ff06f), "j\t0xffe0", SIM, BR | NOFALL, 0xffe0}, /* jal zero,.-0x20 */
	{W(0x001002ef), "jal\tt0,0x10800", SIM, BR | CALL, 0x10800}, /* jal t0,.+0x800 */
	{W(0x00008067), "ret", SIM, RET | NOFALL, 0}, /* jalr zero,0(ra) */
	{W(0x00028067), "jr\tt0", SIM, RET | NOFALL, 0}, /* jalr zero,0(t0) */
	{W(0x000780e7), "jalr\ta5", SIM, CALL | IND, 0}, /* jalr ra,0(a5) */
	{W(0x00078067), "jr\ta5", SIM, IND | NOFALL, 0}, /* jalr zero,0(a5) */
	{W(0x000e0367), "jalr\tt1,t3", SIM, CALL | IND, 0}, /* jalr t1,0(t3) */
	{W(0x04b50063), "beq\ta0,a1,0x10040", SIM, BR | COND, 0x10040}, /* beq a0,a1,.+0x40 */
	{W(0xfe051ce3), "bnez\ta0,0xfff8", SIM, BR | COND, 0xfff8}, /* bne a0,zero,.-8 */
	{W(0x7eb54fe3), "blt\ta0,a1,0x10ffe", SIM, BR | COND, 0x10ffe}, /* blt a0,a1,.+0xffe */
	{W(0x00a05863), "blez\ta0,0x10010", SIM, BR | COND, 0x10010}, /* bge zero,a0,.+16 */
	{W(0x80d66063), "bltu\ta2,a3,0xf000", SIM, BR | COND, 0xf000}, /* bltu a2,a3,.-0x1000 */
	{W(0x00d67263), "bgeu\ta2,a3,0x10004", SIM, BR | COND, 0x10004}, /* bgeu a2,a3,.+4 */
	{W(0x12345517), "auipc\ta0,0x12345", SIM, PCREL, 0x12355000}, /* auipc a0,0x12345 */
	{W(0xfffff317), "auipc\tt1,0xfffff", SIM, PCREL, 0xf000}, /* auipc t1,0xfffff */
	{H(0xaffd), "j\t0x107fe", SIM, BR | NOFALL, 0x107fe}, /* c.j .+0x7fe */
	{H(0xb001), "j\t0xf800", SIM, BR | NOFALL, 0xf800}, /* c.j .-0x800 */
	{H(0x8782), "jr\ta5", SIM, IND | NOFALL, 0}, /* c.jr a5 */
	{H(0x8082), "ret", SIM, RET | NOFALL, 0}, /* c.jr ra */
	{H(0x9782), "jalr\ta5", SIM, CALL | IND, 0}, /* c.jalr a5 */
	{H(0xc121), "beqz\ta0,0x10040", SIM, BR | COND, 0x10040}, /* c.beqz a0,.+0x40 */
	{H(0xf081), "bnez\ts1,0xff00", SIM, BR | COND, 0xff00}, /* c.bnez s1,.-0x100 */

	/* ---- out of line: jalr with an offset ---- */
	{W(0x008800e7), "jalr\t8(a6)", OOL, CALL | IND, 0}, /* jalr ra,8(a6) */

	/* ---- out of line: RV64I ---- */
	{W(0xfe010113), "add\tsp,sp,-32", OOL, 0, 0}, /* addi sp,sp,-32 */
	{W(0x00500513), "li\ta0,5", OOL, 0, 0}, /* addi a0,zero,5 */
	{W(0x00058513), "mv\ta0,a1", OOL, 0, 0}, /* addi a0,a1,0 */
	{W(0x00000013), "nop", OOL, PAD, 0}, /* addi zero,zero,0 */
	{W(0x0005051b), "sext.w\ta0,a0", OOL, 0, 0}, /* addiw a0,a0,0 */
	{W(0xff95851b), "addw\ta0,a1,-7", OOL, 0, 0}, /* addiw a0,a1,-7 */
	{W(0x0055a513), "slti\ta0,a1,5", OOL, 0, 0}, /* slti a0,a1,5 */
	{W(0x0015b513), "seqz\ta0,a1", OOL, 0, 0}, /* sltiu a0,a1,1 */
	{W(0xfff5c513), "not\ta0,a1", OOL, 0, 0}, /* xori a0,a1,-1 */
	{W(0x0ff5f513), "zext.b\ta0,a1", OOL, 0, 0}, /* andi a0,a1,255 */
	{W(0x0055e513), "or\ta0,a1,5", OOL, 0, 0}, /* ori a0,a1,5 */
	{W(0x03f59513), "sll\ta0,a1,0x3f", OOL, 0, 0}, /* slli a0,a1,63 */
	{W(0x0015d513), "srl\ta0,a1,0x1", OOL, 0, 0}, /* srli a0,a1,1 */
	{W(0x4205d513), "sra\ta0,a1,0x20", OOL, 0, 0}, /* srai a0,a1,32 */
	{W(0x01f5951b), "sllw\ta0,a1,0x1f", OOL, 0, 0}, /* slliw a0,a1,31 */
	{W(0x4035d51b), "sraw\ta0,a1,0x3", OOL, 0, 0}, /* sraiw a0,a1,3 */
	{W(0xfffff537), "lui\ta0,0xfffff", OOL, 0, 0}, /* lui a0,0xfffff */
	{W(0x00c58533), "add\ta0,a1,a2", OOL, 0, 0}, /* add a0,a1,a2 */
	{W(0x40b00533), "neg\ta0,a1", OOL, 0, 0}, /* sub a0,zero,a1 */
	{W(0x40b0053b), "negw\ta0,a1", OOL, 0, 0}, /* subw a0,zero,a1 */
	{W(0x00b03533), "snez\ta0,a1", OOL, 0, 0}, /* sltu a0,zero,a1 */
	{W(0x0005a533), "sltz\ta0,a1", OOL, 0, 0}, /* slt a0,a1,zero */
	{W(0x40c5d533), "sra\ta0,a1,a2", OOL, 0, 0}, /* sra a0,a1,a2 */
	{W(0xfff58503), "lb\ta0,-1(a1)", OOL, 0, 0}, /* lb a0,-1(a1) */
	{W(0x01813083), "ld\tra,24(sp)", OOL, 0, 0}, /* ld ra,24(sp) */
	{W(0x7ff5e503), "lwu\ta0,2047(a1)", OOL, 0, 0}, /* lwu a0,2047(a1) */
	{W(0x80a58023), "sb\ta0,-2048(a1)", OOL, 0, 0}, /* sb a0,-2048(a1) */
	{W(0x00113c23), "sd\tra,24(sp)", OOL, 0, 0}, /* sd ra,24(sp) */
	{W(0x0330000f), "fence\trw,rw", OOL, 0, 0}, /* fence rw,rw */
	{W(0x8330000f), "fence.tso", OOL, 0, 0}, /* fence.tso */
	{W(0x02c58533), "mul\ta0,a1,a2", OOL, 0, 0}, /* mul a0,a1,a2 */
	{W(0x02c5f53b), "remuw\ta0,a1,a2", OOL, 0, 0}, /* remuw a0,a1,a2 */
	{W(0x06b6352f), "amoadd.d.aqrl\ta0,a1,(a2)", OOL, 0, 0}, /* amoadd.d.aqrl a0,a1,(a2) */
	{W(0x08b6252f), "amoswap.w\ta0,a1,(a2)", OOL, 0, 0}, /* amoswap.w a0,a1,(a2) */

	/* ---- F and D ---- */
	{W(0x00813507), "fld\tfa0,8(sp)", OOL, 0, 0}, /* fld fa0,8(sp) */
	{W(0xfe843c27), "fsd\tfs0,-8(s0)", OOL, 0, 0}, /* fsd fs0,-8(s0) */
	{W(0x02c5f553), "fadd.d\tfa0,fa1,fa2", OOL, 0, 0}, /* fadd.d fa0,fa1,fa2 */
	{W(0x68c5f543), "fmadd.s\tfa0,fa1,fa2,fa3", OOL, 0, 0}, /* fmadd.s fa0,fa1,fa2,fa3 */
	{W(0x22b58553), "fmv.d\tfa0,fa1", OOL, 0, 0}, /* fsgnj.d fa0,fa1,fa1 */
	{W(0x22b59553), "fneg.d\tfa0,fa1", OOL, 0, 0}, /* fsgnjn.d fa0,fa1,fa1 */
	{W(0xc2051553), "fcvt.w.d\ta0,fa0,rtz", OOL, 0, 0}, /* fcvt.w.d a0,fa0,rtz */
	{W(0xd2050553), "fcvt.d.w\tfa0,a0", OOL, 0, 0}, /* fcvt.d.w fa0,a0 */
	{W(0xe2050553), "fmv.x.d\ta0,fa0", OOL, 0, 0}, /* fmv.x.d a0,fa0 */
	{W(0xf2050553), "fmv.d.x\tfa0,a0", OOL, 0, 0}, /* fmv.d.x fa0,a0 */
	{W(0xa2b52553), "feq.d\ta0,fa0,fa1", OOL, 0, 0}, /* feq.d a0,fa0,fa1 */
	{W(0xe2051553), "fclass.d\ta0,fa0", OOL, 0, 0}, /* fclass.d a0,fa0 */

	/* ---- compressed, out of line ---- */
	{H(0x0808), "add\ta0,sp,16", OOL, 0, 0}, /* c.addi4spn a0,sp,16 */
	{H(0x6588), "ld\ta0,8(a1)", OOL, 0, 0}, /* c.ld a0,8(a1) */
	{H(0xe588), "sd\ta0,8(a1)", OOL, 0, 0}, /* c.sd a0,8(a1) */
	{H(0x41c8), "lw\ta0,4(a1)", OOL, 0, 0}, /* c.lw a0,4(a1) */
	{H(0x2588), "fld\tfa0,8(a1)", OOL, 0, 0}, /* c.fld fa0,8(a1) */
	{H(0x157d), "add\ta0,a0,-1", OOL, 0, 0}, /* c.addi a0,-1 */
	{H(0x2505), "addw\ta0,a0,1", OOL, 0, 0}, /* c.addiw a0,1 */
	{H(0x5501), "li\ta0,-32", OOL, 0, 0}, /* c.li a0,-32 */
	{H(0x7139), "add\tsp,sp,-64", OOL, 0, 0}, /* c.addi16sp sp,-64 */
	{H(0x657d), "lui\ta0,0x1f", OOL, 0, 0}, /* c.lui a0,0x1f */
	{H(0x810d), "srl\ta0,a0,0x3", OOL, 0, 0}, /* c.srli a0,3 */
	{H(0x957d), "sra\ta0,a0,0x3f", OOL, 0, 0}, /* c.srai a0,63 */
	{H(0x890d), "and\ta0,a0,3", OOL, 0, 0}, /* c.andi a0,3 */
	{H(0x8d0d), "sub\ta0,a0,a1", OOL, 0, 0}, /* c.sub a0,a1 */
	{H(0x8d2d), "xor\ta0,a0,a1", OOL, 0, 0}, /* c.xor a0,a1 */
	{H(0x8d4d), "or\ta0,a0,a1", OOL, 0, 0}, /* c.or a0,a1 */
	{H(0x8d6d), "and\ta0,a0,a1", OOL, 0, 0}, /* c.and a0,a1 */
	{H(0x9d0d), "subw\ta0,a0,a1", OOL, 0, 0}, /* c.subw a0,a1 */
	{H(0x9d2d), "addw\ta0,a0,a1", OOL, 0, 0}, /* c.addw a0,a1 */
	{H(0x050e), "sll\ta0,a0,0x3", OOL, 0, 0}, /* c.slli a0,3 */
	{H(0x60a2), "ld\tra,8(sp)", OOL, 0, 0}, /* c.ldsp ra,8(sp) */
	{H(0x4512), "lw\ta0,4(sp)", OOL, 0, 0}, /* c.lwsp a0,4(sp) */
	{H(0x2522), "fld\tfa0,8(sp)", OOL, 0, 0}, /* c.fldsp fa0,8(sp) */
	{H(0x852e), "mv\ta0,a1", OOL, 0, 0}, /* c.mv a0,a1 */
	{H(0x952e), "add\ta0,a0,a1", OOL, 0, 0}, /* c.add a0,a1 */
	{H(0xe406), "sd\tra,8(sp)", OOL, 0, 0}, /* c.sdsp ra,8(sp) */
	{H(0xc22a), "sw\ta0,4(sp)", OOL, 0, 0}, /* c.swsp a0,4(sp) */
	{H(0xa42a), "fsd\tfa0,8(sp)", OOL, 0, 0}, /* c.fsdsp fa0,8(sp) */
	{H(0x0001), "nop", OOL, PAD, 0}, /* c.nop */

	/* ---- rejected ---- */
	{W(0x00000073), "ecall", REJ, SYS, 0}, /* ecall */
	{W(0x00100073), "ebreak", REJ, SYS | PAD, 0}, /* ebreak */
	{H(0x9002), "ebreak", REJ, SYS | PAD, 0}, /* c.ebreak */
	{W(0x00102573), "frflags\ta0", REJ, SYS, 0}, /* csrr a0,fflags */
	{W(0x00351073), "fscsr\ta0", REJ, SYS, 0}, /* csrw fcsr,a0 */
	{W(0xc0002573), "rdcycle\ta0", REJ, SYS, 0}, /* rdcycle a0 */
	{W(0x0000100f), "fence.i", REJ, SYS, 0}, /* fence.i */
	{W(0x1005a52f), "lr.w\ta0,(a1)", REJ, LR, 0}, /* lr.w a0,(a1) */
	{W(0x1405b52f), "lr.d.aq\ta0,(a1)", REJ, LR, 0}, /* lr.d.aq a0,(a1) */
	{W(0x1ac5b52f), "sc.d.rl\ta0,a2,(a1)", REJ, SC, 0}, /* sc.d.rl a0,a2,(a1) */
	{W(0xc0001073), "unimp", REJ, SYS | NOFALL | PAD, 0}, /* unimp */
	{H(0x0000), "unimp", REJ, SYS | NOFALL | PAD, 0}, /* c.unimp */

};
const size_t rv_nvectors = sizeof(rv_vectors) / sizeof(rv_vectors[0]);

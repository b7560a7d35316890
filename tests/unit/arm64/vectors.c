/* SPDX-License-Identifier: MIT */
/*
 * arm64 instruction vectors, each decoded at PC (0x401000).
 *
 * The text is what format() prints; every line was checked against GNU
 * objdump 2.40 (`aarch64-linux-gnu-objdump -d --adjust-vma=0x401000` on
 * the word), with objdump's "401010 <sym>" written 0x401010 and its
 * trailing "// alias" comments dropped. format_test.c repeats that check
 * whenever aarch64-linux-gnu-as and -objdump are installed. For stp
 * pre-index on sp the target column is the signed byte offset the
 * simulator applies (no BRANCH or PCREL flag: not an address).
 */
#include "a64_test.h"

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

#define NEG(x) ((uint64_t)-(int64_t)(x))

const struct a64_vec a64_vectors[] = {
	/* ---- simulated: the prologue ---- */
	{0xa9bf7bfd, "stp\tx29, x30, [sp, #-16]!", SIM, 0, NEG(16)},
	{0xa9bf53f3, "stp\tx19, x20, [sp, #-16]!", SIM, 0, NEG(16)},
	{0xa9b07bfd, "stp\tx29, x30, [sp, #-256]!", SIM, 0, NEG(256)},
	{0x29bf07e0, "stp\tw0, w1, [sp, #-8]!", SIM, 0, NEG(8)},
	{0xa98107e0, "stp\tx0, x1, [sp, #16]!", SIM, 0, 16},
	{0xa9bf7fff, "stp\txzr, xzr, [sp, #-16]!", SIM, 0, NEG(16)},

	/* ---- simulated: nop, prefetch ---- */
	{0xd503201f, "nop", SIM, PAD, 0},
	{0xd8000080, "prfm\tpldl1keep, 0x401010", SIM, PCREL, 0x401010},
	{0xd8000093, "prfm\tpstl2strm, 0x401010", SIM, PCREL, 0x401010},

	/* ---- simulated: branches ---- */
	{0x14000004, "b\t0x401010", SIM, BR | NOFALL, 0x401010},
	{0x17ffffff, "b\t0x400ffc", SIM, BR | NOFALL, 0x400ffc},
	{0x15ffffff, "b\t0x8400ffc", SIM, BR | NOFALL, 0x8400ffc},
	{0x94000000, "bl\t0x401000", SIM, BR | CALL, 0x401000},
	{0x97fffc00, "bl\t0x400000", SIM, BR | CALL, 0x400000},
	{0x54000081, "b.ne\t0x401010", SIM, BR | COND, 0x401010},
	{0x54ffffeb, "b.lt\t0x400ffc", SIM, BR | COND, 0x400ffc},
	{0x5400008c, "b.gt\t0x401010", SIM, BR | COND, 0x401010},
	{0x5400000e, "b.al\t0x401000", SIM, BR | NOFALL, 0x401000},
	{0x54000090, "bc.eq\t0x401010", SIM, BR | COND, 0x401010},
	{0x34000080, "cbz\tw0, 0x401010", SIM, BR | COND, 0x401010},
	{0xb5000081, "cbnz\tx1, 0x401010", SIM, BR | COND, 0x401010},
	{0xb4fffffe, "cbz\tx30, 0x400ffc", SIM, BR | COND, 0x400ffc},
	{0x36180080, "tbz\tw0, #3, 0x401010", SIM, BR | COND, 0x401010},
	{0xb7080081, "tbnz\tx1, #33, 0x401010", SIM, BR | COND, 0x401010},
	{0x37fffffe, "tbnz\tw30, #31, 0x400ffc", SIM, BR | COND, 0x400ffc},
	{0xd65f03c0, "ret", SIM, RET | NOFALL, 0},
	{0xd65f0020, "ret\tx1", SIM, RET | NOFALL, 0},
	{0xd61f0200, "br\tx16", SIM, IND | NOFALL, 0},
	{0xd63f0100, "blr\tx8", SIM, IND | CALL, 0},
	{0xd63f03c0, "blr\tx30", SIM, IND | CALL, 0},

	/* ---- simulated: pc-relative data ---- */
	{0x10000080, "adr\tx0, 0x401010", SIM, PCREL, 0x401010},
	{0x70000000, "adr\tx0, 0x401003", SIM, PCREL, 0x401003},
	{0x10fffffe, "adr\tx30, 0x400ffc", SIM, PCREL, 0x400ffc},
	{0x90000000, "adrp\tx0, 0x401000", SIM, PCREL, 0x401000},
	{0xb0000001, "adrp\tx1, 0x402000", SIM, PCREL, 0x402000},
	{0x90fffff0, "adrp\tx16, 0x3fd000", SIM, PCREL, 0x3fd000},
	{0x58000080, "ldr\tx0, 0x401010", SIM, PCREL, 0x401010},
	{0x18000080, "ldr\tw0, 0x401010", SIM, PCREL, 0x401010},
	{0x98000080, "ldrsw\tx0, 0x401010", SIM, PCREL, 0x401010},
	{0x58fffff1, "ldr\tx17, 0x400ffc", SIM, PCREL, 0x400ffc},

	/* ---- rejected ---- */
	{0xd4000001, "svc\t#0x0", REJ, SYS, 0},
	{0xd4200000, "brk\t#0x0", REJ, 0, 0},
	{0xd42dce00, "brk\t#0x6e70", REJ, 0, 0},
	{0xd4400000, "hlt\t#0x0", REJ, SYS, 0},
	{0xd4000002, "hvc\t#0x0", REJ, SYS, 0},
	{0xd4000003, "smc\t#0x0", REJ, SYS, 0},
	{0xd4a00001, "dcps1", REJ, SYS, 0},
	{0x00000000, "udf\t#0", REJ, PAD | NOFALL, 0},
	{0x0000dead, "udf\t#57005", REJ, PAD | NOFALL, 0},
	{0xd69f03e0, "eret", REJ, SYS | NOFALL, 0},
	{0xd6bf03e0, "drps", REJ, SYS | NOFALL, 0},
	{0xd50342df, "msr\tdaifset, #0x2", REJ, SYS, 0},
	{0xd50b7520, "ic\tivau, x0", REJ, SYS, 0},
	{0xd50b7b20, "dc\tcvau, x0", REJ, SYS, 0},
	{0xd50b7421, "dc\tzva, x1", REJ, SYS, 0},
	{0xd503241f, "bti", REJ, 0, 0},
	{0xd503245f, "bti\tc", REJ, 0, 0},
	{0xd503249f, "bti\tj", REJ, 0, 0},
	{0xd50324df, "bti\tjc", REJ, 0, 0},
	{0xd503233f, "paciasp", REJ, 0, 0},
	{0xd503237f, "pacibsp", REJ, 0, 0},
	{0xc85f7c01, "ldxr\tx1, [x0]", REJ, 0, 0},
	{0x885ffc01, "ldaxr\tw1, [x0]", REJ, 0, 0},
	{0x085f7c01, "ldxrb\tw1, [x0]", REJ, 0, 0},
	{0x485ffc01, "ldaxrh\tw1, [x0]", REJ, 0, 0},
	{0xc8027c01, "stxr\tw2, x1, [x0]", REJ, 0, 0},
	{0x8803fc04, "stlxr\tw3, w4, [x0]", REJ, 0, 0},
	{0xc87f0801, "ldxp\tx1, x2, [x0]", REJ, 0, 0},
	{0xc8230801, "stxp\tw3, x1, x2, [x0]", REJ, 0, 0},
	{0xc8238be1, "stlxp\tw3, x1, x2, [sp]", REJ, 0, 0},

	/* ---- out of line ---- */
	{0x1c000080, "ldr\ts0, 0x401010", OOL, PCREL, 0x401010},
	{0x5c000080, "ldr\td0, 0x401010", OOL, PCREL, 0x401010},
	{0x9c000080, "ldr\tq0, 0x401010", OOL, PCREL, 0x401010},
	{0x9cfffffd, "ldr\tq29, 0x400ffc", OOL, PCREL, 0x400ffc},
	{0xd65f0bff, "retaa", OOL, RET | NOFALL, 0},
	{0xd65f0fff, "retab", OOL, RET | NOFALL, 0},
	{0xd61f081f, "braaz\tx0", OOL, IND | NOFALL, 0},
	{0xd73f0820, "blraa\tx1, x0", OOL, IND | CALL, 0},
	{0xd73f0c3f, "blrab\tx1, sp", OOL, IND | CALL, 0},
	{0xd63f0c3f, "blrabz\tx1", OOL, IND | CALL, 0},
	{0xd71f0a30, "braa\tx17, x16", OOL, IND | NOFALL, 0},
	{0xd53bd040, "mrs\tx0, tpidr_el0", OOL, SYS, 0},
	{0xd53b4400, "mrs\tx0, fpcr", OOL, SYS, 0},
	{0xd51b4200, "msr\tnzcv, x0", OOL, SYS, 0},
	{0xd53be041, "mrs\tx1, cntvct_el0", OOL, SYS, 0},
	{0xd50323bf, "autiasp", OOL, 0, 0},
	{0xd503203f, "yield", OOL, 0, 0},
	{0xd503205f, "wfe", OOL, 0, 0},
	{0xd503229f, "csdb", OOL, 0, 0},
	{0xd50320ff, "xpaclri", OOL, 0, 0},
	{0xd50339bf, "dmb\tishld", OOL, 0, 0},
	{0xd5033bbf, "dmb\tish", OOL, 0, 0},
	{0xd5033f9f, "dsb\tsy", OOL, 0, 0},
	{0xd5033fdf, "isb", OOL, 0, 0},
	{0xd5033f5f, "clrex", OOL, 0, 0},
	{0x910003fd, "mov\tx29, sp", OOL, 0, 0},
	{0x910003bf, "mov\tsp, x29", OOL, 0, 0},
	{0xaa0103e0, "mov\tx0, x1", OOL, 0, 0},
	{0x2a0203e1, "mov\tw1, w2", OOL, 0, 0},
	{0x91004020, "add\tx0, x1, #0x10", OOL, 0, 0},
	{0x91404020, "add\tx0, x1, #0x10, lsl #12", OOL, 0, 0},
	{0xd10083ff, "sub\tsp, sp, #0x20", OOL, 0, 0},
	{0xf100041f, "cmp\tx0, #0x1", OOL, 0, 0},
	{0x3100041f, "cmn\tw0, #0x1", OOL, 0, 0},
	{0xf1000420, "subs\tx0, x1, #0x1", OOL, 0, 0},
	{0xa8c17bfd, "ldp\tx29, x30, [sp], #16", OOL, 0, 0},
	{0xa9017bfd, "stp\tx29, x30, [sp, #16]", OOL, 0, 0},
	{0xa9407bfd, "ldp\tx29, x30, [sp]", OOL, 0, 0},
	{0x6dbf27e8, "stp\td8, d9, [sp, #-16]!", OOL, 0, 0},
	{0xadbf07e0, "stp\tq0, q1, [sp, #-32]!", OOL, 0, 0},
	{0xa9bf7c1d, "stp\tx29, xzr, [x0, #-16]!", OOL, 0, 0},
	{0x28810fe2, "stp\tw2, w3, [sp], #8", OOL, 0, 0},
	{0xf9400020, "ldr\tx0, [x1]", OOL, 0, 0},
	{0xf94007e0, "ldr\tx0, [sp, #8]", OOL, 0, 0},
	{0xb9000fe0, "str\tw0, [sp, #12]", OOL, 0, 0},
};

const size_t a64_nvectors = sizeof(a64_vectors) / sizeof(a64_vectors[0]);

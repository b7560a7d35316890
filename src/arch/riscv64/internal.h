/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the pure riscv64 ISA files.
 *
 * RV64GC has two instruction lengths: 32-bit words and 16-bit compressed
 * parcels (the C extension). Every compressed instruction is an exact
 * shorthand of a 32-bit one, so fetch (compress.c) expands it, as the
 * hardware's decoder and the kernel's simulator do, and every other file
 * looks only at the 32-bit form plus the original length. One table of
 * classes, one formatter, one relocator and one simulator then serve both
 * lengths; compressed control flow (c.j, c.jr, c.jalr, c.beqz, c.bnez)
 * needs nothing of its own beyond its length (the link value is pc + 2).
 *
 * The simulator sees only struct np_insn (at trap time the site holds
 * c.ebreak), so decode.c packs what it needs into the 16-bit sim id: a
 * 4-bit kind and a 12-bit argument (registers), plus np_insn.target.
 */
#ifndef NP_ARCH_RISCV64_INTERNAL_H
#define NP_ARCH_RISCV64_INTERNAL_H

#include "arch/arch.h"

#define RV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* One fetched instruction. */
struct rv_insn {
	uint32_t x;   /* the 32-bit form (a compressed one expanded) */
	uint16_t c;   /* the compressed parcel, when len == 2 */
	uint8_t len;  /* 2 or 4 */
};

/* Fetch one instruction at code: 0, -ENODATA (avail too short) or
 * -EILSEQ (reserved encoding, or a length other than 16/32 bits). */
int rv_fetch(const uint8_t *code, size_t avail, struct rv_insn *in);
/* The 32-bit equivalent of a compressed parcel, 0 when it is reserved. */
uint32_t rv_expand(uint16_t c);

/* Fields of the 32-bit form. */
static inline unsigned rv_opcode(uint32_t x) { return x & 0x7f; }
static inline unsigned rv_rd(uint32_t x) { return x >> 7 & 31; }
static inline unsigned rv_funct3(uint32_t x) { return x >> 12 & 7; }
static inline unsigned rv_rs1(uint32_t x) { return x >> 15 & 31; }
static inline unsigned rv_rs2(uint32_t x) { return x >> 20 & 31; }
static inline unsigned rv_rs3(uint32_t x) { return x >> 27; }
static inline unsigned rv_funct7(uint32_t x) { return x >> 25; }

static inline int64_t rv_sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);

	return (int64_t)((v & ((m << 1) - 1)) ^ m) - (int64_t)m;
}

int64_t rv_imm_i(uint32_t x);
int64_t rv_imm_s(uint32_t x);
int64_t rv_imm_b(uint32_t x);
int64_t rv_imm_u(uint32_t x);
int64_t rv_imm_j(uint32_t x);

/* Encoders; the immediate must fit (callers check with rv_fits). */
uint32_t rv_enc_i(unsigned op, unsigned f3, unsigned rd, unsigned rs1, int64_t imm);
uint32_t rv_enc_b(unsigned f3, unsigned rs1, unsigned rs2, int64_t off);
uint32_t rv_enc_u(unsigned op, unsigned rd, int64_t imm);
uint32_t rv_enc_j(unsigned rd, int64_t off);

static inline bool rv_fits(int64_t v, unsigned bits)
{
	return v >= -(1ll << (bits - 1)) && v < (1ll << (bits - 1));
}

/* An auipc+addi/jalr pair reaches pc + [-2 GiB - 2 KiB, 2 GiB - 2 KiB). */
bool rv_fits_pair(int64_t off);
/* Split off for auipc (hi, already shifted) + a 12-bit signed lo. */
void rv_split(int64_t off, int64_t *hi, int64_t *lo);

/* Major opcodes. */
enum {
	RV_OP_LOAD = 0x03, RV_OP_LOAD_FP = 0x07, RV_OP_MISC_MEM = 0x0f,
	RV_OP_IMM = 0x13, RV_OP_AUIPC = 0x17, RV_OP_IMM_32 = 0x1b,
	RV_OP_STORE = 0x23, RV_OP_STORE_FP = 0x27, RV_OP_AMO = 0x2f,
	RV_OP_OP = 0x33, RV_OP_LUI = 0x37, RV_OP_OP_32 = 0x3b,
	RV_OP_MADD = 0x43, RV_OP_MSUB = 0x47, RV_OP_NMSUB = 0x4b, RV_OP_NMADD = 0x4f,
	RV_OP_FP = 0x53, RV_OP_BRANCH = 0x63, RV_OP_JALR = 0x67, RV_OP_JAL = 0x6f,
	RV_OP_SYSTEM = 0x73,
};

/* Registers by ABI role. */
enum { RV_ZERO = 0, RV_RA = 1, RV_SP = 2, RV_GP = 3, RV_TP = 4, RV_T0 = 5, RV_A0 = 10 };

/* Simulator kinds, the top 4 bits of np_insn.sim. The branch kinds are
 * in funct3 order after RV_SIM_BEQ (funct3 2 and 3 do not exist). */
enum rv_sim_kind {
	RV_SIM_JAL = 1, /* arg: rd; target */
	RV_SIM_JALR,    /* arg: rd | rs1 << 5 (only the offset-0 form) */
	RV_SIM_AUIPC,   /* arg: rd; target = the value */
	RV_SIM_BEQ,     /* arg: rs1 | rs2 << 5; target */
	RV_SIM_BNE,
	RV_SIM_BLT,
	RV_SIM_BGE,
	RV_SIM_BLTU,
	RV_SIM_BGEU,
	RV_SIM_NKINDS,
};

#define RV_SIM(kind, arg) ((uint16_t)((unsigned)(kind) << 12 | (unsigned)(arg)))
#define RV_SIM_KIND(id)   ((unsigned)(id) >> 12)
#define RV_SIM_ARG(id)    ((unsigned)(id) & 0xfffu)
_Static_assert(RV_SIM_NKINDS <= 16, "sim kind must fit in 4 bits");

/* A growing output buffer that knows the pc its first byte runs at. */
struct rv_out {
	uint8_t *buf;
	size_t cap;
	size_t len;
	uint64_t pc;
};

static inline uint64_t rv_out_pc(const struct rv_out *o)
{
	return o->pc + o->len;
}

int rv_out_u16(struct rv_out *o, uint16_t v);
int rv_out_u32(struct rv_out *o, uint32_t v);
/* Jump to 'to': jal x0 within +-1 MiB, else auipc+jalr through the lowest
 * register of 'scratch' (a bit mask); -ERANGE when neither can. */
int rv_out_jump(struct rv_out *o, uint64_t to, uint64_t scratch);
/* rd = value, pc-relative (auipc+addi), or -ERANGE beyond +-2 GiB. */
int rv_out_addr(struct rv_out *o, unsigned rd, uint64_t value);
/* The lowest register of mask other than those in 'not', or -1. */
int rv_pick(uint64_t mask, uint64_t not);

/* The registers an instruction reads and writes (regs.c). */
void rv_uses(uint32_t x, struct np_reg_use *u);

/* vecscan.c: does the code at fn touch floating-point or vector state? */
int rv_vector_state_used(uint64_t fn, const struct np_mem *mem);

/* The np_isa hooks. */
int rv_decode(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out);
int rv_format(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap);
int rv_relocate(const struct np_reloc *r);
int rv_relocate_via(const struct np_reloc *r, const struct np_reloc_scratch *s);
int rv_simulate(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem);
int rv_emit_jump(uint8_t *buf, uint64_t from, uint64_t to);
int rv_emit_trap(uint8_t *buf);
int rv_emit_jump_any(uint8_t *buf, size_t cap, uint64_t from, uint64_t to);
int rv_emit_jump_via(uint8_t *buf, size_t cap, uint64_t from, uint64_t to, uint64_t scratch);
int rv_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		      const struct np_branch_sink *sink);
int rv_frame_effect(const uint8_t *code, size_t avail, uint64_t pc, struct np_frame_effect *out);
bool rv_patch_needs_stop(const uint8_t *old, const uint8_t *new_, size_t len, uint64_t addr);
int rv_reg_use(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out);
/* usdt.c: a USDT argument's operand (np_isa hook). */
int rv_usdt_operand(const char *text, size_t len, struct np_usdt_arg *out,
		    struct np_usdt_span *sym, const char **why);
uint64_t rv_pair_target(const uint8_t *code, size_t avail, uint64_t pc);

#endif /* NP_ARCH_RISCV64_INTERNAL_H */

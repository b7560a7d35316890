/* SPDX-License-Identifier: MIT */
/*
 * Branch targets of a whole function, so that the core never displaces
 * bytes a jump lands inside.
 *
 * RISC-V code is a sweep of 2- and 4-byte instructions, so a linear
 * decode finds every direct target. An indirect jump that is not a
 * return (`jr a5`) may land anywhere; unless it is proved to be the
 * switch table GCC emits for PIC code, it is counted as unresolved, and
 * the core then displaces no more than the first instruction:
 *
 *       li    rB, N-1             (or N, with bgeu)
 *       bltu  rB, rI, default     (or bgeu rI, rB, default)
 *       auipc rT, %pcrel_hi(TABLE)
 *       addi  rT, rT, %pcrel_lo
 *       slli  rS, rI, 2           (or, for a 32-bit index,
 *                                  slli rX, rI, 32 ; srli rS, rX, 30)
 *       add   rP, rS, rT          (either order)
 *       lw    rE, 0(rP)
 *       add   rJ, rE, rT          (either order; rT may be a copy)
 *       jr    rJ
 *
 * Any other indirect jump is reported unresolved, computed (loaded_at
 * 0): where its register's value comes from would take pairing every
 * auipc with its addi, which a linear scan cannot always do (the
 * planner's rule for loaded pointers, x86-64's, needs every address the
 * function forms). A tail call after the frame is released lands
 * outside the function's displaced bytes by the planner's stack heights
 * instead (docs/design.md, "Indirect jumps").
 *
 * Entries are int32 offsets from TABLE, read through np_mem; the bound
 * gives their number. The bound may test rI or its sext.w copy: either
 * way an index that passes is in [0, N) and so is its zero extension. Each value is followed back through the
 * instructions that wrote it, within the last RV_RING instructions and
 * never across a jump or a call. Words that are not RV64GC (data, or
 * another extension) are skipped by the length their low bits give; each
 * run of them counts as one unresolved jump, since it may hide one.
 */
#include <errno.h>

#include "arch/riscv64/internal.h"

#define RV_RING      24
#define RV_MAX_TABLE 65536

struct scan {
	const uint8_t *code;
	uint64_t pc;
	size_t ring[RV_RING]; /* offsets of the latest instructions, oldest first */
	unsigned n;
};

static uint32_t word_at(const struct scan *s, unsigned i)
{
	struct rv_insn in;

	rv_fetch(s->code + s->ring[i], 4, &in); /* decoded once already: cannot fail */
	return in.x;
}

/* The latest instruction before ring index 'from' that writes reg, or -1
 * (also at a jump or call in between: the value may come from elsewhere). */
static int writer(const struct scan *s, int from, unsigned reg)
{
	for (int i = from - 1; i >= 0; i--) {
		uint32_t x = word_at(s, (unsigned)i);
		struct np_reg_use u;

		if (rv_opcode(x) == RV_OP_JAL || rv_opcode(x) == RV_OP_JALR)
			return -1;
		rv_uses(x, &u);
		if (u.written >> reg & 1)
			return i;
	}
	return -1;
}

static bool is_add(uint32_t x)
{
	return (x & 0xfe00707fu) == 0x00000033u;
}

/* The value auipc+addi put in reg as seen at ring index 'at', or 0. */
static uint64_t pcrel_value(const struct scan *s, int at, unsigned reg)
{
	int a = writer(s, at, reg), b;
	uint32_t x;

	if (a < 0)
		return 0;
	x = word_at(s, (unsigned)a);
	if ((x & 0x707fu) == 0x13 && rv_rs1(x) == rv_rd(x) && (b = writer(s, a, reg)) >= 0 &&
	    rv_opcode(word_at(s, (unsigned)b)) == RV_OP_AUIPC)
		return s->pc + s->ring[b] + (uint64_t)rv_imm_u(word_at(s, (unsigned)b)) +
		       (uint64_t)rv_imm_i(x);
	if ((x & 0x707fu) == 0x13 && rv_imm_i(x) == 0) /* mv reg, other */
		return pcrel_value(s, a, rv_rs1(x));
	return 0;
}

/* li reg, imm as seen at 'at': 0 or -ENOENT. */
static int li_value(const struct scan *s, int at, unsigned reg, int64_t *v)
{
	int a = writer(s, at, reg);
	uint32_t x = a >= 0 ? word_at(s, (unsigned)a) : 0;

	if (a < 0 || (x & 0xf807fu) != 0x13) /* addi reg, zero, imm */
		return -ENOENT;
	*v = rv_imm_i(x);
	return 0;
}

/* Is r, at ring index 'at', the index idx or its sext.w (addiw r, idx, 0)? */
static bool same_index(const struct scan *s, int at, unsigned r, unsigned idx)
{
	int a;
	uint32_t x;

	if (r == idx)
		return true;
	a = writer(s, at, r);
	x = a >= 0 ? word_at(s, (unsigned)a) : 0;
	return a >= 0 && (x & 0xfff0707fu) == 0x1b && rv_rs1(x) == idx &&
	       writer(s, at, idx) < a; /* idx unchanged since the copy */
}

/* How many entries the bound check before ring index 'at' allows for
 * index register idx; 0 when none is found. */
static uint64_t table_size(const struct scan *s, int at, unsigned idx)
{
	for (int i = at - 1; i >= 0; i--) {
		uint32_t x = word_at(s, (unsigned)i);
		int64_t v;

		if (rv_opcode(x) != RV_OP_BRANCH) {
			struct np_reg_use u;

			rv_uses(x, &u);
			if ((u.written >> idx & 1) || rv_opcode(x) == RV_OP_JAL ||
			    rv_opcode(x) == RV_OP_JALR)
				return 0;
			continue;
		}
		if (rv_funct3(x) == 6 && same_index(s, i, rv_rs2(x), idx) &&
		    !li_value(s, i, rv_rs1(x), &v))
			return v >= 0 ? (uint64_t)v + 1 : 0; /* bltu rB, rI: rI > N-1 leaves */
		if (rv_funct3(x) == 7 && same_index(s, i, rv_rs1(x), idx) &&
		    !li_value(s, i, rv_rs2(x), &v))
			return v >= 0 ? (uint64_t)v : 0;     /* bgeu rI, rB: rI >= N leaves */
		return 0;
	}
	return 0;
}

struct table {
	uint64_t base, n;
};

/* rP = (rI << 2) + TABLE, as seen at ring index 'at'; the index register. */
static int scaled_index(const struct scan *s, int at, unsigned p, uint64_t base, int *where)
{
	int a = writer(s, at, p);
	uint32_t x = a >= 0 ? word_at(s, (unsigned)a) : 0;

	if (a < 0 || !is_add(x))
		return -1;
	for (int k = 0; k < 2; k++) {
		unsigned sreg = k ? rv_rs2(x) : rv_rs1(x), treg = k ? rv_rs1(x) : rv_rs2(x);
		int b = writer(s, a, sreg);
		uint32_t y = b >= 0 ? word_at(s, (unsigned)b) : 0;

		if (b < 0 || pcrel_value(s, a, treg) != base)
			continue;
		if ((y & 0xfc00707fu) == 0x00001013 && (y >> 20 & 0x3f) == 2) { /* slli rS, rI, 2 */
			*where = b;
			return (int)rv_rs1(y);
		}
		if ((y & 0xfc00707fu) == 0x00005013 && (y >> 20 & 0x3f) == 30) { /* srli rS, rX, 30 */
			int c = writer(s, b, rv_rs1(y));
			uint32_t z = c >= 0 ? word_at(s, (unsigned)c) : 0;

			if (c >= 0 && (z & 0xfc00707fu) == 0x00001013 && (z >> 20 & 0x3f) == 32) {
				*where = c; /* slli rX, rI, 32 */
				return (int)rv_rs1(z);
			}
		}
	}
	return -1;
}

/* The table behind `jr rJ` at the newest ring slot, or n = 0. */
static struct table match_table(const struct scan *s, unsigned rj)
{
	int last = (int)s->n - 1, a = writer(s, last, rj);
	uint32_t x = a >= 0 ? word_at(s, (unsigned)a) : 0;

	if (a < 0 || !is_add(x))
		return (struct table){0, 0};
	for (int k = 0; k < 2; k++) {
		unsigned ereg = k ? rv_rs2(x) : rv_rs1(x), treg = k ? rv_rs1(x) : rv_rs2(x);
		uint64_t base = pcrel_value(s, a, treg);
		int l = writer(s, a, ereg), at, idx;
		uint32_t y = l >= 0 ? word_at(s, (unsigned)l) : 0;

		if (!base || l < 0 || (y & 0xfff0707fu) != 0x00002003) /* lw rE, 0(rP) */
			continue;
		idx = scaled_index(s, l, rv_rs1(y), base, &at);
		if (idx > 0)
			return (struct table){base, table_size(s, at, (unsigned)idx)};
	}
	return (struct table){0, 0};
}

/* The entries of t as targets of the jr at from. */
static bool report_table(const struct table *t, const struct np_mem *mem, uint64_t from,
			 const struct np_branch_sink *sink)
{
	if (!t->n || t->n > RV_MAX_TABLE || !mem || !mem->read)
		return false;
	for (uint64_t i = 0; i < t->n; i++) {
		int32_t e;

		if (mem->read(mem->cookie, t->base + 4 * i, &e, 4))
			return false; /* entries reported so far stay: more targets is safe */
		sink->target(sink->cookie, from, t->base + (uint64_t)(int64_t)e);
	}
	return true;
}

static void unresolved_at(const struct np_branch_sink *sink, uint64_t from)
{
	if (sink->unresolved)
		sink->unresolved(sink->cookie, from, 0);
}

static void push(struct scan *s, size_t off)
{
	if (s->n == RV_RING) {
		for (unsigned i = 1; i < RV_RING; i++)
			s->ring[i - 1] = s->ring[i];
		s->n--;
	}
	s->ring[s->n++] = off;
}

int rv_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		      const struct np_branch_sink *sink)
{
	struct scan s = {.code = code, .pc = pc, .n = 0};
	int unresolved = 0;
	bool in_bad = false;

	for (size_t off = 0; off + 2 <= len;) {
		struct np_insn in;
		int err = rv_decode(code + off, len - off, pc + off, &in);

		if (err == -ENODATA)
			break;
		if (err) { /* the low bits still give the length */
			if (!in_bad) {
				unresolved++;
				unresolved_at(sink, pc + off);
			}
			in_bad = true;
			s.n = 0;
			off += (code[off] & 3) == 3 && (code[off] & 0x1f) != 0x1f ? 4 : 2;
			continue;
		}
		in_bad = false;
		push(&s, off);
		if (in.flags & NP_INSN_BRANCH) {
			sink->target(sink->cookie, pc + off, in.target);
		} else if ((in.flags & NP_INSN_INDIRECT) && !(in.flags & NP_INSN_CALL)) {
			struct table t = match_table(&s, rv_rs1(word_at(&s, s.n - 1)));

			if (!report_table(&t, mem, pc + off, sink)) {
				unresolved++;
				unresolved_at(sink, pc + off);
			}
		}
		off += in.len;
	}
	return unresolved;
}

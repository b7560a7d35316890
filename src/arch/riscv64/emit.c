/* SPDX-License-Identifier: MIT */
/*
 * Immediates, encoders and the jump forms.
 *
 *   jal   x0, off         4 bytes, +-1 MiB: the JUMP patch when a
 *                         trampoline sits that close
 *   auipc r, hi           8 bytes, +-2 GiB, through a register r that
 *   jalr  x0, lo(r)       the free-register analysis proved dead
 *   c.ebreak              2 bytes: the breakpoint. Every site can take
 *                         it, a compressed one included; the rest of a
 *                         4-byte instruction under it is never run.
 *
 * RISC-V has no jump that touches no register and reaches further than
 * jal, hence emit_jump_via(): beyond +-1 MiB a jump needs a dead register.
 */
#include <errno.h>

#include "arch/riscv64/internal.h"

#define RV_JAL_REACH (1ll << 20)

int64_t rv_imm_i(uint32_t x)
{
	return (int32_t)x >> 20;
}

int64_t rv_imm_s(uint32_t x)
{
	return (int64_t)((int32_t)x >> 25) * 32 + (int64_t)(x >> 7 & 31);
}

/* imm[12|10:5] in 31:25, imm[4:1|11] in 11:7 */
int64_t rv_imm_b(uint32_t x)
{
	uint32_t v = (x >> 31) << 12 | (x >> 25 & 0x3f) << 5 | (x >> 8 & 15) << 1 | (x >> 7 & 1) << 11;

	return rv_sext(v, 13);
}

int64_t rv_imm_u(uint32_t x)
{
	return (int32_t)(x & 0xfffff000u);
}

/* imm[20|10:1|11|19:12] in 31:12 */
int64_t rv_imm_j(uint32_t x)
{
	uint32_t v = (x >> 31) << 20 | (x >> 21 & 0x3ff) << 1 | (x >> 20 & 1) << 11 |
		     (x >> 12 & 0xff) << 12;

	return rv_sext(v, 21);
}

uint32_t rv_enc_i(unsigned op, unsigned f3, unsigned rd, unsigned rs1, int64_t imm)
{
	return ((uint32_t)imm & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}

uint32_t rv_enc_b(unsigned f3, unsigned rs1, unsigned rs2, int64_t off)
{
	uint32_t u = (uint32_t)off;

	return (u >> 12 & 1) << 31 | (u >> 5 & 0x3f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 |
	       (u >> 1 & 15) << 8 | (u >> 11 & 1) << 7 | RV_OP_BRANCH;
}

uint32_t rv_enc_u(unsigned op, unsigned rd, int64_t imm)
{
	return ((uint32_t)imm & 0xfffff000u) | rd << 7 | op;
}

uint32_t rv_enc_j(unsigned rd, int64_t off)
{
	uint32_t u = (uint32_t)off;

	return (u >> 20 & 1) << 31 | (u >> 1 & 0x3ff) << 21 | (u >> 11 & 1) << 20 |
	       (u >> 12 & 0xff) << 12 | rd << 7 | RV_OP_JAL;
}

/* auipc adds a sign-extended 32-bit hi; the lo then adds -2048..2047. */
bool rv_fits_pair(int64_t off)
{
	return off >= INT32_MIN - 2048ll && off < INT32_MAX - 2047ll;
}

void rv_split(int64_t off, int64_t *hi, int64_t *lo)
{
	*lo = rv_sext((uint64_t)off, 12);
	*hi = off - *lo;
}

int rv_out_u16(struct rv_out *o, uint16_t v)
{
	if (o->cap - o->len < 2)
		return -ENOSPC;
	o->buf[o->len++] = (uint8_t)v;
	o->buf[o->len++] = (uint8_t)(v >> 8);
	return 0;
}

int rv_out_u32(struct rv_out *o, uint32_t v)
{
	if (o->cap - o->len < 4)
		return -ENOSPC;
	for (int i = 0; i < 4; i++)
		o->buf[o->len++] = (uint8_t)(v >> 8 * i);
	return 0;
}

int rv_pick(uint64_t mask, uint64_t not)
{
	mask &= ~not & ~1ull; /* never x0 */
	for (int i = 1; i < 32; i++)
		if (mask >> i & 1)
			return i;
	return -1;
}

static int out_pair(struct rv_out *o, uint32_t second, unsigned r, uint64_t to)
{
	int64_t hi, lo, off = (int64_t)(to - rv_out_pc(o));

	if (!rv_fits_pair(off))
		return -ERANGE;
	if (o->cap - o->len < 8)
		return -ENOSPC;
	rv_split(off, &hi, &lo);
	rv_out_u32(o, rv_enc_u(RV_OP_AUIPC, r, hi));
	return rv_out_u32(o, second | ((uint32_t)lo & 0xfff) << 20);
}

int rv_out_jump(struct rv_out *o, uint64_t to, uint64_t scratch)
{
	int64_t off = (int64_t)(to - rv_out_pc(o));
	int r;

	if (off >= -RV_JAL_REACH && off < RV_JAL_REACH)
		return rv_out_u32(o, rv_enc_j(RV_ZERO, off));
	r = rv_pick(scratch, 0);
	if (r < 0)
		return -ERANGE;
	return out_pair(o, rv_enc_i(RV_OP_JALR, 0, RV_ZERO, (unsigned)r, 0), (unsigned)r, to);
}

int rv_out_addr(struct rv_out *o, unsigned rd, uint64_t value)
{
	return out_pair(o, rv_enc_i(RV_OP_IMM, 0, rd, rd, 0), rd, value);
}

int rv_emit_jump(uint8_t *buf, uint64_t from, uint64_t to)
{
	struct rv_out o = {buf, 4, 0, from};

	return rv_out_jump(&o, to, 0) ? -ERANGE : 0;
}

int rv_emit_trap(uint8_t *buf)
{
	buf[0] = 0x02; /* c.ebreak: 0x9002 */
	buf[1] = 0x90;
	return 0;
}

int rv_emit_jump_any(uint8_t *buf, size_t cap, uint64_t from, uint64_t to)
{
	return rv_emit_jump_via(buf, cap, from, to, 0);
}

int rv_emit_jump_via(uint8_t *buf, size_t cap, uint64_t from, uint64_t to, uint64_t scratch)
{
	struct rv_out o = {buf, cap, 0, from};
	int err = rv_out_jump(&o, to, scratch);

	return err ? err : (int)o.len;
}

/* One aligned store that another hart fetches whole: a 16-bit parcel (the
 * c.ebreak going in or out), or a 32-bit word at a 4-byte boundary that
 * was one instruction and becomes one (jal over a 4-byte instruction).
 * Anything else (auipc+jalr, a jal over two compressed instructions or at
 * a 2-byte boundary, where a hart could execute a new half beside an old
 * one) is written with every other thread stopped. */
bool rv_patch_needs_stop(const uint8_t *old, const uint8_t *new_, size_t len, uint64_t addr)
{
	struct rv_insn a, b;

	if (len == 2 && addr % 2 == 0)
		return false;
	if (len != 4 || addr % 4 || rv_fetch(old, len, &a) || rv_fetch(new_, len, &b))
		return true;
	return a.len != 4 || b.len != 4;
}

/* SPDX-License-Identifier: MIT */
/*
 * Branch and address encodings: the JUMP patch, the breakpoint, and the
 * building blocks relocate.c uses.
 *
 *   b      imm26            +-128 MiB, no register: the JUMP patch
 *   brk    #0x6e70          the TRAP patch
 *   ldr    x16, 8           the linker's veneer, any distance; x16 is the
 *   br     x16              intra-procedure-call scratch register that
 *   .quad  to               AAPCS64 lets veneers clobber, and `br x16`
 *                           is accepted by a `bti c` or `bti j` pad
 *   adr    xd, imm21        +-1 MiB
 *   adrp   xd, page         +-4 GiB, then
 *   add    xd, xd, #lo12    for an address that is not page aligned
 *   ldr    xd, 8            any address: a literal, jumped over
 *   b      12
 *   .quad  addr
 *
 * A direct branch never needs a landing pad, so every b nanoprobe writes
 * is valid under BTI; only the veneer is indirect, through x16.
 */
#include <errno.h>

#include "arch/arm64/internal.h"

#define B_REACH (1ll << 27) /* imm26 words */

int a64_out_word(struct a64_out *o, uint32_t w)
{
	if (o->cap < o->len || o->cap - o->len < 4)
		return -ENOSPC;
	a64_put_word(o->buf + o->len, w);
	o->len += 4;
	return 0;
}

static int out_quad(struct a64_out *o, uint64_t v)
{
	int err = a64_out_word(o, (uint32_t)v);

	return err ? err : a64_out_word(o, (uint32_t)(v >> 32));
}

int a64_out_b(struct a64_out *o, uint64_t to)
{
	int64_t off = (int64_t)(to - a64_out_pc(o));

	if (off < -B_REACH || off >= B_REACH || (off & 3))
		return -ERANGE;
	return a64_out_word(o, 0x14000000u | ((uint32_t)(off >> 2) & 0x3ffffffu));
}

static int out_room(const struct a64_out *o, size_t n)
{
	return o->cap >= o->len && o->cap - o->len >= n ? 0 : -ENOSPC;
}

int a64_out_b_any(struct a64_out *o, uint64_t to)
{
	int err = a64_out_b(o, to);

	if (err != -ERANGE)
		return err;
	if ((err = out_room(o, 16)))
		return err;
	a64_out_word(o, 0x58000040u | A64_X16); /* ldr x16, .+8 */
	a64_out_word(o, 0xd61f0000u | A64_X16 << 5); /* br x16 */
	return out_quad(o, to);
}

static uint32_t adr_word(uint32_t op, unsigned rd, int64_t imm21)
{
	uint32_t u = (uint32_t)imm21;

	return op | (u & 3) << 29 | ((u >> 2) & 0x7ffffu) << 5 | rd;
}

int a64_out_addr(struct a64_out *o, unsigned rd, uint64_t addr)
{
	uint64_t pc = a64_out_pc(o);
	int64_t off = (int64_t)(addr - pc);
	int64_t pages = (int64_t)((addr & ~0xfffull) - (pc & ~0xfffull)) / 4096;
	int err;

	if (a64_fits(off, 21))
		return a64_out_word(o, adr_word(0x10000000u, rd, off));
	if (a64_fits(pages, 21)) {
		if ((err = out_room(o, (addr & 0xfff) ? 8 : 4)))
			return err;
		a64_out_word(o, adr_word(0x90000000u, rd, pages));
		if (addr & 0xfff) /* add xd, xd, #lo12 */
			a64_out_word(o, 0x91000000u | (uint32_t)(addr & 0xfff) << 10 | rd << 5 | rd);
		return 0;
	}
	if ((err = out_room(o, 16)))
		return err;
	a64_out_word(o, 0x58000040u | rd); /* ldr xd, .+8 */
	a64_out_word(o, 0x14000003u);      /* b .+12 */
	return out_quad(o, addr);
}

/* ------------------------------------------------------------------ */
/* np_isa hooks                                                        */

int a64_emit_jump(uint8_t *buf, uint64_t from, uint64_t to)
{
	struct a64_out o = {.buf = buf, .cap = 4, .pc = from};
	int err = a64_out_b(&o, to);

	return err ? err : 4;
}

int a64_emit_trap(uint8_t *buf)
{
	a64_put_word(buf, A64_BRK_NP);
	return 4;
}

/* Beyond +-128 MiB this is the x16 veneer: callers use it only where x16
 * is free (a function entry, a call, a branch to another function). */
int a64_emit_jump_any(uint8_t *buf, size_t cap, uint64_t from, uint64_t to)
{
	struct a64_out o = {.buf = buf, .cap = cap, .pc = from};
	int err = a64_out_b_any(&o, to);

	return err ? err : (int)o.len;
}

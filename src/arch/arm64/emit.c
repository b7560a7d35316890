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
 *   adrp   xs, page         +-4 GiB through a register the free-register
 *   add    xs, xs, #lo12    analysis proved dead (x16 and x17 first, the
 *   br     xs               registers a bti c pad accepts): the long
 *                           JUMP patch, and far jumps in trampolines
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

int a64_out_veneer(struct a64_out *o, unsigned reg, uint64_t to)
{
	int err = out_room(o, 16);

	if (err)
		return err;
	a64_out_word(o, 0x58000040u | reg);      /* ldr xr, .+8 */
	a64_out_word(o, 0xd61f0000u | reg << 5); /* br xr */
	return out_quad(o, to);
}

int a64_out_b_any(struct a64_out *o, uint64_t to)
{
	int err = a64_out_b(o, to);

	return err != -ERANGE ? err : a64_out_veneer(o, A64_X16, to);
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

/* The register a far jump goes through: x16, x17 (what a `bti c` or
 * `bti j` pad accepts a br through, should the target ever be guarded),
 * then the lowest other one. -1 when scratch has none. */
int a64_pick(uint64_t scratch)
{
	if (scratch & (1ull << A64_X16))
		return A64_X16;
	if (scratch & (1ull << A64_X17))
		return A64_X17;
	for (int i = 0; i < 31; i++)
		if (scratch >> i & 1)
			return i;
	return -1;
}

int a64_out_jump(struct a64_out *o, uint64_t to, uint64_t scratch)
{
	int err = a64_out_b(o, to), r = a64_pick(scratch);
	uint64_t pc = a64_out_pc(o);
	int64_t pages = (int64_t)((to & ~0xfffull) - (pc & ~0xfffull)) / 4096;

	if (err != -ERANGE)
		return err;
	if (r < 0 || !a64_fits(pages, 21) || (to & 3))
		return -ERANGE;
	if ((err = out_room(o, 12)))
		return err;
	a64_out_word(o, adr_word(0x90000000u, (unsigned)r, pages)); /* adrp xr, page */
	a64_out_word(o, 0x91000000u | (uint32_t)(to & 0xfff) << 10 | (unsigned)r << 5 | (unsigned)r);
	return a64_out_word(o, 0xd61f0000u | (unsigned)r << 5); /* br xr */
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

/* b when the trampoline is in its reach, else adrp+add+br (12 bytes)
 * through a register of scratch. */
int a64_emit_jump_via(uint8_t *buf, size_t cap, uint64_t from, uint64_t to, uint64_t scratch)
{
	struct a64_out o = {.buf = buf, .cap = cap, .pc = from};
	int err = a64_out_jump(&o, to, scratch);

	return err ? err : (int)o.len;
}

/* Which words another thread may execute while they change (Arm ARM
 * B2.2.5, concurrent modification and execution of instructions): b, bl,
 * brk, hvc, isb, nop, smc, svc. A change between two of those is seen
 * whole, old or new; any other word needs the other threads stopped. */
static bool a64_concurrent_ok(uint32_t w)
{
	return a64_is_b(w) || a64_is_bl(w) || a64_is_brk(w) || a64_is_nop(w) ||
	       (w & 0xffe0001fu) == 0xd4000002u /* hvc */ ||
	       (w & 0xffe0001fu) == 0xd4000003u /* smc */ || a64_is_svc(w) ||
	       (w & 0xfffff0ffu) == 0xd50330dfu /* isb */;
}

bool a64_patch_needs_stop(const uint8_t *old, const uint8_t *new_, size_t len, uint64_t addr)
{
	if (addr & 3 || len & 3)
		return true;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t a = a64_word(old + i), b = a64_word(new_ + i);

		if (a != b && !(a64_concurrent_ok(a) && a64_concurrent_ok(b)))
			return true;
	}
	return false;
}

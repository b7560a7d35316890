/* SPDX-License-Identifier: MIT */
/*
 * Jump encodings: the JUMP patch, the breakpoint, and the building
 * blocks relocate.c uses. None of them touches a register or rflags:
 * trampolines and relocated code run with the program's state live.
 *
 *   eb rel8                      jmp   (2 bytes, +-127)
 *   e9 rel32                     jmp   (5 bytes, +-2 GiB): the JUMP patch
 *   ff 25 00 00 00 00 <imm64>    jmp *0(%rip) (14 bytes, anywhere): reads
 *                                its target from the 8 bytes after it
 *   0f 80+cc rel32               jcc   (6 bytes)
 *   70+cc^1 0e <abs jmp>         jcc out of reach: inverted, over an
 *                                absolute jmp (16 bytes)
 *   68 imm32                     push $imm32, sign-extended to 64 bits
 *   c7 44 24 04 imm32            movl $imm32, 4(%rsp): fixes the top half
 */
#include <errno.h>
#include <string.h>

#include "arch/x86_64/internal.h"

#define ABS_JMP_LEN 14

int x86_out_bytes(struct x86_out *o, const void *p, size_t n)
{
	if (o->cap - o->len < n)
		return -ENOSPC;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

int x86_out_u32(struct x86_out *o, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	return x86_out_bytes(o, b, 4);
}

static int out_op_rel32(struct x86_out *o, const uint8_t *op, size_t n, uint64_t to)
{
	int64_t rel = (int64_t)(to - (x86_out_pc(o) + n + 4));
	int err;

	if (!x86_fits_i32(rel))
		return -ERANGE;
	if (o->cap - o->len < n + 4)
		return -ENOSPC;
	err = x86_out_bytes(o, op, n);
	return err ? err : x86_out_u32(o, (uint32_t)rel);
}

static int out_abs_jmp(struct x86_out *o, uint64_t to)
{
	static const uint8_t op[6] = {0xff, 0x25, 0, 0, 0, 0};
	int err;

	if (o->cap - o->len < ABS_JMP_LEN)
		return -ENOSPC;
	err = x86_out_bytes(o, op, sizeof(op));
	if (!err)
		err = x86_out_u32(o, (uint32_t)to);
	return err ? err : x86_out_u32(o, (uint32_t)(to >> 32));
}

int x86_out_jmp(struct x86_out *o, uint64_t to, bool allow_rel8)
{
	static const uint8_t jmp32 = 0xe9;
	int64_t rel8 = (int64_t)(to - (x86_out_pc(o) + 2));
	int err;

	if (allow_rel8 && rel8 >= -128 && rel8 <= 127) {
		uint8_t b[2] = {0xeb, (uint8_t)rel8};

		return x86_out_bytes(o, b, 2);
	}
	err = out_op_rel32(o, &jmp32, 1, to);
	return err == -ERANGE ? out_abs_jmp(o, to) : err;
}

int x86_out_jcc(struct x86_out *o, unsigned cc, uint64_t to)
{
	uint8_t op[2] = {0x0f, (uint8_t)(0x80 | cc)};
	uint8_t skip[2] = {(uint8_t)(0x70 | (cc ^ 1)), ABS_JMP_LEN};
	int err = out_op_rel32(o, op, 2, to);

	if (err != -ERANGE)
		return err;
	if (o->cap - o->len < sizeof(skip) + ABS_JMP_LEN)
		return -ENOSPC;
	err = x86_out_bytes(o, skip, sizeof(skip));
	return err ? err : out_abs_jmp(o, to);
}

int x86_out_call_returning_to(struct x86_out *o, uint64_t v)
{
	/* call 1f; int3; 1: then the store(s) */
	static const uint8_t call[6] = {0xe8, 0x01, 0x00, 0x00, 0x00, 0xcc};
	static const uint8_t movq[4] = {0x48, 0xc7, 0x04, 0x24}; /* movq $simm32, (%rsp) */
	static const uint8_t movl_lo[3] = {0xc7, 0x04, 0x24};    /* movl $lo, (%rsp) */
	static const uint8_t movl_hi[4] = {0xc7, 0x44, 0x24, 0x04}; /* movl $hi, 4(%rsp) */
	bool sext = (uint64_t)(int64_t)(int32_t)(uint32_t)v == v;
	int err;

	if (o->cap - o->len < (sext ? 14u : 21u))
		return -ENOSPC;
	err = x86_out_bytes(o, call, sizeof(call));
	if (!err && sext)
		err = x86_out_bytes(o, movq, sizeof(movq));
	else if (!err)
		err = x86_out_bytes(o, movl_lo, sizeof(movl_lo));
	if (!err)
		err = x86_out_u32(o, (uint32_t)v);
	if (err || sext)
		return err;
	err = x86_out_bytes(o, movl_hi, sizeof(movl_hi));
	return err ? err : x86_out_u32(o, (uint32_t)(v >> 32));
}

/* ------------------------------------------------------------------ */
/* np_isa hooks                                                        */

int x86_emit_jump(uint8_t *buf, uint64_t from, uint64_t to)
{
	static const uint8_t jmp32 = 0xe9;
	struct x86_out o = {.buf = buf, .cap = 5, .pc = from};
	int err = out_op_rel32(&o, &jmp32, 1, to);

	return err ? err : (int)o.len;
}

/* jmp rel8: the jump to a hop (np_isa.emit_hop). */
int x86_emit_hop(uint8_t *buf, uint64_t from, uint64_t to)
{
	int64_t rel = (int64_t)(to - (from + 2));

	if (rel < INT8_MIN || rel > INT8_MAX)
		return -ERANGE;
	buf[0] = 0xeb;
	buf[1] = (uint8_t)(int8_t)rel;
	return 2;
}

int x86_emit_trap(uint8_t *buf)
{
	buf[0] = 0xcc; /* int3 */
	return 1;
}

int x86_emit_jump_any(uint8_t *buf, size_t cap, uint64_t from, uint64_t to)
{
	struct x86_out o = {.buf = buf, .cap = cap, .pc = from};
	int err = x86_out_jmp(&o, to, true);

	return err ? err : (int)o.len;
}

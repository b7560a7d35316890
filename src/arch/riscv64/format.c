/* SPDX-License-Identifier: MIT */
/*
 * Disassembly text as GNU objdump prints it (ABI register names, aliases,
 * decimal offsets, hex shift amounts and U immediates), with branch
 * targets written 0x... instead of objdump's "1001c <sym+0x1c>".
 * Compressed instructions print as their expansion, as objdump does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch/riscv64/opcodes.h"

static const char *const rv_xnames[32] = {
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
	"a1", "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
	"s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

static const char *const rv_fnames[32] = {
	"ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0",
	"fa1", "fa2", "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5",
	"fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
};

static const char *const rv_rm[8] = {"rne", "rtz", "rdn", "rup", "rmm", NULL, NULL, "dyn"};

static const struct {
	unsigned num;
	const char *name;
} rv_csrs[] = {
	{0x001, "fflags"}, {0x002, "frm"}, {0x003, "fcsr"},
	{0xc00, "cycle"},  {0xc01, "time"}, {0xc02, "instret"},
};

struct text {
	char *buf;
	size_t cap, len;
	bool full;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len)
		t->full = true;
	else
		t->len += (size_t)n;
}

static void put_csr(struct text *t, unsigned num)
{
	for (size_t i = 0; i < RV_ARRAY_SIZE(rv_csrs); i++)
		if (rv_csrs[i].num == num) {
			put(t, "%s", rv_csrs[i].name);
			return;
		}
	put(t, "0x%x", num);
}

static void put_fence_set(struct text *t, unsigned set)
{
	static const char io[] = "iorw";

	for (int b = 0; b < 4; b++)
		if (set & (8u >> b))
			put(t, "%c", io[b]);
	if (!set)
		put(t, "0");
}

static void put_arg(struct text *t, char code, uint32_t x, uint64_t pc)
{
	switch (code) {
	case 'd': put(t, "%s", rv_xnames[rv_rd(x)]); break;
	case 's': put(t, "%s", rv_xnames[rv_rs1(x)]); break;
	case 't': put(t, "%s", rv_xnames[rv_rs2(x)]); break;
	case 'D': put(t, "%s", rv_fnames[rv_rd(x)]); break;
	case 'S': put(t, "%s", rv_fnames[rv_rs1(x)]); break;
	case 'T': put(t, "%s", rv_fnames[rv_rs2(x)]); break;
	case 'R': put(t, "%s", rv_fnames[rv_rs3(x)]); break;
	case 'j': put(t, "%" PRId64, rv_imm_i(x)); break;
	case 'q': put(t, "%" PRId64, rv_imm_s(x)); break;
	case 'u': put(t, "0x%x", x >> 12); break;
	case '>': put(t, "0x%x", x >> 20 & 0x3f); break;
	case '<': put(t, "0x%x", x >> 20 & 0x1f); break;
	case 'p': put(t, "0x%" PRIx64, pc + (uint64_t)rv_imm_b(x)); break;
	case 'a': put(t, "0x%" PRIx64, pc + (uint64_t)rv_imm_j(x)); break;
	case 'E': put_csr(t, x >> 20); break;
	case 'Z': put(t, "%u", rv_rs1(x)); break;
	case 'P': put_fence_set(t, x >> 24 & 15); break;
	case 'Q': put_fence_set(t, x >> 20 & 15); break;
	case 'm':
		if (rv_funct3(x) != 7)
			put(t, ",%s", rv_rm[rv_funct3(x)] ? rv_rm[rv_funct3(x)] : "?");
		break;
	default: put(t, "%c", code); break;
	}
}

/* fsgnj.[sd] with equal sources: fmv, fneg, fabs */
static const char *sgnj_alias(const struct rv_opcode *op, uint32_t x, char *tmp, size_t n)
{
	static const char *const base[3] = {"fmv", "fneg", "fabs"};

	if (rv_rs1(x) != rv_rs2(x) || rv_funct3(x) > 2)
		return NULL;
	snprintf(tmp, n, "%s%s", base[rv_funct3(x)], strrchr(op->name, '.'));
	return tmp;
}

static void put_name(struct text *t, const struct rv_opcode *op, const struct rv_insn *in,
		     const char **args)
{
	static const char *const aqrl[4] = {"", ".rl", ".aq", ".aqrl"};
	size_t n = strlen(op->name);
	char tmp[16];
	const char *alias = NULL;

	if (op->flags & RV_OPC_FSGNJ)
		alias = sgnj_alias(op, in->x, tmp, sizeof(tmp));
	if (alias) {
		put(t, "%s", alias);
		*args = "D,S";
		return;
	}
	put(t, "%.*s", (int)n, op->name);
	if (op->flags & RV_OPC_AQRL)
		put(t, "%s", aqrl[in->x >> 25 & 3]);
}

int rv_format(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap)
{
	struct text t = {buf, cap, 0, false};
	const struct rv_opcode *op;
	struct rv_insn in;
	const char *args;
	int err = rv_fetch(code, avail, &in);

	if (err)
		return err;
	op = rv_lookup(in.x);
	if (!op)
		return -EILSEQ;
	if (cap == 0)
		return -ENOSPC;
	buf[0] = '\0';
	args = op->args;
	put_name(&t, op, &in, &args);
	if (*args)
		put(&t, "\t");
	for (; *args; args++)
		put_arg(&t, *args, in.x, pc);
	return t.full ? -ENOSPC : (int)t.len;
}

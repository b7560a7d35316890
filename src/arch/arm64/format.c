/* SPDX-License-Identifier: MIT */
/*
 * Disassembly text, as GNU objdump prints it, for the forms a probe
 * engine reasons about: every branch and pc-relative form, the exception,
 * hint, barrier and system groups the decoder classifies, exclusives,
 * register pairs, and the common frame and move forms (add/sub immediate
 * with their mov/cmp aliases, mov between registers, ldr/str with an
 * unsigned offset). Any other word prints as `.inst 0x%08x`, which is
 * what objdump prints for unallocated words: text this file does not
 * know is never guessed.
 *
 * Branch targets print as 0x<address>, where objdump prints
 * "401010 <sym+0x10>" (the unit test rewrites objdump's form).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "arch/arm64/internal.h"

static const char *const cond_names[16] = {
	"eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc",
	"hi", "ls", "ge", "lt", "gt", "le", "al", "nv",
};

struct text {
	char *buf;
	size_t cap;
	int len; /* -ENOSPC once anything did not fit */
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->len < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->cap - (size_t)t->len, fmt, ap);
	va_end(ap);
	t->len = n < 0 || (size_t)n >= t->cap - (size_t)t->len ? -ENOSPC : t->len + n;
}

/* Register names: 'sp' chooses what 31 means. */
static const char *reg(char *b, bool x, unsigned n, bool sp)
{
	if (n == 31)
		return sp ? (x ? "sp" : "wsp") : (x ? "xzr" : "wzr");
	snprintf(b, 4, "%c%u", x ? 'x' : 'w', n);
	return b;
}

static unsigned rd(uint32_t w)
{
	return a64_bits(w, 0, 5);
}

static unsigned rn(uint32_t w)
{
	return a64_bits(w, 5, 5);
}

/* ---- branches and pc-relative data ---- */

static bool fmt_branch(struct text *t, uint32_t w, uint64_t pc)
{
	uint64_t to = pc + (uint64_t)a64_branch_offset(w);
	bool x = a64_bits(w, 31, 1);
	char r[4];

	if (a64_is_b(w) || a64_is_bl(w))
		put(t, "%s\t0x%llx", a64_is_bl(w) ? "bl" : "b", (unsigned long long)to);
	else if (a64_is_b_cond(w))
		put(t, "%s.%s\t0x%llx", a64_bits(w, 4, 1) ? "bc" : "b", cond_names[w & 15],
		    (unsigned long long)to);
	else if (a64_is_cbz(w) || a64_is_cbnz(w))
		put(t, "%s\t%s, 0x%llx", a64_is_cbz(w) ? "cbz" : "cbnz", reg(r, x, rd(w), false),
		    (unsigned long long)to);
	else if (a64_is_tbz(w) || a64_is_tbnz(w))
		put(t, "%s\t%s, #%u, 0x%llx", a64_is_tbz(w) ? "tbz" : "tbnz",
		    reg(r, x, rd(w), false), a64_bits(w, 31, 1) << 5 | a64_bits(w, 19, 5),
		    (unsigned long long)to);
	else
		return false;
	return true;
}

static void prfop(struct text *t, unsigned op)
{
	static const char *const type[] = {"pld", "pli", "pst"};
	unsigned ty = op >> 3, level = (op >> 1) & 3;

	if (ty < 3 && level < 3)
		put(t, "%sl%u%s", type[ty], level + 1, (op & 1) ? "strm" : "keep");
	else
		put(t, "#0x%x", op);
}

static bool fmt_pcrel(struct text *t, uint32_t w, uint64_t pc)
{
	static const char fp[3] = {'s', 'd', 'q'};
	unsigned long long to = (unsigned long long)a64_pcrel_target(w, pc);
	char r[4];

	if (a64_is_adr(w) || a64_is_adrp(w))
		put(t, "%s\t%s, 0x%llx", a64_is_adr(w) ? "adr" : "adrp", reg(r, true, rd(w), false), to);
	else if (a64_is_ldr_lit(w))
		put(t, "ldr\t%s, 0x%llx", reg(r, a64_bits(w, 30, 1), rd(w), false), to);
	else if (a64_is_ldrsw_lit(w))
		put(t, "ldrsw\t%s, 0x%llx", reg(r, true, rd(w), false), to);
	else if (a64_is_ldr_lit_fp(w) && a64_bits(w, 30, 2) < 3)
		put(t, "ldr\t%c%u, 0x%llx", fp[a64_bits(w, 30, 2)], rd(w), to);
	else if (a64_is_prfm_lit(w)) {
		put(t, "prfm\t");
		prfop(t, rd(w));
		put(t, ", 0x%llx", to);
	} else
		return false;
	return true;
}

/* ---- branches through registers, exceptions, hints, barriers ---- */

static bool fmt_branch_reg(struct text *t, uint32_t w)
{
	const char *k = (w & (1u << 10)) ? "b" : "a";
	char r[4], m[4];

	if (a64_is_ret(w))
		rn(w) == A64_LR ? put(t, "ret") : put(t, "ret\t%s", reg(r, true, rn(w), false));
	else if (a64_is_br(w) || a64_is_blr(w))
		put(t, "%s\t%s", a64_is_br(w) ? "br" : "blr", reg(r, true, rn(w), false));
	else if (a64_is_retaa(w))
		put(t, "reta%s", k);
	else if (a64_is_braz(w) || a64_is_blraz(w))
		put(t, "%sa%sz\t%s", a64_is_braz(w) ? "br" : "blr", k, reg(r, true, rn(w), false));
	else if (a64_is_bra(w) || a64_is_blra(w))
		put(t, "%sa%s\t%s, %s", a64_is_bra(w) ? "br" : "blr", k, reg(r, true, rn(w), false),
		    reg(m, true, rd(w), true));
	else if (w == 0xd69f03e0u || w == 0xd6bf03e0u)
		put(t, w == 0xd69f03e0u ? "eret" : "drps");
	else if (w == 0xd69f0bffu || w == 0xd69f0fffu)
		put(t, "ereta%s", k);
	else
		return false;
	return true;
}

static bool fmt_exception(struct text *t, uint32_t w)
{
	static const char *const names[8] = {"svc", "hvc", "smc", NULL};
	unsigned opc = a64_bits(w, 21, 3), ll = a64_bits(w, 0, 2), imm = a64_bits(w, 5, 16);

	if (a64_is_udf(w))
		put(t, "udf\t#%u", a64_bits(w, 0, 16));
	else if (!a64_is_excgen(w) || a64_bits(w, 2, 3))
		return false;
	else if (opc == 0 && ll)
		put(t, "%s\t#0x%x", names[ll - 1], imm);
	else if (opc == 1 && !ll)
		put(t, "brk\t#0x%x", imm);
	else if (opc == 2 && !ll)
		put(t, "hlt\t#0x%x", imm);
	else if (opc == 5 && ll && !imm)
		put(t, "dcps%u", ll);
	else
		return false;
	return true;
}

static const char *hint_name(unsigned h)
{
	static const char *const names[64] = {
		[0] = "nop", [1] = "yield", [2] = "wfe", [3] = "wfi", [4] = "sev", [5] = "sevl",
		[6] = "dgh", [7] = "xpaclri", [8] = "pacia1716", [10] = "pacib1716",
		[12] = "autia1716", [14] = "autib1716", [16] = "esb", [17] = "psb\tcsync",
		[18] = "tsb\tcsync", [20] = "csdb", [24] = "paciaz", [25] = "paciasp",
		[26] = "pacibz", [27] = "pacibsp", [28] = "autiaz", [29] = "autiasp",
		[30] = "autibz", [31] = "autibsp", [32] = "bti", [34] = "bti\tc", [36] = "bti\tj",
		[38] = "bti\tjc",
	};

	return h < 64 ? names[h] : NULL;
}

static const char *barrier_option(unsigned crm)
{
	static const char *const names[16] = {
		[1] = "oshld", [2] = "oshst", [3] = "osh", [5] = "nshld", [6] = "nshst",
		[7] = "nsh", [9] = "ishld", [10] = "ishst", [11] = "ish", [13] = "ld",
		[14] = "st", [15] = "sy",
	};

	return names[crm];
}

static bool fmt_hint_barrier(struct text *t, uint32_t w)
{
	unsigned crm = a64_bits(w, 8, 4), op2 = a64_bits(w, 5, 3);

	if (a64_is_hint(w)) {
		const char *n = hint_name(crm << 3 | op2);

		n ? put(t, "%s", n) : put(t, "hint\t#0x%x", crm << 3 | op2);
		return true;
	}
	if (!a64_is_barrier(w))
		return false;
	if (op2 == 2)
		crm == 15 ? put(t, "clrex") : put(t, "clrex\t#0x%x", crm);
	else if ((op2 == 4 || op2 == 5) && barrier_option(crm))
		put(t, "%s\t%s", op2 == 4 ? "dsb" : "dmb", barrier_option(crm));
	else if (op2 == 6 && crm == 15)
		put(t, "isb");
	else if (op2 == 7 && crm == 0)
		put(t, "sb");
	else
		return false;
	return true;
}

/* ---- system registers, sys ---- */

static const struct {
	unsigned enc; /* o0:op1:CRn:CRm:op2, bits 19:5 of the word */
	const char *name;
} sysregs[] = {
	{0x5e82, "tpidr_el0"}, {0x5e83, "tpidrro_el0"}, {0x5a10, "nzcv"},
	{0x5a20, "fpcr"},      {0x5a21, "fpsr"},        {0x5f02, "cntvct_el0"},
	{0x5f00, "cntfrq_el0"}, {0x5807, "dczid_el0"},  {0x5801, "ctr_el0"},
	{0x4000, "midr_el1"},
};

static bool fmt_sysreg(struct text *t, uint32_t w)
{
	unsigned enc = a64_bits(w, 5, 15);
	const char *name = NULL;
	char r[4], b[32];

	if (!a64_is_mrs_msr(w))
		return false;
	for (size_t i = 0; i < A64_ARRAY_SIZE(sysregs); i++)
		if (sysregs[i].enc == enc)
			name = sysregs[i].name;
	if (!name) {
		snprintf(b, sizeof(b), "s%u_%u_c%u_c%u_%u", 2 + (enc >> 14), (enc >> 11) & 7,
			 (enc >> 7) & 15, (enc >> 3) & 15, enc & 7);
		name = b;
	}
	if (a64_bits(w, 21, 1))
		put(t, "mrs\t%s, %s", reg(r, true, rd(w), false), name);
	else
		put(t, "msr\t%s, %s", name, reg(r, true, rd(w), false));
	return true;
}

static bool fmt_sys(struct text *t, uint32_t w)
{
	static const struct {
		unsigned enc; /* op1:CRn:CRm:op2, bits 18:5 */
		const char *name;
	} ops[] = {
		{0x1ba1, "dc\tzva"}, {0x1bd1, "dc\tcvac"}, {0x1bd9, "dc\tcvau"},
		{0x1bf1, "dc\tcivac"}, {0x1ba9, "ic\tivau"},
	};
	unsigned enc = a64_bits(w, 5, 14);
	char r[4];

	if (a64_is_msr_imm(w) && a64_bits(w, 16, 3) == 3 && (a64_bits(w, 5, 3) & 6) == 6) {
		put(t, "msr\tdaif%s, #0x%x", a64_bits(w, 5, 1) ? "clr" : "set", a64_bits(w, 8, 4));
		return true;
	}
	if (!a64_is_sys(w) || a64_bits(w, 21, 1))
		return false;
	for (size_t i = 0; i < A64_ARRAY_SIZE(ops); i++)
		if (ops[i].enc == enc) {
			put(t, "%s, %s", ops[i].name, reg(r, true, rd(w), false));
			return true;
		}
	return false;
}

/* ---- loads and stores ---- */

static void mem_operand(struct text *t, uint32_t w, int64_t imm, unsigned idx)
{
	char r[4];
	const char *base = reg(r, true, rn(w), true);

	if (idx == 1) /* post-index */
		put(t, "[%s], #%lld", base, (long long)imm);
	else if (idx == 3) /* pre-index */
		put(t, "[%s, #%lld]!", base, (long long)imm);
	else
		imm ? put(t, "[%s, #%lld]", base, (long long)imm) : put(t, "[%s]", base);
}

/* ldp/stp: opc(31:30) 101 V(26) 0 idx(24:23) L(22) imm7 Rt2 Rn Rt */
static bool fmt_pair(struct text *t, uint32_t w)
{
	unsigned opc = a64_bits(w, 30, 2), v = a64_bits(w, 26, 1), idx = a64_bits(w, 23, 2);
	unsigned scale = v ? 2 + opc : 2 + (opc >> 1);
	char a[4], b[4];

	if ((w & 0x3a000000u) != 0x28000000u || idx == 0 || opc == 3 || (!v && opc == 1))
		return false;
	put(t, "%s\t", a64_bits(w, 22, 1) ? "ldp" : "stp");
	if (v)
		put(t, "%c%u, %c%u, ", "sdq"[opc], rd(w), "sdq"[opc], a64_bits(w, 10, 5));
	else
		put(t, "%s, %s, ", reg(a, opc, rd(w), false), reg(b, opc, a64_bits(w, 10, 5), false));
	mem_operand(t, w, a64_sbits(w, 15, 7) * (1 << scale), idx);
	return true;
}

/* ldr/str Wt/Xt, [Xn|sp, #imm12 << size] (unsigned offset) */
static bool fmt_ldst_uimm(struct text *t, uint32_t w)
{
	unsigned size = a64_bits(w, 30, 2), opc = a64_bits(w, 22, 2);
	char r[4];

	if ((w & 0x3f000000u) != 0x39000000u || size < 2 || opc > 1)
		return false;
	put(t, "%s\t%s, ", opc ? "ldr" : "str", reg(r, size == 3, rd(w), false));
	mem_operand(t, w, (int64_t)a64_bits(w, 10, 12) << size, 2);
	return true;
}

static const char *const excl_size[4] = {"b", "h", "", ""};

/* size(31:30) 001000 o2=0 L o1 Rs o0 Rt2 Rn Rt */
static bool fmt_exclusive(struct text *t, uint32_t w)
{
	bool x = a64_bits(w, 30, 1), pair = a64_bits(w, 21, 1), acq = a64_bits(w, 15, 1);
	const char *sz = pair ? "" : excl_size[a64_bits(w, 30, 2)];
	char s[4], a[4], b[4], n[4];
	bool load = a64_is_ldxr(w) || a64_is_ldxp(w);

	if (!load && !a64_is_stxr(w) && !a64_is_stxp(w))
		return false;
	if (!pair)
		x = a64_bits(w, 30, 2) == 3;
	put(t, "%s%s%s%s\t", load ? "ld" : "st", acq ? (load ? "a" : "l") : "", pair ? "xp" : "xr",
	    sz);
	if (!load)
		put(t, "%s, ", reg(s, false, a64_bits(w, 16, 5), false));
	put(t, "%s, ", reg(a, x, rd(w), false));
	if (pair)
		put(t, "%s, ", reg(b, x, a64_bits(w, 10, 5), false));
	put(t, "[%s]", reg(n, true, rn(w), true));
	return true;
}

/* ---- data processing ---- */

/* add/sub (immediate): sf op S 100010 sh imm12 Rn Rd */
static bool fmt_addsub_imm(struct text *t, uint32_t w)
{
	bool x = a64_bits(w, 31, 1), sub = a64_bits(w, 30, 1), s = a64_bits(w, 29, 1);
	unsigned imm = a64_bits(w, 10, 12), sh = a64_bits(w, 22, 1);
	char d[4], n[4];

	if ((w & 0x1f800000u) != 0x11000000u)
		return false;
	if (!sub && !s && !sh && !imm && (rd(w) == 31 || rn(w) == 31)) {
		put(t, "mov\t%s, %s", reg(d, x, rd(w), true), reg(n, x, rn(w), true));
		return true;
	}
	if (s && rd(w) == 31)
		put(t, "%s\t%s, ", sub ? "cmp" : "cmn", reg(n, x, rn(w), true));
	else
		put(t, "%s%s\t%s, %s, ", sub ? "sub" : "add", s ? "s" : "", reg(d, x, rd(w), !s),
		    reg(n, x, rn(w), true));
	put(t, "#0x%x", imm);
	if (sh)
		put(t, ", lsl #12");
	return true;
}

/* mov Xd, Xm: orr Xd, xzr, Xm (shifted register, no shift) */
static bool fmt_mov_reg(struct text *t, uint32_t w)
{
	bool x = a64_bits(w, 31, 1);
	char d[4], m[4];

	if ((w & 0x7fe0ffe0u) != 0x2a0003e0u)
		return false;
	put(t, "mov\t%s, %s", reg(d, x, rd(w), false), reg(m, x, a64_bits(w, 16, 5), false));
	return true;
}

int a64_format(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap)
{
	struct text t = {buf, cap, 0};
	uint32_t w;

	if (avail < 4)
		return -ENODATA;
	if (cap == 0)
		return -ENOSPC;
	w = a64_word(code);
	if (!fmt_branch(&t, w, pc) && !fmt_pcrel(&t, w, pc) && !fmt_branch_reg(&t, w) &&
	    !fmt_exception(&t, w) && !fmt_hint_barrier(&t, w) && !fmt_sysreg(&t, w) &&
	    !fmt_sys(&t, w) && !fmt_pair(&t, w) && !fmt_ldst_uimm(&t, w) &&
	    !fmt_exclusive(&t, w) && !fmt_addsub_imm(&t, w) && !fmt_mov_reg(&t, w))
		put(&t, ".inst\t0x%08x", w);
	return t.len;
}

/* SPDX-License-Identifier: MIT */
/*
 * USDT argument operands as GAS prints them for riscv64 (src/arch/usdt.h):
 *
 *   a1  s0  x10  fp       a register, ABI or x name
 *   42  -7                a constant
 *   -36(s0)  0(a0)  (sp)  base + offset
 *
 * zero (x0) reads as the constant 0.
 */
#include "arch/riscv64/internal.h"
#include "arch/usdt.h"

#include <errno.h>
#include <string.h>

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EINVAL;
}

/* A register at *p: its number 0..31, or -1. */
static int reg_at(const char **p, const char *end)
{
	const char *s = *p, *name = s;
	while (s < end && ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
		s++;
	size_t n = (size_t)(s - name);
	int num = -1;
	const char *const *abi = np_isa_riscv64.reg_names; /* zero, ra, sp ... */
	for (int i = 0; i < 32 && num < 0; i++)
		if (strlen(abi[i]) == n && !memcmp(abi[i], name, n))
			num = i;
	if (num < 0 && n == 2 && !memcmp(name, "fp", 2))
		num = 8;
	if (num < 0 && n >= 2 && n <= 3 && name[0] == 'x' && name[1] >= '0' && name[1] <= '9' &&
	    (n == 2 || (name[1] != '0' && name[2] >= '0' && name[2] <= '9'))) {
		num = name[1] - '0';
		if (n == 3)
			num = num * 10 + (name[2] - '0');
		if (num > 31)
			num = -1;
	}
	if (num >= 0)
		*p = s;
	return num;
}

int rv_usdt_operand(const char *text, size_t len, struct np_usdt_arg *out,
		    struct np_usdt_span *sym, const char **why)
{
	const char *p = text, *end = text + len;
	(void)sym;
	int reg = reg_at(&p, end);
	if (reg >= 0) {
		if (p != end)
			return refuse(why, "text after the register");
		out->kind = reg ? NP_USDT_REG : NP_USDT_CONST;
		out->base = reg ? (int8_t)reg : NP_USDT_NOREG;
		out->disp = 0;
		return 0;
	}
	int64_t v = 0;
	if (*p != '(' && np_usdt_int(&p, end, &v))
		return refuse(why, "an operand that is neither a register, OFFSET(REG) nor a constant");
	if (p == end) {
		out->kind = NP_USDT_CONST;
		out->disp = v;
		return 0;
	}
	if (*p != '(')
		return refuse(why, "text after the constant");
	p++;
	reg = reg_at(&p, end);
	if (reg < 0)
		return refuse(why, "an unknown base register");
	if (p >= end || *p != ')' || p + 1 != end)
		return refuse(why, "an address that does not end with ')'");
	out->kind = NP_USDT_MEM;
	out->disp = v;
	out->base = reg ? (int8_t)reg : NP_USDT_NOREG; /* 0(zero): the address v */
	return 0;
}

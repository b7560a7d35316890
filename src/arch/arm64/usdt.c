/* SPDX-License-Identifier: MIT */
/*
 * USDT argument operands as GAS prints them for arm64 (src/arch/usdt.h):
 *
 *   x2  w2  sp  fp  lr      a register (w: the same register, its low half)
 *   42  #42  -7             a constant
 *   [sp, 12]  [x0]  [x29, #-8]   base + offset
 *
 * xzr and wzr read as the constant 0. Refused: register offsets and
 * extends ([x0, x1, lsl 3]: not an offsettable operand, which "nor" asks
 * for), writeback, pc-relative forms.
 */
#include "arch/arm64/internal.h"
#include "arch/usdt.h"

#include <errno.h>
#include <string.h>

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EINVAL;
}

/* A register name at *p: 0..30, 31 for sp, 32 for the zero register;
 * -1 if none. */
static int reg_at(const char **p, const char *end)
{
	const char *s = *p, *name = s;
	while (s < end && ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
		s++;
	size_t n = (size_t)(s - name);
	static const struct {
		const char *name;
		int num;
	} named[] = {{"sp", 31}, {"wsp", 31}, {"fp", 29}, {"lr", 30}, {"xzr", 32}, {"wzr", 32}};
	for (size_t i = 0; i < sizeof(named) / sizeof(*named); i++)
		if (strlen(named[i].name) == n && !memcmp(named[i].name, name, n)) {
			*p = s;
			return named[i].num;
		}
	if (n < 2 || n > 3 || (name[0] != 'x' && name[0] != 'w') || name[1] < '0' || name[1] > '9' ||
	    (n == 3 && (name[2] < '0' || name[2] > '9')) || (n == 3 && name[1] == '0'))
		return -1;
	int num = name[1] - '0';
	if (n == 3)
		num = num * 10 + (name[2] - '0');
	if (num > 30)
		return -1;
	*p = s;
	return num;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && **p == ' ')
		(*p)++;
}

int a64_usdt_operand(const char *text, size_t len, struct np_usdt_arg *out,
		     struct np_usdt_span *sym, const char **why)
{
	const char *p = text, *end = text + len;
	(void)sym;
	if (*p == '[') {
		p++;
		skip_spaces(&p, end);
		int base = reg_at(&p, end);
		if (base < 0 || base == 32)
			return refuse(why, "an unknown base register");
		out->kind = NP_USDT_MEM;
		out->base = (int8_t)base;
		skip_spaces(&p, end);
		if (p < end && *p == ',') {
			p++;
			skip_spaces(&p, end);
			if (p < end && *p == '#')
				p++;
			if (np_usdt_int(&p, end, &out->disp))
				return refuse(why, "an offset that is not a constant (a register "
						   "offset or an extend)");
			skip_spaces(&p, end);
		}
		if (p >= end || *p != ']')
			return refuse(why, "an address that does not end with ']'");
		if (++p != end)
			return refuse(why, "text after the address (writeback?)");
		return 0;
	}
	int reg = reg_at(&p, end);
	if (reg >= 0) {
		if (p != end)
			return refuse(why, "text after the register");
		if (reg == 32) {
			out->kind = NP_USDT_CONST;
			out->disp = 0;
		} else {
			out->kind = NP_USDT_REG;
			out->base = (int8_t)reg;
		}
		return 0;
	}
	if (*p == '#')
		p++;
	if (np_usdt_int(&p, end, &out->disp) || p != end)
		return refuse(why, "an operand that is neither a register, [address] nor a constant");
	out->kind = NP_USDT_CONST;
	return 0;
}

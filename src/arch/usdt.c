/* SPDX-License-Identifier: MIT */
/* The ISA-independent part of a USDT argument's text (see usdt.h). */
#include "arch/usdt.h"

#include <errno.h>

int np_usdt_split(const char *args, struct np_usdt_span *out, int max)
{
	int n = 0, depth = 0;
	const char *start = NULL;
	for (const char *s = args;; s++) {
		bool space = *s == ' ' || *s == '\t' || !*s;
		if (start && space && (depth == 0 || !*s)) {
			if (n == max)
				return -E2BIG;
			out[n].off = (uint16_t)(start - args);
			out[n].len = (uint16_t)(s - start);
			n++;
			start = NULL;
		} else if (!start && !space) {
			start = s;
		}
		if (!*s || s - args >= UINT16_MAX)
			break;
		depth += (*s == '[' || *s == '(') - (*s == ']' || *s == ')');
	}
	return n;
}

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EINVAL;
}

int np_usdt_parse(const struct np_isa *isa, const char *text, size_t len,
		  struct np_usdt_arg *out, struct np_usdt_span *sym, const char **why)
{
	const char *p = text, *end = text + len;
	int64_t size;
	*out = (struct np_usdt_arg){.base = NP_USDT_NOREG, .index = NP_USDT_NOREG, .scale = 1};
	sym->off = sym->len = 0;
	if (!isa->usdt_operand)
		return refuse(why, "this ISA does not read USDT arguments");
	/* old notes wrote the operand alone; every <sys/sdt.h> since 2010
	 * puts the size first, and a value without one cannot be read right */
	if (np_usdt_int(&p, end, &size) || p >= end || *p != '@')
		return refuse(why, "no size before the operand (SIZE@OPERAND)");
	if (size != 1 && size != 2 && size != 4 && size != 8 && size != -1 && size != -2 &&
	    size != -4 && size != -8)
		return refuse(why, "a size that is not 1, 2, 4 or 8 bytes");
	out->size = (uint8_t)(size < 0 ? -size : size);
	out->is_signed = size < 0;
	p++;
	if (p >= end)
		return refuse(why, "no operand after the size");
	int err = isa->usdt_operand(p, (size_t)(end - p), out, sym, why);
	if (err)
		return err;
	if (out->kind == NP_USDT_REG && out->shift && out->size != 1)
		return refuse(why, "a high byte register for a value wider than a byte");
	if (sym->len)
		sym->off = (uint16_t)(sym->off + (p - text));
	return 0;
}

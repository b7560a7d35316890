/* SPDX-License-Identifier: MIT */
/*
 * USDT argument operands in GAS's AT&T syntax (src/arch/usdt.h):
 *
 *   %edi                  a register, of any width (%ah: the second byte)
 *   $-5                   a constant
 *   -8(%rbp)  (%rdi,%rsi,8)  8(,%rax,8)   base + index * scale + disp
 *   gs(%rip)  4+gs(%rip)  a symbol's address (pc-relative to the symbol)
 *   gs  gs+8(,%rax,8)     the same in code that is not position-independent
 *
 * Refused: segment prefixes (%fs: thread-local storage), 32-bit address
 * registers, %rip without a symbol, and anything else GAS would not print
 * for an "nor" operand.
 */
#include "arch/usdt.h"

#include <errno.h>
#include <string.h>

struct x86_reg {
	const char *name;
	int8_t num;   /* np_regs.gpr index */
	uint8_t bits; /* width */
	uint8_t shift;
};

/* Hardware order, as np_regs: rax rcx rdx rbx rsp rbp rsi rdi r8..r15. */
static const struct x86_reg x86_regs[] = {
	{"rax", 0, 64, 0},  {"rcx", 1, 64, 0},  {"rdx", 2, 64, 0},  {"rbx", 3, 64, 0},
	{"rsp", 4, 64, 0},  {"rbp", 5, 64, 0},  {"rsi", 6, 64, 0},  {"rdi", 7, 64, 0},
	{"eax", 0, 32, 0},  {"ecx", 1, 32, 0},  {"edx", 2, 32, 0},  {"ebx", 3, 32, 0},
	{"esp", 4, 32, 0},  {"ebp", 5, 32, 0},  {"esi", 6, 32, 0},  {"edi", 7, 32, 0},
	{"ax", 0, 16, 0},   {"cx", 1, 16, 0},   {"dx", 2, 16, 0},   {"bx", 3, 16, 0},
	{"sp", 4, 16, 0},   {"bp", 5, 16, 0},   {"si", 6, 16, 0},   {"di", 7, 16, 0},
	{"al", 0, 8, 0},    {"cl", 1, 8, 0},    {"dl", 2, 8, 0},    {"bl", 3, 8, 0},
	{"spl", 4, 8, 0},   {"bpl", 5, 8, 0},   {"sil", 6, 8, 0},   {"dil", 7, 8, 0},
	{"ah", 0, 8, 8},    {"ch", 1, 8, 8},    {"dh", 2, 8, 8},    {"bh", 3, 8, 8},
};

/* %NAME at *p: its entry; r8..r15 with their b, w, d suffixes are built. */
static int reg_at(const char **p, const char *end, struct x86_reg *out)
{
	const char *s = *p;
	if (s >= end || *s != '%')
		return -1;
	const char *name = ++s;
	while (s < end && ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
		s++;
	size_t n = (size_t)(s - name);
	for (size_t i = 0; i < sizeof(x86_regs) / sizeof(*x86_regs); i++)
		if (strlen(x86_regs[i].name) == n && !memcmp(x86_regs[i].name, name, n)) {
			*out = x86_regs[i];
			*p = s;
			return 0;
		}
	if (n >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
		unsigned num = (unsigned)(name[1] - '0');
		size_t at = 2;
		if (n > 2 && name[2] >= '0' && name[2] <= '9')
			num = num * 10 + (unsigned)(name[at++] - '0');
		static const struct {
			char suffix;
			uint8_t bits;
		} widths[] = {{0, 64}, {'d', 32}, {'w', 16}, {'b', 8}};
		for (size_t w = 0; num >= 8 && num <= 15 && w < 4; w++)
			if (n == at + (widths[w].suffix != 0) &&
			    (!widths[w].suffix || name[at] == widths[w].suffix)) {
				*out = (struct x86_reg){NULL, (int8_t)num, widths[w].bits, 0};
				*p = s;
				return 0;
			}
	}
	return -1;
}

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EINVAL;
}

/* (BASE[,INDEX[,SCALE]]) after the displacement, *p at the '('. */
static int address(const char **p, const char *end, struct np_usdt_arg *out, bool *rip,
		   const char **why)
{
	const char *s = *p + 1;
	struct x86_reg r;
	if (s < end && *s == '%') {
		if (end - s >= 4 && !memcmp(s, "%rip", 4)) {
			*rip = true;
			s += 4;
		} else if (reg_at(&s, end, &r)) {
			return refuse(why, "an unknown base register");
		} else if (r.bits != 64) {
			return refuse(why, "a base register that is not 64 bits wide");
		} else {
			out->base = r.num;
		}
	}
	if (s < end && *s == ',') {
		s++;
		if (reg_at(&s, end, &r))
			return refuse(why, "an unknown index register");
		if (r.bits != 64 || r.num == 4)
			return refuse(why, "an index register that is not one of the 64-bit ones");
		out->index = r.num;
		if (s < end && *s == ',') {
			int64_t scale;
			s++;
			if (np_usdt_int(&s, end, &scale) ||
			    (scale != 1 && scale != 2 && scale != 4 && scale != 8))
				return refuse(why, "a scale that is not 1, 2, 4 or 8");
			out->scale = (uint8_t)scale;
		}
	}
	if (s >= end || *s != ')')
		return refuse(why, "an address that does not end with ')'");
	if (*rip && out->index != NP_USDT_NOREG)
		return refuse(why, "an index with %rip");
	if (out->base == NP_USDT_NOREG && out->index == NP_USDT_NOREG && !*rip)
		return refuse(why, "an address with no register in its parentheses");
	*p = s + 1;
	return 0;
}

int x86_usdt_operand(const char *text, size_t len, struct np_usdt_arg *out,
		     struct np_usdt_span *sym, const char **why)
{
	const char *p = text, *end = text + len;
	struct x86_reg r;
	bool rip = false;
	if (*p == '%') {
		if (memchr(p, ':', len))
			return refuse(why, "a segment-relative operand (%fs: or %gs: thread-local "
					   "storage)");
		if (reg_at(&p, end, &r))
			return refuse(why, "an unknown register");
		if (p != end)
			return refuse(why, "text after the register");
		out->kind = NP_USDT_REG;
		out->base = r.num;
		out->shift = r.shift;
		return 0;
	}
	if (*p == '$') {
		p++;
		if (np_usdt_int(&p, end, &out->disp) || p != end)
			return refuse(why, "a constant that is not an integer");
		out->kind = NP_USDT_CONST;
		return 0;
	}
	out->kind = NP_USDT_MEM;
	if (np_usdt_disp(&p, end, text, &out->disp, sym, why))
		return -EINVAL;
	if (p < end && *p == '(' && address(&p, end, out, &rip, why))
		return -EINVAL;
	if (p != end)
		return refuse(why, "text after the operand");
	if (rip && !sym->len)
		return refuse(why, "a %rip-relative address without a symbol");
	if (sym->len)
		out->flags |= NP_USDT_SYMBOL;
	else if (out->base == NP_USDT_NOREG && out->index == NP_USDT_NOREG)
		return p == text ? refuse(why, "an empty operand") : 0; /* an absolute address */
	return 0;
}

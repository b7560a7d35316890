/* SPDX-License-Identifier: MIT */
/*
 * USDT probe arguments: where a stapsdt note says each value is.
 *
 * <sys/sdt.h> hands every argument of a probe to an asm statement with the
 * constraint "nor": the compiler picks where the value is at the probe's
 * nop (a register, an offsettable memory operand or a constant) and the
 * assembler writes that operand, as text, into the note, after the value's
 * size in bytes (negative when the type is signed):
 *
 *   x86-64   -4@%edi  8@-8(%rbp)  -4@$5  -8@(%rdi,%rsi,8)  -2@4+gs(%rip)
 *   arm64    -4@x2  -4@[sp, 12]  -8@[x0, 8]  -4@42
 *   riscv64  -8@a1  -4@-36(s0)  -8@0(a0)  -4@42
 *
 * The operand is in the ISA's assembler syntax, so each ISA parses its own
 * (struct np_isa's usdt_operand, src/arch/<isa>/usdt.c); the size prefix,
 * the numbers and the splitting of a note's argument string are common
 * (usdt.c). Pure code: text in, struct np_usdt_arg out, every form that is
 * not understood refused with its reason, never guessed at.
 */
#ifndef NP_ARCH_USDT_H
#define NP_ARCH_USDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"

/* One argument: "[-]SIZE@OPERAND", text[0..len). 0 and *out (a symbol's
 * place in text in *sym when out->flags has NP_USDT_SYMBOL), or -EINVAL with
 * a static reason in *why. */
int np_usdt_parse(const struct np_isa *isa, const char *text, size_t len,
		  struct np_usdt_arg *out, struct np_usdt_span *sym, const char **why);

/* A note's argument string into its arguments, at the spaces outside
 * brackets (arm64's "[sp, 12]" has one): up to max spans. The count, or
 * -E2BIG when there are more than max. */
int np_usdt_split(const char *args, struct np_usdt_span *out, int max);

/* --- for the ISAs' operand parsers ------------------------------------------ */

static inline bool np_usdt_digit(char c, unsigned base, unsigned *v)
{
	unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
		     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
		     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
					    : 99;
	*v = d;
	return d < base;
}

/* An integer at *p (before end): an optional sign, decimal or 0x hex. *p
 * moves past it. 0, or -1 (no digit, or more than 64 bits). */
static inline int np_usdt_int(const char **p, const char *end, int64_t *v)
{
	const char *s = *p;
	bool neg = false;
	unsigned base = 10, d;
	uint64_t x = 0;
	if (s < end && (*s == '-' || *s == '+'))
		neg = *s++ == '-';
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
	    np_usdt_digit(s[2], 16, &d)) {
		base = 16;
		s += 2;
	}
	if (s >= end || !np_usdt_digit(*s, base, &d))
		return -1;
	for (; s < end && np_usdt_digit(*s, base, &d); s++) {
		if (x > (UINT64_MAX - d) / base)
			return -1;
		x = x * base + d;
	}
	/* -2^63 .. 2^64-1: a large unsigned constant keeps its bits */
	if (neg && x > (uint64_t)INT64_MAX + 1)
		return -1;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	*p = s;
	return 0;
}

static inline bool np_usdt_ident_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' ||
	       (!first && ((c >= '0' && c <= '9') || c == '$'));
}

/* A displacement: integers and at most one symbol joined by + and -
 * ("-8", "gs", "4+gs", "gs+4", "gs-4"), as GAS prints an offsettable
 * operand's. *p moves past it; *sym is the symbol's place relative to
 * base (len 0: none). 0, or -1 with *why (an empty or bad term, a second or
 * subtracted symbol). */
static inline int np_usdt_disp(const char **p, const char *end, const char *base, int64_t *disp,
			       struct np_usdt_span *sym, const char **why)
{
	const char *s = *p;
	int64_t total = 0;
	bool neg = false;
	sym->off = sym->len = 0;
	for (bool first = true;; first = false) {
		if (first && (s >= end || *s == '('))
			break; /* none: (%rax) */
		if (!first || (s < end && *s == '-')) {
			if (s >= end || (*s != '+' && *s != '-'))
				break;
			neg = *s++ == '-';
		}
		int64_t v;
		if (s < end && np_usdt_ident_char(*s, true)) {
			const char *id = s;
			while (s < end && np_usdt_ident_char(*s, false))
				s++;
			if (sym->len || neg) {
				*why = sym->len ? "two symbols in one address" : "a symbol subtracted";
				return -1;
			}
			sym->off = (uint16_t)(id - base);
			sym->len = (uint16_t)(s - id);
			continue;
		}
		if (np_usdt_int(&s, end, &v)) {
			*why = "a displacement that is neither a number nor a symbol";
			return -1;
		}
		total = neg ? (int64_t)((uint64_t)total - (uint64_t)v)
			    : (int64_t)((uint64_t)total + (uint64_t)v);
	}
	*disp = total;
	*p = s;
	return 0;
}
#endif

/* SPDX-License-Identifier: MIT */
/* The USDT argument parser (src/arch/usdt.h) against tables of specs: what
 * each good one says, and the reason each bad one is refused for. Shared by
 * tests/unit/<isa>/usdt_test.c. */
#ifndef NP_TESTS_USDT_CHECK_H
#define NP_TESTS_USDT_CHECK_H

#include "arch/usdt.h"
#include "test.h"

#define NOREG NP_USDT_NOREG

struct usdt_vec {
	const char *text;
	uint8_t kind, size;
	bool is_signed;
	int8_t base, index;
	uint8_t scale, shift;
	int64_t disp;
	const char *sym; /* the symbol its address is relative to, or NULL */
};

struct usdt_bad {
	const char *text;
	const char *why; /* a part of the reason */
};

static inline void check_usdt_good(const struct np_isa *isa, const struct usdt_vec *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct np_usdt_arg a;
		struct np_usdt_span sym;
		const char *why = NULL;
		int rc = np_usdt_parse(isa, v[i].text, strlen(v[i].text), &a, &sym, &why);
		if (rc) {
			fprintf(stderr, "'%s' refused: %s\n", v[i].text, why);
			np_test_failed = 1;
			continue;
		}
		char name[64] = "";
		snprintf(name, sizeof(name), "%.*s", (int)sym.len, v[i].text + sym.off);
		if (a.kind != v[i].kind || a.size != v[i].size || a.is_signed != v[i].is_signed ||
		    a.base != v[i].base || a.index != v[i].index || a.scale != v[i].scale ||
		    a.shift != v[i].shift || a.disp != v[i].disp ||
		    strcmp(name, v[i].sym ? v[i].sym : "") ||
		    !!(a.flags & NP_USDT_SYMBOL) != (v[i].sym != NULL)) {
			fprintf(stderr,
				"'%s': kind %u size %u signed %u base %d index %d scale %u shift %u "
				"disp %lld sym '%s'\n",
				v[i].text, a.kind, a.size, a.is_signed, a.base, a.index, a.scale, a.shift,
				(long long)a.disp, name);
			np_test_failed = 1;
		}
	}
}

static inline void check_usdt_bad(const struct np_isa *isa, const struct usdt_bad *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct np_usdt_arg a;
		struct np_usdt_span sym;
		const char *why = NULL;
		int rc = np_usdt_parse(isa, v[i].text, strlen(v[i].text), &a, &sym, &why);
		if (rc != -EINVAL || !why || !strstr(why, v[i].why)) {
			fprintf(stderr, "'%s': rc %d, reason '%s', want '%s'\n", v[i].text, rc,
				why ? why : "(none)", v[i].why);
			np_test_failed = 1;
		}
	}
}
#endif

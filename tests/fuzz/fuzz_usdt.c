/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the USDT argument parser (src/arch/usdt.c and each ISA's operand
 * parser): the first byte picks the ISA, the rest is a note's argument
 * string, split into its arguments and each parsed. An argument either
 * parses into one whose every field the agent's hit path may use without
 * another check (src/agent/agent.c, usdt_arg_valid), or is refused with a
 * reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/usdt.h"
#include "fuzz.h"

static void check_arg(const char *text, size_t len, const struct np_usdt_arg *a,
		      const struct np_usdt_span *sym)
{
	FUZZ_ASSERT(a->kind >= NP_USDT_CONST && a->kind <= NP_USDT_MEM);
	FUZZ_ASSERT(a->size == 1 || a->size == 2 || a->size == 4 || a->size == 8);
	FUZZ_ASSERT(a->base >= NP_USDT_NOREG && a->base < NP_NGPR);
	FUZZ_ASSERT(a->index >= NP_USDT_NOREG && a->index < NP_NGPR);
	FUZZ_ASSERT(a->scale == 1 || a->scale == 2 || a->scale == 4 || a->scale == 8);
	FUZZ_ASSERT(a->kind != NP_USDT_REG || a->base >= 0);
	FUZZ_ASSERT(a->shift == 0 || (a->shift == 8 && a->size == 1));
	FUZZ_ASSERT(!(a->flags & ~NP_USDT_SYMBOL));
	FUZZ_ASSERT(!!(a->flags & NP_USDT_SYMBOL) == (sym->len != 0));
	FUZZ_ASSERT((size_t)sym->off + sym->len <= len);
	(void)text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct np_isa *const isas[] = {&np_isa_x86_64, &np_isa_arm64, &np_isa_riscv64};
	if (size < 1)
		return 0;
	const struct np_isa *isa = isas[data[0] % 3];
	char *args = malloc(size);
	if (!args)
		return 0;
	memcpy(args, data + 1, size - 1);
	args[size - 1] = 0;
	struct np_usdt_span s[NP_USDT_MAX_ARGS];
	int n = np_usdt_split(args, s, NP_USDT_MAX_ARGS);
	FUZZ_ASSERT(n >= -E2BIG && n <= NP_USDT_MAX_ARGS);
	for (int i = 0; i < n; i++) {
		const char *text = args + s[i].off;
		struct np_usdt_arg a;
		struct np_usdt_span sym;
		const char *why = NULL;
		FUZZ_ASSERT((size_t)s[i].off + s[i].len <= strlen(args) && s[i].len > 0);
		if (np_usdt_parse(isa, text, s[i].len, &a, &sym, &why) == 0)
			check_arg(text, s[i].len, &a, &sym);
		else
			FUZZ_ASSERT(why && why[0]);
	}
	free(args);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* printf's format strings, as bpftrace takes them: checked against the
 * arguments' types when the script is, printed by the command. */
#ifndef NP_SCRIPT_FORMAT_H
#define NP_SCRIPT_FORMAT_H
#include <stddef.h>
#include <stdio.h>

#include "ast.h"

/* 0 when the arguments fit the format; -1 (a general reason) or the
 * 1-based index of the first argument that does not, with why. */
int format_check(const char *fmt, size_t len, const struct type *types, int n, char *why,
		 size_t whylen);

/* An argument ready to print: a number, or text (strings, and what the
 * command turned into text: symbols, stacks, probe names). */
struct fmt_arg {
	int is_text;
	unsigned long long num;
	const char *text;
	size_t tlen;
};

/* The formatted text, appended to *buf (malloc'd, *len bytes so far). */
void format_print(char **buf, size_t *len, const char *fmt, size_t flen,
		  const struct fmt_arg *args, int n);
#endif

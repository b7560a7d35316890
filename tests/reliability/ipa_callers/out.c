/* SPDX-License-Identifier: MIT */
/* The workloads' results, appended to their buffer (truncated when full). */
#include <stdarg.h>
#include <stdio.h>

#include "ipa_callers.h"

void ipa_printf(struct ipa_out *o, const char *fmt, ...)
{
	size_t room = sizeof o->text - o->len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->text + o->len, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n < room ? (size_t)n : room - 1;
}

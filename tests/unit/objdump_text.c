/* SPDX-License-Identifier: MIT */
#include "objdump_text.h"

#include <stdbool.h>
#include <string.h>

static bool at_cut(const struct objdump_dialect *d, const char *p)
{
	for (const char *const *c = d->cut; c && *c; c++)
		if (strncmp(p, *c, strlen(*c)) == 0)
			return true;
	return false;
}

void objdump_text(const struct objdump_dialect *d, const char *in, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = in; *p && n + 3 < cap; p++) {
		const char *q = p;

		if (at_cut(d, p))
			break;
		while (*q && strchr("0123456789abcdef", *q))
			q++;
		if (q > p && strncmp(q, " <", 2) == 0 && (p == in || strchr(d->addr_after, p[-1]))) {
			out[n++] = '0';
			out[n++] = 'x';
			while (p < q && n + 1 < cap)
				out[n++] = *p++;
			p = strchr(q, '>');
			if (!p)
				break;
			continue;
		}
		out[n++] = *p;
	}
	while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
		n--;
	out[n] = '\0';
}

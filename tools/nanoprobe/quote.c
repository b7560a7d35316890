/* SPDX-License-Identifier: MIT */
#include "quote.h"

#include <string.h>

void quote_bytes(FILE *f, const char *s, size_t len, bool json)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			fputc(ch, f);
		else
			fprintf(f, json ? "\\u%04x" : "\\x%02x", ch);
	}
	fputc('"', f);
}

void quote_json(FILE *f, const char *s)
{
	quote_bytes(f, s, strlen(s), true);
}

/* SPDX-License-Identifier: MIT */
#include "quote.h"

#include <string.h>

size_t utf8_seq_len(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf; /* overlong; surrogates */
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf; /* overlong; > U+10FFFF */
	else
		return 0; /* a continuation byte, an overlong lead (c0, c1), f5..ff */
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void quote_bytes(FILE *f, const char *str, size_t len, bool json)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned char ch = s[i];
		size_t n = utf8_seq_len(s + i, len - i);
		bool c1 = n == 2 && ch == 0xc2 && s[i + 1] < 0xa0; /* U+0080..U+009F */
		if (c1 && !json)
			n = 1; /* a C1 control: each byte escaped */
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (n > 1)
			fwrite(s + i, 1, n, f);
		else if (ch >= 0x20 && ch < 0x7f)
			fputc(ch, f);
		else if (!json)
			fprintf(f, "\\x%02x", ch);
		else if (n == 1)
			fprintf(f, "\\u%04x", ch);
		else
			fprintf(f, "\\udc%02x", ch); /* not UTF-8: surrogateescape */
		i += n ? n : 1;
	}
	fputc('"', f);
}

void quote_json(FILE *f, const char *s)
{
	quote_bytes(f, s, strlen(s), true);
}

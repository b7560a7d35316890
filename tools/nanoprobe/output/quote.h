/* SPDX-License-Identifier: MIT */
/*
 * Strings as the outputs print them. Valid UTF-8 passes through as UTF-8
 * ("café" stays café); what is not text is escaped:
 *
 *   JSON   control characters as \u00XX, '"' and '\' as \" and \\; a byte
 *          that is not part of valid UTF-8 as \udcXX (XX the byte: the
 *          lone surrogates U+DC80..U+DCFF, as Python's "surrogateescape"
 *          error handler writes them, which gives the bytes back; other
 *          readers show U+FFFD)
 *   text   the kernel trace's double-quoted form: control characters,
 *          C1 controls and bytes that are not valid UTF-8 as \xNN, '"'
 *          and '\' as \" and \\
 *
 * UTF-8 is valid as RFC 3629 says: no overlong forms, no surrogates,
 * nothing above U+10FFFF.
 */
#ifndef NP_CLI_QUOTE_H
#define NP_CLI_QUOTE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* len bytes of s (NULs included), quoted as JSON or as text. */
void quote_bytes(FILE *f, const char *s, size_t len, bool json);
/* A NUL-terminated string as a JSON string. */
void quote_json(FILE *f, const char *s);
/* The length of the valid UTF-8 sequence at s[0..len), 0 if it is not one. */
size_t utf8_seq_len(const unsigned char *s, size_t len);
#endif

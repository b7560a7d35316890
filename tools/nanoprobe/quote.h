/* SPDX-License-Identifier: MIT */
/* Strings as the outputs print them: JSON strings, or the kernel trace's
 * double-quoted form with \xNN escapes. */
#ifndef NP_CLI_QUOTE_H
#define NP_CLI_QUOTE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* len bytes of s (NULs included), quoted; json: \uNNNN for what is not
 * printable ASCII, else \xNN. */
void quote_bytes(FILE *f, const char *s, size_t len, bool json);
/* A NUL-terminated string as a JSON string. */
void quote_json(FILE *f, const char *s);
#endif

/* SPDX-License-Identifier: MIT */
/* objdump's disassembly text in the form our formatters give (every ISA's
 * unit tests check their vectors' comments against the cross objdump). */
#ifndef NP_TEST_OBJDUMP_TEXT_H
#define NP_TEST_OBJDUMP_TEXT_H

#include <stddef.h>

/* How one ISA's objdump text differs from ours. */
struct objdump_dialect {
	const char *const *cut; /* text from one of these on is dropped (NULL-ended) */
	const char *addr_after; /* the characters an address follows */
};

/* "b\t401010 <.text.v3+0x10>" -> "b\t0x401010": a symbolised address
 * becomes a plain 0x one, what follows a cut marker goes, and so does
 * trailing white space. */
void objdump_text(const struct objdump_dialect *d, const char *in, char *out, size_t cap);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * C++ names as people write them: _ZN4Shop5priceEPKci is Shop::price(char
 * const*, int), and a spec may say Shop::price or Shop::*. The demangler
 * is libstdc++'s (the Itanium ABI's __cxa_demangle), callable from C.
 */
#include "demangle.h"

#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *np_demangle(const char *name)
{
	int status = 0;
	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	char *out = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* The parameter list ends the name: walk back to its '(' (it may hold
 * parentheses of its own, function pointer types). */
static size_t params_start(const char *s, size_t len)
{
	int depth = 0;
	for (size_t i = len; i > 0; i--) {
		if (s[i - 1] == ')')
			depth++;
		else if (s[i - 1] == '(' && --depth == 0)
			return i - 1;
	}
	return len;
}

char *np_demangled_short(const char *demangled)
{
	size_t len = strlen(demangled);
	static const char quals[] = " const";
	/* "f(int) [clone .isra.0]": a copy the optimiser made of f */
	const char *clone = strstr(demangled, " [clone ");
	if (clone)
		len = (size_t)(clone - demangled);
	if (len > sizeof(quals) - 1 && !strcmp(demangled + len - (sizeof(quals) - 1), quals))
		len -= sizeof(quals) - 1;
	if (len == 0 || demangled[len - 1] != ')')
		return strdup(demangled);
	return strndup(demangled, params_start(demangled, len));
}

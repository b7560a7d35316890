/* SPDX-License-Identifier: MIT */
/*
 * Fuzz spec_parse (tools/nanoprobe/symbols/spec.c): any bytes, as a NUL-terminated
 * string, either parse into a spec whose every fetch is well-formed, or
 * fail with -EINVAL and an error text that quotes the spec.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "symbols/spec.h"

static void check_fetch(const struct np_fetch *f)
{
	FUZZ_ASSERT(f->base >= NP_FB_REG && f->base <= NP_FB_MODREL);
	FUZZ_ASSERT(f->type >= NP_FT_U && f->type <= NP_FT_STRING);
	if (f->type == NP_FT_STRING)
		FUZZ_ASSERT(f->size == 8);
	else
		FUZZ_ASSERT(f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
	FUZZ_ASSERT(f->nderef <= NP_MAX_DEREF);
	FUZZ_ASSERT(memchr(f->name, 0, sizeof(f->name)) != NULL);
	FUZZ_ASSERT(f->name[0] != 0);
	char buf[16];
	const char *t = spec_type_name(f, buf, sizeof(buf));
	FUZZ_ASSERT(t && t[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	size_t tlen = strlen(text);
	/* room for the reason, the spec and the caret line under it */
	size_t errlen = 3 * tlen + 1024;
	char *err = malloc(errlen);
	struct spec *s = malloc(sizeof(*s));
	if (!err || !s) {
		free(text), free(err), free(s);
		return 0;
	}
	memset(err, 0, errlen);

	int rc = spec_parse(text, s, err, errlen);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	if (rc == -EINVAL) {
		FUZZ_ASSERT(err[0] != 0);
		FUZZ_ASSERT(memchr(err, 0, errlen) != NULL);
		size_t first = strcspn(text, "\n");
		char *line = strndup(text, first);
		FUZZ_ASSERT(line);
		FUZZ_ASSERT(strstr(err, line) != NULL);
		free(line);
	} else {
		FUZZ_ASSERT(s->text == text);
		FUZZ_ASSERT(s->nargs <= NP_MAX_ARGS);
		FUZZ_ASSERT(memchr(s->group, 0, sizeof(s->group)) != NULL);
		FUZZ_ASSERT(memchr(s->event, 0, sizeof(s->event)) != NULL);
		FUZZ_ASSERT(memchr(s->path, 0, sizeof(s->path)) != NULL);
		FUZZ_ASSERT(memchr(s->symbol, 0, sizeof(s->symbol)) != NULL);
		for (unsigned i = 0; i < s->nargs; i++) {
			check_fetch(&s->args[i].f);
			FUZZ_ASSERT(memchr(s->args[i].sym, 0, sizeof(s->args[i].sym)) != NULL);
			if (s->args[i].f.base == NP_FB_RETVAL)
				FUZZ_ASSERT(s->is_return);
		}
	}
	free(text);
	free(err);
	free(s);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Fuzz watch_spec_parse (tools/nanoprobe/verbs/watch_spec.c): any bytes, as a
 * NUL-terminated string, either parse into a spec of a known type with
 * terminated names and a length that fits its field, or fail with
 * -EINVAL and a reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "verbs/watch_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[512];
	struct watch_spec *w = malloc(sizeof(*w));
	if (!text || !w) {
		free(text), free(w);
		return 0;
	}
	memcpy(text, data, size);
	text[size] = 0;
	memset(err, 0, sizeof(err));
	int rc = watch_spec_parse(text, w, err, sizeof(err));
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	if (rc) {
		FUZZ_ASSERT(err[0] != 0 && memchr(err, 0, sizeof(err)) != NULL);
	} else {
		FUZZ_ASSERT(w->text == text);
		FUZZ_ASSERT(w->type == NP_WATCH_WRITE || w->type == NP_WATCH_RW ||
			    w->type == NP_WATCH_EXEC);
		FUZZ_ASSERT(w->len <= 64);
		FUZZ_ASSERT(memchr(w->path, 0, sizeof(w->path)) != NULL);
		FUZZ_ASSERT(memchr(w->symbol, 0, sizeof(w->symbol)) != NULL);
		/* an address, or a symbol with no ':' left in it */
		FUZZ_ASSERT(w->symbol[0] || !strncasecmp(text, "0x", 2));
		FUZZ_ASSERT(!strchr(w->symbol, ':'));
	}
	free(text);
	free(w);
	return 0;
}

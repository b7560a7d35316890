/* SPDX-License-Identifier: MIT */
/*
 * Fuzz np_symtab_load (tools/nanoprobe/symbols/symtab.c, through libdwfl): the
 * input is written to a temporary file and loaded from there. A table that
 * loads is queried every way the command does, then freed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbols/symtab.h"

/* One temporary file per process, rewritten for each input: the loader
 * resolves its path (realpath), which a memfd's /proc/self/fd/N has not. */
static char tmp_path[64];
static int tmp_fd = -1;
static unsigned long loaded, tried;

static void cleanup(void)
{
	if (tmp_fd >= 0)
		unlink(tmp_path);
	if (getenv("NP_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_symtab: %lu of %lu inputs loaded\n", loaded, tried);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (tmp_fd < 0) {
		setenv("DEBUGINFOD_URLS", "", 1); /* never ask a server for a debug file */
		const char *dir = getenv("TMPDIR");
		snprintf(tmp_path, sizeof(tmp_path), "%s/np-fuzz-symtab.XXXXXX",
			 dir && strlen(dir) < 32 ? dir : "/tmp");
		tmp_fd = mkstemp(tmp_path);
		if (tmp_fd < 0) {
			perror("mkstemp");
			abort();
		}
		atexit(cleanup);
	}
	FUZZ_ASSERT(ftruncate(tmp_fd, 0) == 0);
	for (size_t off = 0; off < size;) {
		ssize_t w = pwrite(tmp_fd, data + off, size - off, (off_t)off);
		FUZZ_ASSERT(w > 0);
		off += (size_t)w;
	}
	const char *path = tmp_path;
	tried++;

	struct np_symtab st;
	char err[256] = "";
	memset(&st, 0, sizeof(st));
	int rc = np_symtab_load(path, &st, err, sizeof(err));
	if (rc < 0) {
		FUZZ_ASSERT(memchr(err, 0, sizeof(err)) != NULL);
		return 0;
	}
	FUZZ_ASSERT(rc == 0);
	loaded++;
	FUZZ_ASSERT(st.n == 0 || st.syms != NULL);

	const struct np_sym **all = NULL;
	size_t n = np_symtab_match(&st, "*", &all);
	FUZZ_ASSERT(n <= st.n);
	FUZZ_ASSERT((n == 0) == (all == NULL));
	for (size_t i = 0; i < n; i++) {
		const struct np_sym *s = all[i];
		FUZZ_ASSERT(s->name != NULL);
		FUZZ_ASSERT(i == 0 || all[i - 1]->addr <= s->addr);
		const struct np_sym *at = np_symtab_at(&st, s->addr);
		(void)at;
		if (s->size)
			(void)np_symtab_at(&st, s->addr + s->size - 1);
		(void)np_symtab_find(&st, s->name);
		(void)np_symtab_limit(&st, s);
		uint8_t buf[16];
		(void)np_symtab_read(&st, s->addr, buf, sizeof(buf));
		if (i >= 64)
			break;
	}
	free(all);
	for (size_t i = 0; i < st.n; i++) {
		FUZZ_ASSERT(st.syms[i].name != NULL);
		FUZZ_ASSERT(i == 0 || st.syms[i - 1].addr <= st.syms[i].addr);
	}

	static const uint64_t addrs[] = {0, 1, 0x1000, 0x400000, 0x401000, UINT64_MAX / 2,
					 UINT64_MAX - 1, UINT64_MAX};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		uint64_t v = 0;
		(void)np_symtab_at(&st, addrs[i]);
		if (np_symtab_offset_to_vaddr(&st, addrs[i], &v) == 0)
			(void)np_symtab_at(&st, v);
		uint8_t b[8];
		(void)np_symtab_read(&st, addrs[i], b, sizeof(b));
	}
	char sugg[256];
	np_symtab_suggest(&st, "main", sugg, sizeof(sugg));
	FUZZ_ASSERT(memchr(sugg, 0, sizeof(sugg)) != NULL);
	np_symtab_suggest(&st, "", sugg, sizeof(sugg));
	np_symtab_suggest(&st, "a_rather_long_name_that_nothing_has", sugg, 8);
	(void)np_sym_source_name(st.sources);
	np_symtab_free(&st);
	return 0;
}

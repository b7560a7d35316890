/* SPDX-License-Identifier: MIT */
/*
 * The loader's cache read directly (tools/nanoprobe/symbols/ldcache.c)
 * against the oracle it replaces: `ldconfig -p` must print, line for line,
 * what the reader gives, for the system's cache and for caches ldconfig
 * writes here in each of its formats (old, compat, new), one of them with
 * a glibc-hwcaps subdirectory. A damaged cache gives nothing at all, and
 * library short names resolve to what ldconfig's list says.
 */
#include "test.h"

#include "symbols/ldcache.h"
#include "symbols/symtab.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#define LDCONFIG "/sbin/ldconfig"
#define MAX_LINES 8192

/* The lines a listing printed, as "\tSONAME (TAGS) => PATH". */
struct listing {
	char *line[MAX_LINES];
	size_t n;
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->line[i]);
	l->n = 0;
}

static int add_entry(const struct np_ldcache_entry *e, void *arg)
{
	struct listing *l = arg;
	if (l->n < MAX_LINES &&
	    asprintf(&l->line[l->n], "\t%s (%s) => %s\n", e->soname, e->tags, e->path) > 0)
		l->n++;
	return 0;
}

/* ldconfig -p's entries (not its "N libs found" line); false if it failed. */
static bool ldconfig_lists(const char *cache, struct listing *l)
{
	char cmd[PATH_MAX + 64], buf[PATH_MAX + 256];
	/* the C locale: ldconfig translates "unknown" (a flag it cannot name) */
	snprintf(cmd, sizeof(cmd), "LC_ALL=C " LDCONFIG " -p%s%s", cache ? " -C " : "",
		 cache ? cache : "");
	FILE *f = popen(cmd, "r");
	if (!f)
		return false;
	while (fgets(buf, sizeof(buf), f))
		if (buf[0] == '\t' && l->n < MAX_LINES)
			l->line[l->n++] = strdup(buf);
	return pclose(f) == 0;
}

static void check_same(const struct listing *want, const struct listing *got, const char *what)
{
	if (want->n != got->n) {
		fprintf(stderr, "%s: ldconfig lists %zu entries, the reader %zu\n", what, want->n,
			got->n);
		np_test_failed = 1;
	}
	for (size_t i = 0; i < want->n && i < got->n; i++)
		if (strcmp(want->line[i], got->line[i])) {
			fprintf(stderr, "%s: entry %zu:\n  ldconfig: %s  reader:   %s", what, i,
				want->line[i], got->line[i]);
			np_test_failed = 1;
			return;
		}
}

TEST(the_system_cache_reads_as_ldconfig_prints_it)
{
	struct listing want = {0}, got = {0};
	CHECK(ldconfig_lists(NULL, &want));
	CHECK(want.n > 0);
	CHECK_EQ(np_ldcache_each(NP_LDCACHE_FILE, add_entry, &got), 0);
	check_same(&want, &got, NP_LDCACHE_FILE);
	listing_free(&want);
	listing_free(&got);
}

/* --- caches ldconfig writes here ------------------------------------------ */

static char dir[64];

static void run(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		np_test_failed = 1;
	}
}

/* A library directory with one library in a glibc-hwcaps subdirectory
 * too (the libc this test runs with, under its own name: ldconfig lists a
 * library by its soname), and a configuration that names it. */
static bool make_tree(void)
{
	char cmd[3 * PATH_MAX], libc[PATH_MAX];
	snprintf(dir, sizeof(dir), "/tmp/np-ldcache-XXXXXX");
	if (!mkdtemp(dir))
		return false;
	if (np_resolve_path("c", getpid(), libc, sizeof(libc), cmd, sizeof(cmd)) ||
	    strlen(libc) > 1024)
		return false;
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/lib/glibc-hwcaps/np-v9 && cp %s %s/lib/ && "
		 "cp %s %s/lib/glibc-hwcaps/np-v9/ && echo %s/lib > %s/conf",
		 dir, libc, dir, libc, dir, dir, dir);
	return system(cmd) == 0;
}

static void remove_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	run(cmd);
}

/* A cache of the format, written by ldconfig (-X: no links made, -i: its
 * own auxiliary cache not read). */
static void write_cache(const char *format, char *path, size_t len)
{
	char cmd[512];
	snprintf(path, len, "%s/cache.%s", dir, format);
	snprintf(cmd, sizeof(cmd), LDCONFIG " -X -i -c %s -C %s -f %s/conf 2>/dev/null", format,
		 path, dir);
	run(cmd);
}

static bool lists_line_with(const struct listing *l, const char *text)
{
	for (size_t i = 0; i < l->n; i++)
		if (strstr(l->line[i], text))
			return true;
	return false;
}

TEST(every_format_ldconfig_writes_reads_as_it_prints_it)
{
	static const char *const formats[] = {"old", "compat", "new"};
	if (!make_tree()) {
		CHECK(!"a library tree in /tmp");
		return;
	}
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++) {
		char path[PATH_MAX];
		struct listing want = {0}, got = {0};
		write_cache(formats[i], path, sizeof(path));
		CHECK(ldconfig_lists(path, &want));
		CHECK(lists_line_with(&want, dir));
		/* the old format has no room for glibc-hwcaps entries; in the
		 * compat one, ldconfig reads their names at the wrong offset
		 * ("hwcap: \"\""), and so does the reader, as it must */
		CHECK(strcmp(formats[i], "old") == 0 || lists_line_with(&want, "hwcap: \""));
		CHECK(strcmp(formats[i], "new") || lists_line_with(&want, "hwcap: \"np-v9\""));
		CHECK_EQ(np_ldcache_each(path, add_entry, &got), 0);
		check_same(&want, &got, formats[i]);
		listing_free(&want);
		listing_free(&got);
	}
	remove_tree();
}

/* --- damaged caches -------------------------------------------------------- */

static int count_entry(const struct np_ldcache_entry *e, void *arg)
{
	(void)e;
	++*(int *)arg;
	return 0;
}

/* The new-format cache, changed at off to the bytes given (or cut to off
 * bytes when len is 0), read back: its result, and no entry may be seen. */
static int read_damaged(const char *good, long off, const void *bytes, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/damaged", dir);
	FILE *in = fopen(good, "rb"), *out = fopen(path, "wb");
	static unsigned char buf[1 << 20];
	size_t n = in ? fread(buf, 1, sizeof(buf), in) : 0;
	if (len && (size_t)off + len <= n)
		memcpy(buf + off, bytes, len);
	if (!len && (size_t)off < n)
		n = (size_t)off;
	if (out)
		fwrite(buf, 1, n, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	int seen = 0, rc = np_ldcache_each(path, count_entry, &seen);
	if (rc < 0 && seen) {
		fprintf(stderr, "a refused cache showed %d entries\n", seen);
		np_test_failed = 1;
	}
	return rc;
}

static uint32_t read_u32(const char *file, long off)
{
	uint32_t v = 0;
	FILE *f = fopen(file, "rb");
	if (f && fseek(f, off, SEEK_SET) == 0 && fread(&v, sizeof(v), 1, f) == 1) {
	}
	if (f)
		fclose(f);
	return v;
}

TEST(a_damaged_cache_is_refused_whole)
{
	char good[PATH_MAX];
	struct stat st;
	if (!make_tree()) {
		CHECK(!"a library tree in /tmp");
		return;
	}
	write_cache("new", good, sizeof(good));
	if (stat(good, &st)) {
		CHECK(!"a cache written");
		remove_tree();
		return;
	}
	uint32_t nlibs = read_u32(good, 20), ext = read_u32(good, 32);
	uint32_t far = (uint32_t)st.st_size + 100, last = (uint32_t)st.st_size - 1;
	CHECK(nlibs > 1 && ext > 0);
	/* as written it reads; cut to nothing it is empty, as ldconfig says */
	CHECK_EQ(read_damaged(good, st.st_size, "", 0), 0);
	CHECK_EQ(read_damaged(good, 0, "", 0), 0);
	/* cut inside the entries */
	CHECK_EQ(read_damaged(good, 48 + 24, "", 0), -EINVAL);
	/* an entry's name, then its path, outside the file */
	CHECK_EQ(read_damaged(good, 48 + 24 * (nlibs - 1) + 4, &far, 4), -EINVAL);
	CHECK_EQ(read_damaged(good, 48 + 8, &far, 4), -EINVAL);
	/* a name that runs to the end of the file without its NUL (the
	 * file ends with ldconfig's name, which has none) */
	CHECK_EQ(read_damaged(good, 48 + 4, &last, 4), -EINVAL);
	/* more entries than the file holds */
	CHECK_EQ(read_damaged(good, 20, &far, 4), -EINVAL);
	/* the extension directory's magic, and its place */
	CHECK_EQ(read_damaged(good, ext, "XXXX", 4), -EINVAL);
	CHECK_EQ(read_damaged(good, 32, &far, 4), -EINVAL);
	/* another endianness, an unknown magic */
	CHECK_EQ(read_damaged(good, 28, "\x03", 1), -EINVAL);
	CHECK_EQ(read_damaged(good, 0, "glibc-ld.so.cache9.9", 20), -EINVAL);
	CHECK_EQ(np_ldcache_each("/nonexistent/ld.so.cache", count_entry, &(int){0}), -ENOENT);
	remove_tree();
}

/* --- what names resolve to ------------------------------------------------- */

/* x86-64 only: the ABI tag ldconfig prints differs per host ("x86-64"
 * here), and the cross suites run under qemu with the build machine's
 * ld.so.cache, which lists no library of theirs. */
#if defined(__x86_64__)
/* The rule np_resolve_path applies to `ldconfig -p`: the first
 * entry of the host's ABI whose soname is the name (a soname), or lib
 * NAME.so[.*] (a short name, with or without "lib"). */
static bool soname_is(const char *soname, const char *name)
{
	if (strstr(name, ".so"))
		return !strcmp(soname, name);
	char stem[256];
	snprintf(stem, sizeof(stem), "%s%s.so", strncmp(name, "lib", 3) ? "lib" : "", name);
	size_t n = strlen(stem);
	return !strncmp(soname, stem, n) && (soname[n] == '\0' || soname[n] == '.');
}

static bool ldconfig_says(const struct listing *l, const char *name, char *path, size_t len)
{
	for (size_t i = 0; i < l->n; i++) {
		char soname[256], tags[256], file[PATH_MAX];
		if (sscanf(l->line[i], "\t%255s (%255[^)]) => %4095s", soname, tags, file) == 3 &&
		    soname_is(soname, name) && strstr(tags, "x86-64"))
			return snprintf(path, len, "%s", file), true;
	}
	return false;
}

TEST(library_short_names_resolve_to_the_first_entry_ldconfig_lists)
{
	/* names a program in $PATH cannot take (a bare word is a program
	 * first: sqlite3 is /usr/bin/sqlite3) */
	static const char *const names[] = {
		"c",	      "libc",	      "libc.so.6", "m",		"pthread",  "libdl",
		"libz",	      "libz.so.1",    "libstdc++", "libgcc_s",	"libelf",   "libdw",
		"libsqlite3", "libpython3.11", "libzstd",   "libcrypto", "libssl",
	};
	struct listing l = {0};
	CHECK(ldconfig_lists(NULL, &l));
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		char want[PATH_MAX], real[PATH_MAX], got[PATH_MAX], err[256];
		if (!ldconfig_says(&l, names[i], want, sizeof(want)))
			continue; /* not installed here */
		CHECK_EQ(np_resolve_path(names[i], 0, got, sizeof(got), err, sizeof(err)), 0);
		CHECK(realpath(want, real) != NULL);
		CHECK_STR(got, real);
	}
	listing_free(&l);
}
#endif

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * The dynamic loader's cache (/etc/ld.so.cache), read as `ldconfig -p`
 * reads it: every entry in the file's order, with the same text. Library
 * short names ("c", "libsqlite3") resolve through it (symtab.c).
 */
#ifndef NP_CLI_LDCACHE_H
#define NP_CLI_LDCACHE_H
#include <stddef.h>

/* The file `ldconfig -p` reads (glibc's LD_SO_CACHE). */
#define NP_LDCACHE_FILE "/etc/ld.so.cache"

/* One entry as `ldconfig -p` prints it: "\tSONAME (TAGS) => PATH". */
struct np_ldcache_entry {
	const char *soname, *path;
	/* "libc6,x86-64", and what else ldconfig prints there (", hwcap:
	 * \"x86-64-v3\"", ", OS ABI: Linux 3.2.0") */
	char tags[128];
};

/* fn(entry, arg) for each entry of the cache in the file's order, until
 * fn returns non-zero. 0 when the whole file was read (an empty file has
 * no entry); -ENOENT when it cannot be opened; -EINVAL when it is not a
 * cache this reader checked every offset of (unknown format, other
 * endianness, an offset or string out of bounds): nothing of such a file
 * is trusted, the caller asks ldconfig instead. The entries are checked
 * before the first fn call: fn never sees part of a damaged file. */
int np_ldcache_each(const char *file, int (*fn)(const struct np_ldcache_entry *e, void *arg),
		    void *arg);
#endif

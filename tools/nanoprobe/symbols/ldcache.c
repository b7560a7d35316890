/* SPDX-License-Identifier: MIT */
/*
 * Reading the loader's cache without running ldconfig.
 *
 * `ldconfig -p` through popen costs a shell and ldconfig, two processes
 * per library name a command resolves, before the traced program may even
 * start. The file is small and its format fixed (glibc's dl-cache.h):
 *
 *   old format (glibc < 2.32 still writes it first, "compat"):
 *     "ld.so-1.7.0", nlibs, nlibs x {int32 flags; uint32 key, value}
 *     then, aligned to 8, the new format; if there is none, the old
 *     entries are the list, their strings after the last entry
 *   new format ("glibc-ld.so.cache" "1.1"), 48 bytes of header:
 *     nlibs, len_strings, flags (endianness), extension_offset, then
 *     nlibs x {int32 flags; uint32 key, value, osversion; uint64 hwcap},
 *     strings at offsets from the header's start
 *   extensions (at extension_offset from the file's start): a magic, a
 *     count, sections {tag, flags, offset, size}; tag 1 lists the
 *     glibc-hwcaps subdirectories as offsets (from the file's start) of
 *     their names, which an entry whose hwcap has bit 62 names by index.
 *
 * ldconfig prints the new format's entries when there is one, else the
 * old's, in the file's order, each as "SONAME (TAGS) => PATH": this file
 * gives the same entries, in the same order, with the same TAGS text, so
 * that what symtab.c picks from them is what it picked from ldconfig's
 * output. Every offset is checked; a file that fails any check is not
 * used at all (-EINVAL), and the caller asks ldconfig as before.
 */
#include "ldcache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define OLD_HEADER 16 /* magic[11], pad, uint32 nlibs */
#define OLD_ENTRY 12
#define NEW_HEADER 48
#define NEW_ENTRY 24
#define EXT_MAGIC 0xeaa42174u /* (uint32_t)-358342284 */
#define EXT_TAG_HWCAPS 1
#define HWCAP_EXTENSION_BIT 62
#define HWCAP_ISA_LEVEL_MASK 0x3ffu /* the ISA level's 10 bits above bit 32 */
#define ENDIAN_MASK 3
#define ENDIAN_LITTLE 2
#define ENDIAN_BIG 3

struct cache {
	const unsigned char *file;
	size_t size;
	bool is_new;
	size_t head;     /* the list's header: old (0) or new */
	size_t strings;  /* what key and value are offsets from */
	uint32_t nlibs;
	size_t entries;  /* the first entry */
	const unsigned char *hwcaps; /* the hwcaps section, or NULL */
	uint32_t nhwcaps;
};

static uint32_t u32(const struct cache *c, size_t off)
{
	uint32_t v;
	memcpy(&v, c->file + off, sizeof(v));
	return v;
}

static uint64_t u64(const struct cache *c, size_t off)
{
	uint64_t v;
	memcpy(&v, c->file + off, sizeof(v));
	return v;
}

/* The NUL-terminated string at base + off, or NULL if it leaves the file. */
static const char *string_at(const struct cache *c, size_t base, uint64_t off)
{
	if (base > c->size || off >= c->size - base)
		return NULL;
	const char *s = (const char *)c->file + base + off;
	return memchr(s, '\0', c->size - base - off) ? s : NULL;
}

/* The glibc-hwcaps section, as ldconfig loads it: a malformed directory
 * is an error (false); a section of bad shape is as none. */
static bool load_extensions(struct cache *c, uint32_t ext)
{
	if (!ext)
		return true;
	if (ext % 4 || ext > c->size || c->size - ext < 8 || u32(c, ext) != EXT_MAGIC)
		return false;
	uint64_t count = u32(c, ext + 4);
	if (count * 16 > c->size - ext - 8)
		return false;
	for (uint64_t i = 0; i < count; i++) {
		size_t sec = ext + 8 + (size_t)i * 16;
		uint64_t tag = u32(c, sec), off = u32(c, sec + 8), size = u32(c, sec + 12);
		if (off + size > c->size)
			return false;
		if (tag == EXT_TAG_HWCAPS) {
			bool ok = size && off % 4 == 0 && size % 4 == 0;
			c->hwcaps = ok ? c->file + off : NULL;
			c->nhwcaps = ok ? (uint32_t)(size / 4) : 0;
		}
	}
	return true;
}

/* Which list the file holds, and where (print_cache's choice). */
static bool locate(struct cache *c)
{
	size_t new_at = 0;
	if (c->size >= OLD_HEADER && !memcmp(c->file, OLD_MAGIC, sizeof(OLD_MAGIC) - 1)) {
		uint64_t n = u32(c, 12);
		if (n > (c->size - OLD_HEADER) / OLD_ENTRY)
			return false;
		c->nlibs = (uint32_t)n;
		c->entries = OLD_HEADER;
		c->strings = OLD_HEADER + (size_t)n * OLD_ENTRY;
		new_at = (c->strings + 7) & ~(size_t)7;
		if (c->size <= new_at + NEW_HEADER ||
		    memcmp(c->file + new_at, NEW_MAGIC, sizeof(NEW_MAGIC) - 1))
			return true; /* the old format alone */
	} else if (c->size < NEW_HEADER || memcmp(c->file, NEW_MAGIC, sizeof(NEW_MAGIC) - 1)) {
		return false;
	}
	unsigned endian = c->file[new_at + 28] & ENDIAN_MASK;
	unsigned ours = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ENDIAN_LITTLE : ENDIAN_BIG;
	if (c->file[new_at + 28] && endian != ours)
		return false;
	c->is_new = true;
	c->head = c->strings = new_at;
	c->nlibs = u32(c, new_at + 20);
	c->entries = new_at + NEW_HEADER;
	if (c->nlibs > (c->size - c->entries) / NEW_ENTRY)
		return false;
	return load_extensions(c, u32(c, new_at + 32));
}

/* "libc6", ",x86-64": glibc's print_entry, flag by flag. */
static const char *type_text(int32_t flags)
{
	static const char *const type[] = {"libc4", "ELF", "libc5", "libc6"};
	unsigned t = (unsigned)flags & 0xff;
	return t < 4 ? type[t] : "unknown";
}

/* By FLAG_REQUIRED_MASK >> 8 (glibc's ldconfig.h); 0 and unknown: NULL. */
static const char *required_text(int32_t flags)
{
	static const char *const req[] = {
		[0x01] = ",64bit",        /* SPARC */
		[0x02] = ",IA-64",
		[0x03] = ",x86-64",
		[0x04] = ",64bit",        /* S390 */
		[0x05] = ",64bit",        /* POWERPC */
		[0x06] = ",N32",          /* MIPS64 */
		[0x07] = ",64bit",        /* MIPS64 N64 */
		[0x08] = ",x32",
		[0x09] = ",hard-float",   /* ARM */
		[0x0a] = ",AArch64",
		[0x0b] = ",soft-float",   /* ARM */
		[0x0c] = ",nan2008",      /* MIPS */
		[0x0d] = ",N32,nan2008",
		[0x0e] = ",64bit,nan2008",
		[0x0f] = ",soft-float",   /* RISC-V */
		[0x10] = ",double-float", /* RISC-V */
		[0x11] = ",soft-float",   /* LoongArch */
		[0x12] = ",double-float", /* LoongArch */
	};
	unsigned r = ((unsigned)flags & 0xff00) >> 8;
	return r < sizeof(req) / sizeof(*req) ? req[r] : NULL;
}

/* The hwcaps subdirectory an entry names; NULL: none (or a bad index,
 * which ldconfig shows as the number). false: a name outside the file. */
static bool hwcaps_name(const struct cache *c, uint64_t hwcap, const char **name)
{
	*name = NULL;
	bool ext = ((hwcap >> 32) & ~(uint64_t)HWCAP_ISA_LEVEL_MASK) ==
		   1ull << (HWCAP_EXTENSION_BIT - 32);
	if (!ext || !c->hwcaps || (uint32_t)hwcap >= c->nhwcaps)
		return true;
	uint32_t off;
	memcpy(&off, c->hwcaps + 4 * (uint32_t)hwcap, sizeof(off));
	if (off >= c->size)
		return true; /* ldconfig ignores it too */
	return (*name = string_at(c, 0, off)) != NULL;
}

static void format_tags(char *buf, size_t len, int32_t flags, uint32_t osversion,
			uint64_t hwcap, const char *hwcaps)
{
	static const char *const os_name[] = {"Linux",	 "Hurd",     "Solaris",	   "FreeBSD",
					      "kNetBSD", "Syllable", "Unknown OS"};
	const char *req = required_text(flags);
	char num[16] = "";
	if (!req && (flags & 0xff00))
		snprintf(num, sizeof(num), ",%d", (int)(flags & 0xff00));
	int n = snprintf(buf, len, "%s%s", type_text(flags), req ? req : num);
	if (hwcaps && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", hwcap: \"%s\"", hwcaps);
	else if (hwcap && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", hwcap: %#.16" PRIx64, hwcap);
	if (osversion && n >= 0 && (size_t)n < len) {
		unsigned os = osversion >> 24;
		snprintf(buf + n, len - (size_t)n, ", OS ABI: %s %u.%u.%u", os_name[os > 6 ? 6 : os],
			 (osversion >> 16) & 0xff, (osversion >> 8) & 0xff, osversion & 0xff);
	}
}

/* Entry i, checked; false when any of its strings leaves the file. */
static bool entry_at(const struct cache *c, uint32_t i, struct np_ldcache_entry *e)
{
	size_t at = c->entries + (size_t)i * (c->is_new ? NEW_ENTRY : OLD_ENTRY);
	int32_t flags = (int32_t)u32(c, at);
	uint32_t osversion = c->is_new ? u32(c, at + 12) : 0;
	/* the old format has no hwcap; a hwcaps name replaces the number */
	uint64_t hwcap = c->is_new ? u64(c, at + 16) : 0;
	const char *hwcaps = NULL;
	e->soname = string_at(c, c->strings, u32(c, at + 4));
	e->path = string_at(c, c->strings, u32(c, at + 8));
	if (!e->soname || !e->path || !hwcaps_name(c, hwcap, &hwcaps))
		return false;
	format_tags(e->tags, sizeof(e->tags), flags, osversion, hwcaps ? 0 : hwcap, hwcaps);
	return true;
}

static int walk(const struct cache *c, int (*fn)(const struct np_ldcache_entry *, void *),
		void *arg)
{
	struct np_ldcache_entry e;
	for (uint32_t i = 0; i < c->nlibs; i++)
		if (!entry_at(c, i, &e))
			return -EINVAL;
	for (uint32_t i = 0; i < c->nlibs; i++)
		if (entry_at(c, i, &e) && fn(&e, arg))
			break;
	return 0;
}

int np_ldcache_each(const char *file, int (*fn)(const struct np_ldcache_entry *e, void *arg),
		    void *arg)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (st.st_size == 0) { /* ldconfig lists nothing */
		close(fd);
		return 0;
	}
	struct cache c = {.size = (size_t)st.st_size};
	void *map = mmap(NULL, c.size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -EINVAL;
	c.file = map;
	int rc = locate(&c) ? walk(&c, fn, arg) : -EINVAL;
	munmap(map, c.size);
	return rc;
}

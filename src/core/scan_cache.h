/* SPDX-License-Identifier: MIT */
/*
 * The neighbour scan's cache (scan_cache.c): what a loaded module is
 * (module_id.c), and the file that keeps its scan between processes.
 * Exposed for neighbors.c and for the tests, which damage files on
 * purpose.
 */
#ifndef NP_CORE_SCAN_CACHE_H
#define NP_CORE_SCAN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NP_BUILD_ID_MAX 64 /* longer GNU build IDs are not cached */
#define NP_IMAGE_SEGMENTS 16

/* What a loaded module is: its GNU build ID, and its read-only image
 * (every PT_LOAD segment that is not writable, as mapped, every probe's
 * patch undone), which holds its code, its unwind tables and the jump
 * tables the scan reads. */
struct np_module_id {
	uint8_t build_id[NP_BUILD_ID_MAX];
	uint32_t build_id_len; /* 0: the module has none */
	uint64_t image_hash;
	uint64_t image_len;
	struct {
		uint64_t start, len;
	} image[NP_IMAGE_SEGMENTS]; /* the segments hashed, at run time */
	unsigned nimage;
};

/* The module mapped at addr: its build ID, and with image, its image's
 * hash. 0, -ENOENT (no module there, or no build ID), or the read's
 * -errno. */
int np_module_id_at(uint64_t addr, bool image, struct np_module_id *out);
/* Does [addr, addr + len) lie in one segment of the image id hashed? */
bool np_module_image_holds(const struct np_module_id *id, uint64_t addr, size_t len);

/* A 64-bit hash of bytes (np_hash_add any number of times, then
 * np_hash_end). Four lanes, each a bijection of its state per 8-byte word
 * (an odd multiply, an xor-shift): a change to one word always changes the
 * hash; anything else collides with odds near 2^-64. Not a defence
 * against someone crafting a collision: the cache's directory keeps others
 * out (scan_cache.c). */
struct np_hash {
	uint64_t lane[4];
	uint64_t len;
	uint8_t tail[32];
	unsigned ntail;
};
void np_hash_init(struct np_hash *h);
void np_hash_add(struct np_hash *h, const void *p, size_t n);
uint64_t np_hash_end(struct np_hash *h);
uint64_t np_hash64(const void *p, size_t n);

/* The file: this header, then count int64 offsets of the targets from the
 * module's .eh_frame_hdr, strictly increasing, then nvolatile uint32
 * indices into the module's FDE table, strictly increasing: the
 * functions whose targets depend on more than the image, decoded again
 * in every process (module_scan.c). Every field must match what this
 * process finds (the engine that scanned, the ISA, the module by build ID
 * and image, its FDE count), the size what the counts say, and checksum
 * the hash of the whole file with checksum 0, or the file is ignored. */
#define NP_SCAN_FILE_MAGIC "npscan\r\n"
#define NP_SCAN_FILE_VERSION 1
#define NP_SCAN_FILE_MAX_TARGETS (1u << 24)
struct np_scan_file {
	char magic[8];
	uint32_t version;
	uint32_t header_len; /* sizeof(struct np_scan_file) */
	char isa[16];
	uint32_t engine_id_len, module_id_len;
	uint8_t engine_id[NP_BUILD_ID_MAX]; /* the scanner's own build ID */
	uint8_t module_id[NP_BUILD_ID_MAX];
	uint64_t image_hash, image_len;
	uint64_t nfdes;
	uint64_t count, nvolatile;
	uint64_t checksum;
};

/* What a module's file must hold and its name: made once per module, for
 * the load and the store after it. */
struct np_scan_key {
	struct np_scan_file want; /* all but the counts and checksum */
	struct np_module_id mod;
	uint64_t hdr; /* the module's .eh_frame_hdr */
	char name[200];
};
/* A module's scan as the file keeps it: targets (absolute, sorted) and
 * the indices of the functions decoded in every process (sorted). */
struct np_scan_kept {
	uint64_t *targets;
	size_t count;
	uint32_t *volatile_fns;
	size_t nvolatile;
};
/* The key of the module whose .eh_frame_hdr (with nfdes entries) is at
 * hdr: 0, or -ENOENT when it cannot be cached (the cache is off or has no
 * directory, the module or the engine has no build ID). Hashes the
 * module's image: about 1 ms for libc. Engine lock held. */
int np_scan_cache_key(uint64_t hdr, uint32_t nfdes, struct np_scan_key *k);
/* The module's scan from the cache, into *out (its arrays malloc'd). 0,
 * or -ENOENT: no file, one that does not match, or no cache. errno and
 * the process's files are left as they were. */
int np_scan_cache_load(const struct np_scan_key *k, struct np_scan_kept *out);
/* Keep the module's scan. Never fails the caller: 0, or -errno when
 * nothing was kept (an unwritable or untrusted directory, a full disk,
 * ...). errno is left as it was. */
int np_scan_cache_store(const struct np_scan_key *k, const struct np_scan_kept *kept);
void np_scan_kept_free(struct np_scan_kept *kept);
/* The file's name in the directory for the module (its ISA and build
 * ID): false when it cannot have one. */
bool np_scan_cache_name(const struct np_module_id *id, char *out, size_t len);

/* The targets of every function of the module t describes, sorted, added
 * to out (module_scan.c): read from the cache where it holds them, else
 * decoded and kept there. *loaded: from the cache. 0, or the scan's first
 * failure (out then holds what could be found). Engine lock held. */
struct np_fde_table;
struct np_targets;
int np_module_scan(const struct np_fde_table *t, struct np_targets *out, bool *loaded);

#endif

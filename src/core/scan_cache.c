/* SPDX-License-Identifier: MIT */
/*
 * The neighbour scan, kept between processes.
 *
 * neighbors.c decodes every function of a module at the first attach in
 * it (about 0.1 s for libc, 0.35 s for python3.11), and every traced
 * process, every exec'd one too, paid it again. Its result, the module's
 * branch targets, depends on nothing but bytes: the module's and the
 * scanner's. So it is kept in a file per module, in
 * $XDG_CACHE_HOME/nanoprobe (else ~/.cache/nanoprobe), named by the ISA
 * and the module's GNU build ID, and read back instead of scanning.
 *
 * A file is trusted only when everything it was made from is what this
 * process has (struct np_scan_file): the scanner (this engine's own build
 * ID: a rebuilt nanoprobe scans afresh), the ISA, the module's build ID,
 * the hash of its read-only image (module_id.c: code, unwind table, jump
 * tables), its FDE count; and when its checksum and its size agree with
 * its contents and its targets strictly increase. Anything else, a file
 * cut short, a flipped bit, one left by an older nanoprobe or made for
 * another build of the library, is ignored and the module scanned again
 * (and the file replaced). A module without a build ID is never kept.
 *
 * The directory must be the process's own: owned by its effective user
 * and writable by no one else, and the file owned by that user too. A
 * program run as root with a user's HOME neither reads nor writes that
 * user's files, and no one can plant a file that would be trusted.
 *
 * This runs inside the traced program, perhaps as another user, in a
 * sandbox, with a read-only HOME: the cache may only ever help. Failing to
 * read or write it is silent and costs only the scan. Every descriptor is
 * opened close-on-exec and closed before returning, errno is kept, no
 * signal can come of it (a file larger than RLIMIT_FSIZE allows is not
 * written, which would raise SIGXFSZ). Writers race safely: each writes a
 * file of its own and renames it over the name, so a reader sees a whole
 * file or none, never a mix. NANOPROBE_CACHE=off turns it all off.
 */
#include "arch/arch.h" /* struct np_isa */
#include "core/scan_cache.h"
#include "host/host.h" /* np_host_isa, np_logf */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(struct np_scan_file) == 216, "the file's header has no padding");

/* --- where ----------------------------------------------------------------- */

/* The cache's base directory (XDG's: an absolute $XDG_CACHE_HOME, else
 * $HOME/.cache) in out; false when there is none (or its name is longer
 * than len), or NANOPROBE_CACHE says off. secure_getenv: a set-user-ID
 * program's environment is not its user's. */
static bool base_dir(char *out, size_t len)
{
	const char *off = secure_getenv("NANOPROBE_CACHE");
	if (off && (!strcmp(off, "off") || !strcmp(off, "0") || !strcmp(off, "no")))
		return false;
	const char *xdg = secure_getenv("XDG_CACHE_HOME");
	const char *home = secure_getenv("HOME");
	int n = xdg && xdg[0] == '/' ? snprintf(out, len, "%s", xdg)
	      : home && home[0] == '/' ? snprintf(out, len, "%s/.cache", home)
				       : -1;
	return n > 0 && (size_t)n < len;
}

/* A directory is the process's own when its effective user owns it and
 * no one else may write in it. */
static bool own_dir(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* The cache's directory, open, or -1; create: make it (and the base,
 * 0700) when missing. */
static int open_dir(bool create)
{
	char base[1024], dir[1040];
	if (!base_dir(base, sizeof(base)))
		return -1;
	snprintf(dir, sizeof(dir), "%s/nanoprobe", base);
	if (create && mkdir(dir, 0700) && errno == ENOENT && mkdir(base, 0700) == 0)
		mkdir(dir, 0700);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && !own_dir(fd)) {
		np_logf(NP_LOG_DEBUG, "scan cache: %s is not this user's alone: not used", dir);
		close(fd);
		fd = -1;
	}
	return fd;
}

bool np_scan_cache_name(const struct np_module_id *id, char *out, size_t len)
{
	if (!id->build_id_len)
		return false;
	int n = snprintf(out, len, "neighbors-%s-", np_host_isa->name);
	for (uint32_t i = 0; i < id->build_id_len && n > 0 && (size_t)n + 3 <= len; i++)
		n += snprintf(out + n, len - (size_t)n, "%02x", id->build_id[i]);
	return n > 0 && (size_t)n + 1 < len;
}

/* --- what a file must say -------------------------------------------------- */

int np_scan_cache_key(uint64_t hdr, uint32_t nfdes, struct np_scan_key *k)
{
	static int have_engine; /* 1: engine's build ID known, -1: none */
	static struct np_module_id engine;
	struct np_module_id mod;
	char base[1024];
	int saved = errno;
	if (!have_engine) /* the module this code is in: libnanoprobe, the agent */
		have_engine = np_module_id_at((uint64_t)(uintptr_t)np_scan_cache_key, false, &engine)
				      ? -1
				      : 1;
	bool ok = have_engine > 0 && base_dir(base, sizeof(base)) &&
		  np_module_id_at(hdr, true, &mod) == 0 &&
		  np_scan_cache_name(&mod, k->name, sizeof(k->name));
	errno = saved;
	if (!ok)
		return -ENOENT;
	k->mod = mod;
	struct np_scan_file *f = &k->want;
	*f = (struct np_scan_file){.magic = NP_SCAN_FILE_MAGIC,
				   .version = NP_SCAN_FILE_VERSION,
				   .header_len = sizeof(*f),
				   .engine_id_len = engine.build_id_len,
				   .module_id_len = mod.build_id_len,
				   .image_hash = mod.image_hash,
				   .image_len = mod.image_len,
				   .nfdes = nfdes};
	snprintf(f->isa, sizeof(f->isa), "%s", np_host_isa->name);
	memcpy(f->engine_id, engine.build_id, engine.build_id_len);
	memcpy(f->module_id, mod.build_id, mod.build_id_len);
	k->hdr = hdr;
	return 0;
}

static uint64_t checksum(const struct np_scan_file *h, const int64_t *off, const uint32_t *fns)
{
	struct np_scan_file z = *h;
	struct np_hash s;
	z.checksum = 0;
	np_hash_init(&s);
	np_hash_add(&s, &z, sizeof(z));
	np_hash_add(&s, off, h->count * sizeof(*off));
	np_hash_add(&s, fns, h->nvolatile * sizeof(*fns));
	return np_hash_end(&s);
}

void np_scan_kept_free(struct np_scan_kept *kept)
{
	free(kept->targets);
	free(kept->volatile_fns);
	*kept = (struct np_scan_kept){0};
}

/* --- reading --------------------------------------------------------------- */

/* The whole file at fd when it is a regular file of ours of a size a
 * scan can have: malloc'd, its length in *len; NULL otherwise. */
static uint8_t *read_whole(int fd, size_t *len)
{
	struct stat st;
	size_t max = sizeof(struct np_scan_file) + (size_t)NP_SCAN_FILE_MAX_TARGETS * 12;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_size < (off_t)sizeof(struct np_scan_file) || (uint64_t)st.st_size > max)
		return NULL;
	size_t n = (size_t)st.st_size, got = 0;
	uint8_t *buf = malloc(n);
	while (buf && got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (buf && got != n) {
		free(buf);
		buf = NULL;
	}
	*len = n;
	return buf;
}

/* Why the file buf[0, len) is not the scan of the module want describes,
 * or NULL: every field, the size, the checksum, the order of both lists. */
static const char *mismatch(const uint8_t *buf, size_t len, const struct np_scan_file *want)
{
	struct np_scan_file h;
	memcpy(&h, buf, sizeof(h));
	const int64_t *off = (const int64_t *)(const void *)(buf + sizeof(h));
	if (memcmp(h.magic, want->magic, sizeof(h.magic)) || h.version != want->version ||
	    h.header_len != want->header_len)
		return "not this version's file";
	if (memcmp(h.isa, want->isa, sizeof(h.isa)) || h.engine_id_len != want->engine_id_len ||
	    memcmp(h.engine_id, want->engine_id, sizeof(h.engine_id)))
		return "made by another nanoprobe";
	if (h.module_id_len != want->module_id_len ||
	    memcmp(h.module_id, want->module_id, sizeof(h.module_id)) ||
	    h.image_hash != want->image_hash || h.image_len != want->image_len ||
	    h.nfdes != want->nfdes)
		return "made for another build of the module";
	if (h.count > NP_SCAN_FILE_MAX_TARGETS || h.nvolatile > h.nfdes ||
	    len != sizeof(h) + h.count * sizeof(*off) + h.nvolatile * sizeof(uint32_t))
		return "its size is not its counts'";
	const uint32_t *fns = (const uint32_t *)(const void *)(off + h.count);
	if (checksum(&h, off, fns) != h.checksum)
		return "its checksum does not match";
	for (uint64_t i = 1; i < h.count; i++)
		if (off[i] <= off[i - 1])
			return "its targets are out of order";
	for (uint64_t i = 0; i < h.nvolatile; i++)
		if (fns[i] >= h.nfdes || (i && fns[i] <= fns[i - 1]))
			return "its functions are out of order";
	return NULL;
}

/* The file's lists into out: the targets absolute again. */
static int unpack(const uint8_t *buf, uint64_t hdr, struct np_scan_kept *out)
{
	struct np_scan_file h;
	memcpy(&h, buf, sizeof(h));
	const uint8_t *fns = buf + sizeof(h) + h.count * sizeof(int64_t);
	*out = (struct np_scan_kept){malloc(h.count ? h.count * sizeof(uint64_t) : 1), h.count,
				     malloc(h.nvolatile ? h.nvolatile * sizeof(uint32_t) : 1),
				     h.nvolatile};
	if (!out->targets || !out->volatile_fns) {
		np_scan_kept_free(out);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < h.count; i++) {
		int64_t o;
		memcpy(&o, buf + sizeof(h) + i * sizeof(o), sizeof(o));
		out->targets[i] = hdr + (uint64_t)o;
	}
	memcpy(out->volatile_fns, fns, h.nvolatile * sizeof(uint32_t));
	return 0;
}

int np_scan_cache_load(const struct np_scan_key *k, struct np_scan_kept *out)
{
	int saved = errno, err = -ENOENT;
	size_t len = 0;
	int dir = open_dir(false);
	int fd = dir < 0 ? -1 : openat(dir, k->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	uint8_t *buf = fd < 0 ? NULL : read_whole(fd, &len);
	const char *why = buf ? mismatch(buf, len, &k->want) : fd >= 0 ? "not a file of ours" : NULL;
	if (why)
		np_logf(NP_LOG_DEBUG, "scan cache: %s ignored: %s", k->name, why);
	else if (buf)
		err = unpack(buf, k->hdr, out);
	free(buf);
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	errno = saved;
	return err;
}

/* --- writing --------------------------------------------------------------- */

static bool write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	while (len) {
		ssize_t w = write(fd, b, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		len -= (size_t)w;
	}
	return true;
}

/* A write past RLIMIT_FSIZE raises SIGXFSZ, which kills by default. */
static bool size_allowed(uint64_t len)
{
	struct rlimit rl;
	return getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
	       (rl.rlim_cur == RLIM_INFINITY || len <= rl.rlim_cur);
}

/* name, written whole under a name of this thread's own, then renamed
 * over it: a reader sees the old file or the new one. */
static int write_file(int dir, const char *name, const struct np_scan_file *h, const int64_t *off,
		      const uint32_t *fns)
{
	char tmp[256];
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)syscall(SYS_gettid));
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST && unlinkat(dir, tmp, 0) == 0) /* a dead thread's */
		fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	bool ok = write_all(fd, h, sizeof(*h)) && write_all(fd, off, h->count * sizeof(*off)) &&
		  write_all(fd, fns, h->nvolatile * sizeof(*fns));
	int err = ok ? 0 : -EIO;
	if (close(fd) && !err)
		err = -EIO;
	if (!err && renameat(dir, tmp, dir, name))
		err = -errno;
	if (err)
		unlinkat(dir, tmp, 0);
	return err;
}

int np_scan_cache_store(const struct np_scan_key *k, const struct np_scan_kept *kept)
{
	int saved = errno, err = -EFBIG;
	struct np_scan_file h = k->want;
	size_t n = kept->count;
	int64_t *off = NULL;
	int dir = -1;
	if (n > NP_SCAN_FILE_MAX_TARGETS || kept->nvolatile > h.nfdes ||
	    !size_allowed(sizeof(h) + n * sizeof(*off) + kept->nvolatile * sizeof(uint32_t)))
		goto out;
	err = -ENOMEM;
	if (!(off = malloc(n ? n * sizeof(*off) : 1)))
		goto out;
	for (size_t i = 0; i < n; i++)
		off[i] = (int64_t)(kept->targets[i] - k->hdr);
	h.count = n;
	h.nvolatile = kept->nvolatile;
	h.checksum = checksum(&h, off, kept->volatile_fns);
	err = -EACCES;
	if ((dir = open_dir(true)) >= 0)
		err = write_file(dir, k->name, &h, off, kept->volatile_fns);
out:
	if (err)
		np_logf(NP_LOG_DEBUG, "scan cache: %s not kept: %s", k->name, strerror(-err));
	free(off);
	if (dir >= 0)
		close(dir);
	errno = saved;
	return err;
}

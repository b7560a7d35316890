/* SPDX-License-Identifier: MIT */
/*
 * What a loaded module is, for the neighbour scan's cache (scan_cache.c).
 *
 * A cached scan is a function of bytes: the module's code, its unwind
 * table, the jump tables in its read-only data, and the scanner's own
 * code. The module is named by its GNU build ID, which the linker makes
 * from its contents, and the bytes themselves are hashed too: a build ID
 * is only as unique as the build that set it (`--build-id=0x...` sets any
 * value, and a binary rewritten after linking keeps the one it had). The
 * hash covers every PT_LOAD segment that is not writable, as it is mapped,
 * with this engine's patches undone (np_read_original): what the scan
 * reads, less the writable data no compiler puts a relative jump table
 * in. About 1 ms for libc's 1.9 MB, a hundredth of the scan it saves.
 */
#include "core/code_write.h" /* np_code_read */
#include "core/plan_host.h" /* np_read_original */
#include "core/scan_cache.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

/* --- the hash ------------------------------------------------------------ */

#define K 0x9e3779b97f4a7c15ull /* odd: multiplying by it is a bijection */

static uint64_t step(uint64_t s, uint64_t w)
{
	s = (s ^ w) * K;
	return s ^ (s >> 32);
}

void np_hash_init(struct np_hash *h)
{
	*h = (struct np_hash){.lane = {1, 2, 3, 4}};
}

static void block(struct np_hash *h, const uint8_t *p)
{
	for (int i = 0; i < 4; i++) {
		uint64_t w;
		memcpy(&w, p + 8 * i, sizeof(w));
		h->lane[i] = step(h->lane[i], w);
	}
}

void np_hash_add(struct np_hash *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (!n)
		return;
	h->len += n;
	if (h->ntail) {
		size_t k = n < 32 - h->ntail ? n : 32 - h->ntail;
		memcpy(h->tail + h->ntail, b, k);
		h->ntail += (unsigned)k;
		b += k;
		n -= k;
		if (h->ntail < 32)
			return;
		block(h, h->tail);
		h->ntail = 0;
	}
	for (; n >= 32; b += 32, n -= 32)
		block(h, b);
	memcpy(h->tail, b, n);
	h->ntail = (unsigned)n;
}

uint64_t np_hash_end(struct np_hash *h)
{
	if (h->ntail) { /* zeros after it: the length tells them apart */
		memset(h->tail + h->ntail, 0, 32 - h->ntail);
		block(h, h->tail);
	}
	uint64_t s = h->len;
	for (int i = 0; i < 4; i++)
		s = step(s, h->lane[i]);
	return s;
}

uint64_t np_hash64(const void *p, size_t n)
{
	struct np_hash h;
	np_hash_init(&h);
	np_hash_add(&h, p, n);
	return np_hash_end(&h);
}

/* --- the module ---------------------------------------------------------- */

#define MAX_SEGMENTS NP_IMAGE_SEGMENTS
#define MAX_NOTES 65536 /* bytes of one PT_NOTE segment read at most */
#define CHUNK 65536

struct segment {
	uint64_t start, len;
	unsigned align; /* PT_NOTE: its notes' alignment */
};

/* The segments of the module around addr, copied out of the loader's
 * list so that nothing is read under its lock. */
struct found {
	uint64_t addr;
	bool mine, too_many;
	struct segment notes[MAX_SEGMENTS], image[MAX_SEGMENTS];
	int nnotes, nimage;
};

static void note_segment(struct segment *v, int *n, bool *too_many, struct segment s)
{
	if (*n == MAX_SEGMENTS)
		*too_many = true;
	else
		v[(*n)++] = s;
}

static int find_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct found *f = cookie, here = {.addr = f->addr};
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		struct segment s = {lo, ph->p_filesz, ph->p_align == 8 ? 8 : 4};
		if (ph->p_type == PT_LOAD && f->addr >= lo && f->addr - lo < ph->p_memsz)
			here.mine = true;
		if (ph->p_type == PT_NOTE)
			note_segment(here.notes, &here.nnotes, &here.too_many, s);
		else if (ph->p_type == PT_LOAD && !(ph->p_flags & PF_W) && ph->p_filesz)
			note_segment(here.image, &here.nimage, &here.too_many, s);
	}
	if (!here.mine)
		return 0;
	*f = here;
	return 1;
}

static size_t align_up(size_t x, unsigned a)
{
	return (x + a - 1) & ~(size_t)(a - 1);
}

/* The GNU build ID among the notes of buf[0, len): true when found. */
static bool build_id_in(const uint8_t *buf, size_t len, unsigned align, struct np_module_id *out)
{
	size_t at = 0;
	while (len - at >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		memcpy(&nh, buf + at, sizeof(nh));
		size_t name = at + sizeof(nh);
		if (nh.n_namesz > len - name)
			return false;
		size_t desc = align_up(name + nh.n_namesz, align);
		if (desc > len || nh.n_descsz > len - desc)
			return false;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(buf + name, "GNU", 4) == 0) {
			if (nh.n_descsz == 0 || nh.n_descsz > NP_BUILD_ID_MAX)
				return false;
			memcpy(out->build_id, buf + desc, nh.n_descsz);
			out->build_id_len = nh.n_descsz;
			return true;
		}
		at = align_up(desc + nh.n_descsz, align);
	}
	return false;
}

static int read_build_id(const struct found *f, struct np_module_id *out)
{
	for (int i = 0; i < f->nnotes; i++) {
		const struct segment *s = &f->notes[i];
		if (s->len > MAX_NOTES)
			continue;
		uint8_t *buf = malloc(s->len ? s->len : 1);
		bool got = buf && np_code_read(s->start, buf, s->len) == 0 &&
			   build_id_in(buf, s->len, s->align, out);
		free(buf);
		if (got)
			return 0;
	}
	return -ENOENT;
}

static int hash_image(const struct found *f, struct np_module_id *out)
{
	uint8_t *buf = malloc(CHUNK);
	struct np_hash h;
	int err = buf ? 0 : -ENOMEM;
	np_hash_init(&h);
	out->image_len = 0;
	for (int i = 0; i < f->nimage && !err; i++)
		for (uint64_t at = 0; at < f->image[i].len && !err; at += CHUNK) {
			size_t n = f->image[i].len - at < CHUNK ? f->image[i].len - at : CHUNK;
			err = np_read_original(f->image[i].start + at, buf, n);
			if (!err)
				np_hash_add(&h, buf, n);
			out->image_len += n;
		}
	free(buf);
	out->image_hash = np_hash_end(&h);
	return err;
}

int np_module_id_at(uint64_t addr, bool image, struct np_module_id *out)
{
	struct found f = {.addr = addr};
	memset(out, 0, sizeof(*out));
	if (!dl_iterate_phdr(find_module, &f) || f.too_many)
		return -ENOENT;
	int err = read_build_id(&f, out);
	if (!err && image)
		err = hash_image(&f, out);
	for (int i = 0; i < f.nimage && image; i++) {
		out->image[i].start = f.image[i].start;
		out->image[i].len = f.image[i].len;
	}
	out->nimage = image ? (unsigned)f.nimage : 0;
	return err;
}

bool np_module_image_holds(const struct np_module_id *id, uint64_t addr, size_t len)
{
	for (unsigned i = 0; i < id->nimage; i++)
		if (addr >= id->image[i].start && len <= id->image[i].len &&
		    addr - id->image[i].start <= id->image[i].len - len)
			return true;
	return false;
}

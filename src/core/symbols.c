/* SPDX-License-Identifier: MIT */
/*
 * Function bounds for a code address, from the ELF symbol tables (.symtab,
 * else .dynsym) of the file mapped there, read with libelf and cached per
 * module. The engine needs them to decode the whole function around a site
 * (branch targets into displaced bytes), to know where padding ends, and
 * whether the calling convention holds at the function's start (the
 * free-register analysis, riscv64's jumps back from out-of-line copies).
 *
 * An ifunc's implementations often have no symbol at all: a stripped
 * library exports the ifunc (memset), not what its resolver picks (glibc
 * 2.43's riscv64 memset is an unnamed loop). The module's own
 * R_<machine>_IRELATIVE relocations name the slots where the loader
 * stored what the resolvers returned; code calls the implementation
 * through them, as it would call the ifunc, so an address one of them
 * holds is an entry reached by calls, and its FDE (fde.c) gives its
 * bounds. An FDE alone proves no such thing: it may start a .cold part,
 * entered by a jump with live registers.
 */
#include "core/internal.h"
#include "core/maps.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fsym {
	uint64_t start, size;
	bool returns_twice;
	bool cold; /* GCC's foo.cold: a part of foo entered by jumps */
};

/* Functions that return more than once per call: the second return (a
 * longjmp to the setjmp, the parent after vfork's child) finds its return
 * address already used, so a return probe there cannot work. */
static const char *const returns_twice[] = {
	"setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp", "savectx",
	"vfork", "__vfork", "getcontext", "__getcontext", NULL,
};

static bool name_returns_twice(const char *name)
{
	for (const char *const *n = returns_twice; name && *n; n++)
		if (!strcmp(name, *n))
			return true;
	return false;
}

struct module {
	char path[256];
	uint64_t bias;
	uint32_t features; /* GNU_PROPERTY_<machine>_FEATURE_1_AND */
	struct fsym *v;
	size_t n;
	uint64_t *islots; /* vaddrs of the IRELATIVE slots */
	size_t nislots, cap_islots;
	struct module *next;
};

static struct module *modules;

static int by_start(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void add_symbols(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct module *m, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 0; data && i < count; i++) {
		GElf_Sym s;
		if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF || s.st_value == 0)
			continue;
		int type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (m->n == *cap) {
			*cap = *cap ? *cap * 2 : 1024;
			struct fsym *v = realloc(m->v, *cap * sizeof(*v));
			if (!v)
				return;
			m->v = v;
		}
		const char *name = elf_strptr(elf, sh->sh_link, s.st_name);
		m->v[m->n++] = (struct fsym){s.st_value, s.st_size, name_returns_twice(name),
					     name && strstr(name, ".cold")};
	}
}

/* The relocation type whose slot the loader fills with what an ifunc's
 * resolver returns, for the file's machine; 0 for another machine. */
static unsigned irelative_type(Elf *elf)
{
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh))
		return 0;
	switch (eh.e_machine) {
	case EM_X86_64:
		return R_X86_64_IRELATIVE;
	case EM_AARCH64:
		return R_AARCH64_IRELATIVE;
	case EM_RISCV:
		return R_RISCV_IRELATIVE;
	default:
		return 0;
	}
}

static void add_ifunc_slots(Elf_Scn *scn, GElf_Shdr *sh, unsigned type, struct module *m)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 0; data && type && i < count; i++) {
		GElf_Rela r;
		if (!gelf_getrela(data, (int)i, &r) || GELF_R_TYPE(r.r_info) != type)
			continue;
		if (m->nislots == m->cap_islots) {
			size_t cap = m->cap_islots ? m->cap_islots * 2 : 16;
			uint64_t *v = realloc(m->islots, cap * sizeof(*v));
			if (!v)
				return; /* fewer entries known: never a wrong one */
			m->islots = v;
			m->cap_islots = cap;
		}
		m->islots[m->nislots++] = r.r_offset;
	}
}

/* The load bias: where the first PT_LOAD landed minus its vaddr. */
static uint64_t first_load_vaddr(Elf *elf)
{
	size_t n;
	if (elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_vaddr - ph.p_offset;
	}
	return 0;
}

/* The machine's FEATURE_1_AND property (arm64: BTI, PAC; x86-64: IBT,
 * SHSTK) from the PT_GNU_PROPERTY note: what the loader enables for the
 * module when the CPU has it. */
static uint32_t gnu_features(Elf *elf)
{
	GElf_Ehdr eh;
	size_t n;
	uint32_t want;
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n))
		return 0;
	if (eh.e_machine == EM_AARCH64)
		want = 0xc0000000; /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	else if (eh.e_machine == EM_X86_64)
		want = 0xc0000002; /* GNU_PROPERTY_X86_FEATURE_1_AND */
	else
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != 0x6474e553) /* PT_GNU_PROPERTY */
			continue;
		size_t len = 0;
		const char *raw = elf_rawfile(elf, &len);
		if (!raw || ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
			return 0;
		/* one note: namesz 4, descsz, type 5, "GNU", then 8-aligned
		 * properties (type, size, data) */
		const uint8_t *note = (const uint8_t *)raw + ph.p_offset;
		uint32_t hdr[3];
		if (ph.p_filesz < 16)
			return 0;
		memcpy(hdr, note, sizeof(hdr));
		if (hdr[0] != 4 || hdr[2] != 5 || memcmp(note + 12, "GNU", 4) ||
		    hdr[1] > ph.p_filesz - 16)
			return 0;
		for (uint32_t off = 0; off + 8 <= hdr[1];) {
			uint32_t pr[2];
			memcpy(pr, note + 16 + off, sizeof(pr));
			if (pr[1] > hdr[1] - off - 8)
				return 0;
			if (pr[0] == want && pr[1] >= 4) {
				uint32_t bits;
				memcpy(&bits, note + 16 + off + 8, 4);
				return bits;
			}
			off += 8 + ((pr[1] + 7) & ~7u);
		}
	}
	return 0;
}

static struct module *load_module(const struct np_map *map)
{
	int fd = open(map->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct module *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	if (elf && m) {
		snprintf(m->path, sizeof(m->path), "%s", map->path);
		m->bias = map->start - map->offset - first_load_vaddr(elf);
		m->features = gnu_features(elf);
		bool have_symtab = false;
		for (int pass = 0; pass < 2; pass++) {
			Elf_Scn *scn = NULL;
			while ((scn = elf_nextscn(elf, scn))) {
				GElf_Shdr sh;
				if (!gelf_getshdr(scn, &sh))
					continue;
				bool want = pass == 0 ? sh.sh_type == SHT_SYMTAB
						      : (!have_symtab && sh.sh_type == SHT_DYNSYM);
				if (want) {
					add_symbols(elf, scn, &sh, m, &cap);
					have_symtab |= pass == 0;
				}
				if (pass == 0 && sh.sh_type == SHT_RELA)
					add_ifunc_slots(scn, &sh, irelative_type(elf), m);
			}
		}
		if (m->n) /* m->v is NULL without symbols: no qsort(NULL, 0) */
			qsort(m->v, m->n, sizeof(*m->v), by_start);
		m->next = modules;
		modules = m;
	} else {
		free(m);
		m = NULL;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return m;
}

static struct module *module_for(const struct np_map *map)
{
	for (struct module *m = modules; m; m = m->next)
		if (strcmp(m->path, map->path) == 0)
			return m;
	return load_module(map);
}

/* start is what one of m's IRELATIVE slots holds, read from this
 * process's memory: an ifunc's implementation. Slots of other modules are
 * not looked at: a resolver returns a function of its own module. */
static bool ifunc_target(const struct module *m, uint64_t start)
{
	for (size_t i = 0; i < m->nislots; i++) {
		uint64_t v;
		if (np_code_read(m->bias + m->islots[i], &v, sizeof(v)) == 0 && v == start)
			return true;
	}
	return false;
}

/* No symbol holds addr: the bounds of an ifunc's implementation around
 * it, from its FDE, up to the limit the symbols already set. */
static int ifunc_bounds(const struct module *m, uint64_t addr, struct np_func_bounds *out)
{
	struct np_fde_range fde;
	if (!m->nislots || !np_fde_around(addr, &fde) || fde.start >= out->limit ||
	    !ifunc_target(m, fde.start))
		return -ENOENT;
	if (fde.next > fde.start && fde.next < out->limit)
		out->limit = fde.next;
	out->start = fde.start;
	out->end = fde.end < out->limit ? fde.end : out->limit;
	out->known = out->called = addr < out->end;
	return out->known ? 0 : -ENOENT;
}

int np_symbol_bounds(uint64_t addr, struct np_func_bounds *out)
{
	struct np_map map;
	memset(out, 0, sizeof(*out));
	if (np_maps_lookup(addr, &map))
		return -ENOENT;
	out->limit = map.end;
	if (map.path[0] != '/')
		return -ENOENT;
	struct module *m = module_for(&map);
	if (!m)
		return -ENOENT;
	if (m->n == 0)
		return ifunc_bounds(m, addr, out);
	uint64_t rel = addr - m->bias;
	size_t lo = 0, hi = m->n; /* first symbol starting after rel */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->v[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->n && m->v[lo].start + m->bias < out->limit)
		out->limit = m->v[lo].start + m->bias;
	/* several symbols may alias one function: take the largest containing */
	for (size_t i = lo; i-- > 0 && m->v[i].start == m->v[lo - 1].start;) {
		if (rel < m->v[i].start + m->v[i].size) {
			out->start = m->v[i].start + m->bias;
			out->end = out->start + m->v[i].size;
			out->known = true;
			out->called = !m->v[i].cold;
		}
	}
	return out->known ? 0 : ifunc_bounds(m, addr, out);
}

bool np_symbol_returns_twice(uint64_t addr)
{
	struct np_map map;
	if (np_maps_lookup(addr, &map) || map.path[0] != '/')
		return false;
	struct module *m = module_for(&map);
	for (size_t i = 0; m && i < m->n; i++)
		if (m->v[i].start + m->bias == addr && m->v[i].returns_twice)
			return true;
	return false;
}

uint32_t np_module_features(uint64_t addr)
{
	struct np_map map;
	if (np_maps_lookup(addr, &map) || map.path[0] != '/')
		return 0;
	struct module *m = module_for(&map);
	return m ? m->features : 0;
}

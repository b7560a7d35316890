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
 * 2.43's riscv64 memset is an unnamed loop). Slots the loader filled say
 * which one is called: the module's own R_<machine>_IRELATIVE slots hold
 * what its resolvers returned for its own calls, and another module's
 * slot bound to the ifunc's name (GLOB_DAT, JUMP_SLOT, a 64-bit word)
 * holds the same once bound. Code calls the implementation through them,
 * as it would call the ifunc, so an address one of them holds is an entry
 * reached by calls, and its FDE (fde.c) gives its bounds. An FDE alone
 * proves no such thing: it may start a .cold part, entered by a jump with
 * live registers.
 */
#include "core/code_write.h"
#include "core/maps.h"
#include "core/modules.h"
#include "host/host.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
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
	bool exec;        /* ET_EXEC: may give others a PLT entry for a function */
	uint64_t *islots; /* vaddrs of the IRELATIVE slots */
	size_t nislots, cap_islots;
	struct bound *bound; /* slots bound to a symbol defined elsewhere */
	size_t nbound, cap_bound;
	char **ifuncs; /* the ifuncs it defines, by name */
	size_t nifuncs, cap_ifuncs;
	/* which of bound[] name an ifunc of ifunc_owner (bound_in): found at
	 * the first asking, by name, so that only those are read */
	const struct module *ifunc_owner;
	size_t *to_ifunc, nto_ifunc;
	uint64_t stub_lo[4], stub_hi[4]; /* PLT sections (vaddrs) */
	int nstubs;
	uint64_t code_lo[8], code_hi[8]; /* executable sections (vaddrs) */
	int ncode;
	struct module *next;
};

struct bound {
	uint64_t slot; /* vaddr */
	char *name;
};

/* Room for one more element in *v (n used of *cap); false when out of
 * memory, which only costs knowledge. */
bool np_grow(void *v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 16;
	void *nv = realloc(*(void **)v, c * size);
	if (!nv)
		return false;
	*(void **)v = nv;
	*cap = c;
	return true;
}

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
		char *copy = type == STT_GNU_IFUNC && name ? strdup(name) : NULL;
		if (copy && np_grow(&m->ifuncs, &m->cap_ifuncs, m->nifuncs, sizeof(char *)))
			m->ifuncs[m->nifuncs++] = copy;
		else
			free(copy);
	}
}

/* The relocations that fill a slot with a function's address, for the
 * file's machine: IRELATIVE (what the module's own ifunc resolver
 * returned), and those bound to a symbol: GLOB_DAT, JUMP_SLOT and the
 * 64-bit absolute word (riscv's GOT uses that). */
struct reloc_types {
	unsigned irelative, glob_dat, jump_slot, abs64;
};

static bool reloc_types(Elf *elf, struct reloc_types *t)
{
	GElf_Ehdr eh;
	if (!gelf_getehdr(elf, &eh))
		return false;
	switch (eh.e_machine) {
	case EM_X86_64:
		*t = (struct reloc_types){R_X86_64_IRELATIVE, R_X86_64_GLOB_DAT,
					  R_X86_64_JUMP_SLOT, R_X86_64_64};
		return true;
	case EM_AARCH64:
		*t = (struct reloc_types){R_AARCH64_IRELATIVE, R_AARCH64_GLOB_DAT,
					  R_AARCH64_JUMP_SLOT, R_AARCH64_ABS64};
		return true;
	case EM_RISCV: /* no GLOB_DAT: a GOT slot is a 64-bit word */
		*t = (struct reloc_types){R_RISCV_IRELATIVE, R_RISCV_64, R_RISCV_JUMP_SLOT,
					  R_RISCV_64};
		return true;
	default:
		return false;
	}
}

/* A slot bound to a symbol this module does not define: what the loader
 * found for it elsewhere. One bound to an ifunc the module defines itself
 * (clang calls a module's own ifunc through a JUMP_SLOT where gcc has an
 * IRELATIVE slot) holds, once bound, what the module's resolver returned,
 * as an IRELATIVE slot does; before (lazy), an address in its own PLT,
 * never the start of a function in .text. */
static void add_bound_slot(Elf *elf, const GElf_Shdr *sh, const GElf_Rela *r, struct module *m)
{
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
	GElf_Shdr symsh;
	GElf_Sym s;
	if (!syms || !gelf_getshdr(symscn, &symsh) || GELF_R_SYM(r->r_info) == 0 ||
	    !gelf_getsym(syms, (int)GELF_R_SYM(r->r_info), &s))
		return;
	if (s.st_shndx != SHN_UNDEF) {
		if (GELF_ST_TYPE(s.st_info) == STT_GNU_IFUNC &&
		    np_grow(&m->islots, &m->cap_islots, m->nislots, sizeof(*m->islots)))
			m->islots[m->nislots++] = r->r_offset;
		return;
	}
	const char *name = elf_strptr(elf, symsh.sh_link, s.st_name);
	char *copy = name && *name ? strdup(name) : NULL;
	if (copy && np_grow(&m->bound, &m->cap_bound, m->nbound, sizeof(*m->bound)))
		m->bound[m->nbound++] = (struct bound){r->r_offset, copy};
	else
		free(copy);
}

static void add_slots(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct module *m)
{
	struct reloc_types t;
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 0; data && i < count && reloc_types(elf, &t); i++) {
		GElf_Rela r;
		if (!gelf_getrela(data, (int)i, &r))
			continue;
		unsigned type = GELF_R_TYPE(r.r_info);
		if (type == t.irelative &&
		    np_grow(&m->islots, &m->cap_islots, m->nislots, sizeof(*m->islots)))
			m->islots[m->nislots++] = r.r_offset;
		else if ((type == t.glob_dat || type == t.jump_slot || type == t.abs64) &&
			 r.r_addend == 0)
			add_bound_slot(elf, sh, &r, m);
	}
}

/* The executable sections (the segment that holds them may hold data
 * too: headers, .rodata, .eh_frame), and of them the PLT's, whose stubs
 * jump on through slots the loader fills: a call there keeps the calling
 * convention (src/arch/regsum.h). A module with more executable sections
 * than kept gets none: what is kept must be all its code. */
static void add_code_section(Elf *elf, const GElf_Shdr *sh, struct module *m)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got", ".iplt", NULL};
	size_t shstrndx;
	const char *name;
	if (!(sh->sh_flags & SHF_EXECINSTR) || !sh->sh_size || m->ncode < 0)
		return;
	if (m->ncode == 8) {
		m->ncode = -1;
		return;
	}
	m->code_lo[m->ncode] = sh->sh_addr;
	m->code_hi[m->ncode++] = sh->sh_addr + sh->sh_size;
	if (m->nstubs == 4 || elf_getshdrstrndx(elf, &shstrndx) ||
	    !(name = elf_strptr(elf, shstrndx, sh->sh_name)))
		return;
	for (const char *const *n = names; *n; n++)
		if (!strcmp(name, *n)) {
			m->stub_lo[m->nstubs] = sh->sh_addr;
			m->stub_hi[m->nstubs++] = sh->sh_addr + sh->sh_size;
			return;
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
		GElf_Ehdr eh;
		m->exec = gelf_getehdr(elf, &eh) && eh.e_type == ET_EXEC;
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
					add_slots(elf, scn, &sh, m);
				if (pass == 0)
					add_code_section(elf, &sh, m);
			}
		}
		np_qsort(m->v, m->n, sizeof(*m->v), by_start);
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

static bool slot_holds(uint64_t slot, uint64_t start)
{
	uint64_t v;
	return np_code_read(slot, &v, sizeof(v)) == 0 && v == start;
}

/* start is what one of m's IRELATIVE slots holds, read from this
 * process's memory: what m's own resolver picked for m's calls. */
static bool irelative_target(const struct module *m, uint64_t start)
{
	for (size_t i = 0; i < m->nislots; i++)
		if (slot_holds(m->bias + m->islots[i], start))
			return true;
	return false;
}

static bool defines_ifunc(const struct module *m, const char *name)
{
	for (size_t i = 0; i < m->nifuncs; i++)
		if (!strcmp(m->ifuncs[i], name))
			return true;
	return false;
}

/* Where the first PT_LOAD of every module the dynamic linker loaded lies
 * (not every mapped file: opening a device to read it as ELF may do
 * things). Collected first, read after: the callback runs under the
 * loader's lock. */
struct loads {
	uint64_t *v;
	size_t n, cap;
};

static int note_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct loads *l = cookie;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			if (np_grow(&l->v, &l->cap, l->n, sizeof(*l->v)))
				l->v[l->n++] = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			break;
		}
	return 0;
}

/* Keep in o the slots bound to one of m's ifuncs. Out of memory, none
 * are kept, which only costs knowing the bounds of m's implementations. */
static void note_ifunc_slots(struct module *o, const struct module *m)
{
	free(o->to_ifunc);
	o->to_ifunc = NULL;
	o->nto_ifunc = 0;
	o->ifunc_owner = m;
	size_t cap = 0;
	for (size_t k = 0; k < o->nbound; k++)
		if (defines_ifunc(m, o->bound[k].name) &&
		    np_grow(&o->to_ifunc, &cap, o->nto_ifunc, sizeof(*o->to_ifunc)))
			o->to_ifunc[o->nto_ifunc++] = k;
}

/* Each slot read costs a system call where the program has a SIGSEGV
 * handler of its own (uread.c), and this is asked for every probe on a
 * function the symbols do not name: only slots that name one of m's
 * ifuncs are read, a handful of a module's hundreds. */
static bool bound_in(struct module *o, const struct module *m, uint64_t start)
{
	if (o->ifunc_owner != m)
		note_ifunc_slots(o, m);
	for (size_t k = 0; k < o->nto_ifunc; k++)
		if (slot_holds(o->bias + o->bound[o->to_ifunc[k]].slot, start))
			return true;
	return false;
}

/* start is what a slot of another module bound to one of m's ifuncs
 * holds (a program's GOT entry for memset): once bound, what the resolver
 * returned; before (a lazy JUMP_SLOT), an address in that module's own
 * PLT, never start. m must not be a non-PIE executable: that one gives
 * the others a PLT entry of its own for the address of its function. */
static bool bound_target(const struct module *m, uint64_t start)
{
	struct loads l = {0};
	bool found = false;
	if (m->exec || !m->nifuncs)
		return false;
	dl_iterate_phdr(note_module, &l);
	for (size_t i = 0; i < l.n && !found; i++) {
		struct np_map map;
		if (np_maps_lookup_cached(l.v[i], &map) || map.path[0] != '/' ||
		    !strcmp(map.path, m->path))
			continue;
		struct module *o = module_for(&map);
		found = o && bound_in(o, m, start);
	}
	free(l.v);
	return found;
}

static void note_target(void *cookie, uint64_t target)
{
	(void)target;
	*(bool *)cookie = true;
}

/* A direct branch from another function lands strictly inside [start,
 * end), as hand-written string functions jump into each other's loops:
 * a register the convention calls dead at the entry may be live there. */
static bool branched_into(uint64_t start, uint64_t end)
{
	bool hit = false;
	np_neighbor_targets(start, end - start, note_target, &hit);
	return hit;
}

/* No symbol holds addr: the bounds of an ifunc's implementation around
 * it, from its FDE, up to the limit the symbols set. floor is the start of
 * the last symbol before addr: an FDE starting before it is not taken.
 * The calling convention is trusted at its entry unless code elsewhere
 * jumps into it. */
static int ifunc_bounds(const struct module *m, uint64_t addr, uint64_t floor,
			struct np_func_bounds *out)
{
	struct np_fde_range fde;
	if ((!m->nislots && !m->nifuncs) || !np_fde_around(addr, &fde) || fde.start < floor ||
	    fde.start >= out->limit ||
	    !(irelative_target(m, fde.start) || bound_target(m, fde.start)))
		return -ENOENT;
	uint64_t limit = fde.next > fde.start && fde.next < out->limit ? fde.next : out->limit;
	uint64_t end = fde.end < limit ? fde.end : limit;
	if (addr >= end)
		return -ENOENT;
	*out = (struct np_func_bounds){fde.start, end, limit, true,
				       !branched_into(fde.start, end)};
	return 0;
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
		return ifunc_bounds(m, addr, 0, out);
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
	return out->known ? 0 : ifunc_bounds(m, addr, lo ? m->v[lo - 1].start + m->bias : 0, out);
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

int np_symbol_sections(uint64_t addr, bool stubs, uint64_t *lo, uint64_t *hi, int max)
{
	struct np_map map;
	if (np_maps_lookup(addr, &map) || map.path[0] != '/')
		return 0;
	struct module *m = module_for(&map);
	if (!m)
		return 0;
	int have = stubs ? m->nstubs : m->ncode, n = 0;
	const uint64_t *l = stubs ? m->stub_lo : m->code_lo, *h = stubs ? m->stub_hi : m->code_hi;
	for (int i = 0; i < have && n < max; i++, n++) {
		lo[n] = l[i] + m->bias;
		hi[n] = h[i] + m->bias;
	}
	return n;
}

/* --- functions by name, locals included (unwind.c) ----------------------- */

struct scan {
	const char *const *names;
	uint64_t *out, bias;
	bool symtab, eh_tables, imports_unwind, imports_find;
};

static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct scan *sc)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 0; data && i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (sym.st_shndx == SHN_UNDEF) {
			sc->imports_unwind |= !strncmp(name, "_Unwind_", 8);
			sc->imports_find |= !strcmp(name, "dl_iterate_phdr") ||
					    !strcmp(name, "_dl_find_object");
			continue;
		}
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0)
			continue;
		for (size_t k = 0; sc->names[k]; k++)
			if (!sc->out[k] && !strcmp(name, sc->names[k]))
				sc->out[k] = sc->bias + sym.st_value;
	}
}

/* A stack unwinder of the module's own that its symbols do not name: it
 * has C++ exception tables, calls no _Unwind_* function of another module
 * (its landing pads end in _Unwind_Resume: that one is its own), and
 * looks for unwind tables itself (dl_iterate_phdr, _dl_find_object), as
 * libgcc_eh and LLVM's libunwind do. libc has the tables too, but finds
 * nothing through the loader: it defines those functions. */
static bool hidden_unwinder(const struct scan *sc, bool named)
{
	return !named && sc->eh_tables && !sc->imports_unwind && sc->imports_find;
}

int np_module_functions(const char *path, uint64_t bias, const char *const *names,
			uint64_t *out, bool *unnamed_unwinder)
{
	size_t n = 0;
	while (names[n])
		out[n++] = 0;
	*unnamed_unwinder = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx)) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	struct scan sc = {.names = names, .out = out, .bias = bias};
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		sc.eh_tables |= name && !strcmp(name, ".gcc_except_table");
		sc.symtab |= sh.sh_type == SHT_SYMTAB;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			scan_symbols(elf, scn, &sh, &sc);
	}
	bool named = false;
	for (size_t k = 0; k < n; k++)
		named |= out[k] && !strncmp(names[k], "_Unwind_", 8);
	*unnamed_unwinder = !sc.symtab && hidden_unwinder(&sc, named);
	elf_end(elf);
	close(fd);
	return 0;
}

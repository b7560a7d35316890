/* SPDX-License-Identifier: MIT */
/*
 * Function symbols of one ELF file, and where a probe spec's PATH lives.
 *
 * libdwfl does the reading. Reported offline, a module gives one merged
 * symbol table: the file's .symtab; else the .symtab of a separate debug
 * file (build-id under the debuginfo path, or .gnu_debuglink); else .dynsym
 * together with MiniDebugInfo (.gnu_debugdata, an xz-compressed ELF whose
 * .symtab holds the functions .dynsym does not export, as Fedora ships
 * them). dwfl_module_getsym_info names the Elf each symbol came from, which
 * with the main file's own section list tells the source apart.
 *
 * A binary stripped with --strip-all keeps .eh_frame: every function the
 * compiler emitted has an FDE whose range is the function's. Code that no
 * symbol covers is listed from those ranges as "fn_<hex vaddr>", so that
 * a stripped program still shows (and can be probed at) its functions.
 *
 * Addresses are the file's virtual addresses (st_value): libdwfl places an
 * ET_DYN module at some offline base, which is subtracted again here.
 */
#include "symtab.h"
#include "ldcache.h"
#include "suggest.h"

#include "demangle.h"

#include <ctype.h>
#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A PT_LOAD segment: file offsets <-> vaddrs, and the bytes behind them. */
struct seg {
	uint64_t off, vaddr, filesz;
};

struct priv {
	int fd;
	size_t nseg;
	struct seg seg[];
};

static void set_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Collecting entries                                                   */

struct builder {
	struct np_symtab *st;
	size_t cap;
	/* starts of FDEs of code not entered by a call, per enum np_sym_entry */
	struct starts {
		uint64_t *v;
		size_t n, cap;
	} entry[NP_ENTRY_SIGRETURN + 1];
};

static bool push_u64(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		uint64_t *nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return false;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return true;
}

static int push(struct builder *b, const char *name, uint64_t addr, uint64_t size,
		unsigned source)
{
	struct np_symtab *st = b->st;
	if (st->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct np_sym *v = realloc(st->syms, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		st->syms = v;
		b->cap = cap;
	}
	/* libdwfl names versioned symbols "dlopen@@GLIBC_2.34"; users (and
	 * perf, bpftrace) say "dlopen". Versions of one name at one address
	 * fold together in sort_unique. */
	char *copy = strndup(name, strcspn(name, "@"));
	if (!copy)
		return -ENOMEM;
	st->syms[st->n++] = (struct np_sym){copy, NULL, NULL, addr, size, source, NP_ENTRY_CALL};
	st->sources |= source;
	return 0;
}

static int by_addr_name(const void *a, const void *b)
{
	const struct np_sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : (int)x->source - (int)y->source;
}

/* Sort; one entry per (name, addr), the first source by enum order. */
static void sort_unique(struct np_symtab *st)
{
	if (!st->n)
		return; /* syms may be NULL: no qsort(NULL, 0) */
	qsort(st->syms, st->n, sizeof(*st->syms), by_addr_name);
	size_t k = 0;
	for (size_t i = 0; i < st->n; i++) {
		struct np_sym *s = &st->syms[i];
		if (k && st->syms[k - 1].addr == s->addr && !strcmp(st->syms[k - 1].name, s->name)) {
			free((char *)s->name);
			continue;
		}
		st->syms[k++] = *s;
	}
	st->n = k;
}

/* ------------------------------------------------------------------ */
/* The main file, through libelf                                        */

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *out)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		const char *n;
		if (gelf_getshdr(scn, out) && (n = elf_strptr(elf, shstrndx, out->sh_name)) &&
		    !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static bool has_section_type(Elf *elf, Elf64_Word type)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return true;
	}
	return false;
}

static struct priv *read_segments(Elf *elf, int fd)
{
	size_t n;
	if (elf_getphdrnum(elf, &n))
		return NULL;
	struct priv *p = calloc(1, sizeof(*p) + n * sizeof(p->seg[0]));
	if (!p)
		return NULL;
	p->fd = fd;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			p->seg[p->nseg++] = (struct seg){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* Symbols, through libdwfl                                             */

#define DEFAULT_DEBUGINFO_PATH ":.debug:/usr/lib/debug"

/* What tells one Elf from another: the main file, and, once libdwfl has
 * found it, the separate debug file, known as the Elf of its DWARF. */
struct origin {
	Elf *main, *debug;
	uint64_t bias;
	bool main_symtab, minidebug;
};

static unsigned source_of(const struct origin *o, Elf *elf)
{
	if (elf == o->main)
		return o->main_symtab ? NP_SYM_SYMTAB : NP_SYM_DYNSYM;
	return elf != o->debug && o->minidebug ? NP_SYM_MINIDEBUG : NP_SYM_DEBUGFILE;
}

static void find_origins(Dwfl_Module *mod, Elf *own, struct origin *o)
{
	const char *debugfile = NULL;
	Dwarf_Addr dbias;
	GElf_Shdr sh;
	o->main = dwfl_module_getelf(mod, &o->bias);
	o->main_symtab = has_section_type(own, SHT_SYMTAB);
	o->minidebug = find_section(own, ".gnu_debugdata", &sh) != NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	/* Opening the DWARF tells the debug file's Elf from MiniDebugInfo's,
	 * and costs a decompression of every compressed .debug_* section
	 * (libc6-dbg's: most of a second's inflate): only when the file has
	 * MiniDebugInfo to tell apart (source_of) */
	if (debugfile && o->minidebug) {
		Dwarf *dw = dwfl_module_getdwarf(mod, &dbias);
		o->debug = dw ? dwarf_getelf(dw) : NULL;
	}
}

static int add_dwfl_symbols(struct builder *b, Dwfl_Module *mod, Elf *own)
{
	int n = dwfl_module_getsymtab(mod);
	if (n <= 0)
		return 0; /* no table at all: .eh_frame may still tell */
	struct origin o = {0};
	find_origins(mod, own, &o);
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, NULL);
		int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || shndx == SHN_UNDEF || !*name)
			continue;
		int err = push(b, name, addr - o.bias, sym.st_size, source_of(&o, elf));
		if (err)
			return err;
	}
	return 0;
}

static char *debuginfo_path(void)
{
	const char *extra = getenv("NANOPROBE_DEBUGINFO_PATH");
	char *path = NULL;
	if (extra && *extra && asprintf(&path, "%s:%s", extra, DEFAULT_DEBUGINFO_PATH) < 0)
		path = NULL;
	return path;
}

static int load_symbols(struct builder *b, Elf *own, char *err, size_t errlen)
{
	char *dipath = debuginfo_path();
	const Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = dipath ? &dipath : NULL,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	Dwfl_Module *mod = dwfl ? dwfl_report_offline(dwfl, "", b->st->path, -1) : NULL;
	int ret = -EINVAL;
	if (mod && dwfl_report_end(dwfl, NULL, NULL) == 0)
		ret = add_dwfl_symbols(b, mod, own);
	else
		set_err(err, errlen, "%s: cannot read symbols: %s", b->st->path, dwfl_errmsg(-1));
	dwfl_end(dwfl);
	free(dipath);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Functions no symbol covers, from .eh_frame                           */

static size_t ptr_size(int enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	}
	return 0; /* LEB128 or unknown: not used for code addresses here */
}

/* The FDE pointer encoding: the 'R' entry of the CIE's augmentation data,
 * whose entries follow the letters after 'z' in order. -1 if unknown. */
static int fde_encoding(const Dwarf_CIE *cie)
{
	const char *aug = cie->augmentation;
	const uint8_t *d = cie->augmentation_data, *end = d + cie->augmentation_data_size;
	if (aug[0] != 'z')
		return aug[0] ? -1 : DW_EH_PE_absptr;
	for (aug++; *aug && d < end; aug++) {
		if (*aug == 'R')
			return *d;
		if (*aug == 'L')
			d++;
		else if (*aug == 'P')
			d += 1 + ptr_size(*d);
		else if (*aug != 'S' && *aug != 'B')
			return -1;
	}
	return DW_EH_PE_absptr;
}

/* A raw pointer of the given encoding, little- or big-endian as the file. */
static int read_pointer(const uint8_t *p, int enc, bool msb, uint64_t *out)
{
	size_t n = ptr_size(enc);
	if (!n)
		return -EOPNOTSUPP;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[msb ? n - 1 - i : i] << (8 * i);
	if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1) /* sdata: sign-extend */
		v |= ~0ull << (8 * n);
	*out = v;
	return 0;
}

struct ehframe {
	const unsigned char *ident;
	Elf_Data *data;
	uint64_t addr; /* sh_addr of .eh_frame */
};

/* An unsigned LEB128 at *p (advanced past it); false past end. */
static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t byte = *(*p)++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return *out = v, true;
	}
	return false;
}

/*
 * Is the code at an FDE's start entered with a frame already built? The
 * CIE's initial instructions are the state at a call's target (x86-64:
 * CFA = rsp+8, return address at CFA-8); an FDE whose own instructions
 * change a rule before the first advance describes code entered in
 * another state: the .cold part of a function, which its hot part jumps
 * to, or an entry like _start. Anything but an advance or a nop first
 * counts, so that doubt refuses a return probe rather than risks one.
 */
static bool fde_starts_mid_frame(const Dwarf_CIE *cie, const uint8_t *insns, const uint8_t *end)
{
	uint64_t aug_len;
	if (cie->augmentation[0] == 'z' && (!read_uleb(&insns, end, &aug_len) ||
					    aug_len > (uint64_t)(end - insns)))
		return true;
	if (cie->augmentation[0] == 'z')
		insns += aug_len;
	while (insns < end && *insns == DW_CFA_nop)
		insns++;
	if (insns == end)
		return false;
	return (*insns & 0xc0) != DW_CFA_advance_loc && *insns != DW_CFA_advance_loc1 &&
	       *insns != DW_CFA_advance_loc2 && *insns != DW_CFA_advance_loc4;
}

struct fde_info {
	uint64_t start, size;
	bool mid_frame; /* fde_starts_mid_frame */
};

/*
 * The FDE's range. dwarf_next_cfi parses the entries but leaves the two
 * encoded fields of an FDE raw (libdw's own decoder is internal): the
 * initial location, absolute or pc-relative as compilers emit it, and the
 * address range in the same format.
 */
static int fde_parse(const struct ehframe *eh, const Dwarf_FDE *fde, struct fde_info *out)
{
	Dwarf_CFI_Entry cie;
	Dwarf_Off next;
	if (dwarf_next_cfi(eh->ident, eh->data, true, fde->CIE_pointer, &next, &cie) != 0 ||
	    cie.CIE_id != LIBDW_CIE_ID)
		return -EINVAL;
	int enc = fde_encoding(&cie.cie);
	bool msb = eh->ident[EI_DATA] == ELFDATA2MSB;
	if (enc < 0 || (enc & 0x70) > DW_EH_PE_pcrel || fde->end - fde->start < 2 * (long)ptr_size(enc) ||
	    read_pointer(fde->start, enc, msb, &out->start) ||
	    read_pointer(fde->start + ptr_size(enc), enc & 0x0f, msb, &out->size))
		return -EOPNOTSUPP;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		out->start += eh->addr + (uint64_t)(fde->start - (const uint8_t *)eh->data->d_buf);
	out->mid_frame = fde_starts_mid_frame(&cie.cie, fde->start + 2 * ptr_size(enc), fde->end);
	return 0;
}

/* syms[0, nsym) are the symbols, sorted; FDE entries are pushed after. */
/* The PLT has unwind info too, but it is no function: its stubs push a
 * relocation index the dynamic linker then reads off the stack, and a
 * return probe there replaces it (the program dies in _dl_fixup). */
struct plt_ranges {
	uint64_t lo[4], hi[4];
	unsigned n;
};

static void find_plts(Elf *elf, struct plt_ranges *plt)
{
	size_t shstrndx;
	plt->n = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) && plt->n < 4;) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name)
							  : NULL;
		if (name && !strncmp(name, ".plt", 4)) {
			plt->lo[plt->n] = sh.sh_addr;
			plt->hi[plt->n++] = sh.sh_addr + sh.sh_size;
		}
	}
}

static bool in_plt(const struct plt_ranges *plt, uint64_t addr)
{
	for (unsigned i = 0; i < plt->n; i++)
		if (addr >= plt->lo[i] && addr < plt->hi[i])
			return true;
	return false;
}

static int add_fde(struct builder *b, size_t nsym, const struct ehframe *eh, const Dwarf_FDE *fde,
		   const struct plt_ranges *plt)
{
	struct np_symtab sorted = {.syms = b->st->syms, .n = nsym};
	struct fde_info f;
	if (fde_parse(eh, fde, &f) || f.size == 0 || in_plt(plt, f.start))
		return 0; /* not a function, or an FDE we cannot place */
	struct starts *kind = &b->entry[f.mid_frame ? NP_ENTRY_MID_FRAME : NP_ENTRY_CALL];
	if (f.mid_frame && !push_u64(&kind->v, &kind->n, &kind->cap, f.start))
		return -ENOMEM;
	if (np_symtab_at(&sorted, f.start))
		return 0; /* a symbol names it already */
	char name[32];
	snprintf(name, sizeof(name), "fn_%llx", (unsigned long long)f.start);
	return push(b, name, f.start, f.size, NP_SYM_EHFRAME);
}

/* Signal trampolines (__restore_rt) have CIEs with the 'S' augmentation:
 * the code the kernel returns through after every signal handler. No
 * function to offer there: a probe in it would break every signal. */
struct signal_cies {
	Dwarf_Off off[8];
	unsigned n;
};

static void note_signal_cie(struct signal_cies *sig, Dwarf_Off off, const Dwarf_CIE *cie)
{
	if (cie->augmentation && strchr(cie->augmentation, 'S') && sig->n < 8)
		sig->off[sig->n++] = off;
}

static bool is_signal_fde(const struct signal_cies *sig, const Dwarf_FDE *fde)
{
	for (unsigned i = 0; i < sig->n; i++)
		if (fde->CIE_pointer == sig->off[i])
			return true;
	return false;
}

static void clamp_ehframe(struct np_symtab *st);

/* A signal frame's range: kept as a start and an end, for mark_sigreturn
 * (its FDE starts a byte early, on a nop, for the unwinder's pc - 1). */
static int note_sigreturn(struct builder *b, const struct ehframe *eh, const Dwarf_FDE *fde)
{
	struct starts *s = &b->entry[NP_ENTRY_SIGRETURN];
	struct fde_info f;
	if (fde_parse(eh, fde, &f))
		return 0;
	if (!push_u64(&s->v, &s->n, &s->cap, f.start) ||
	    !push_u64(&s->v, &s->n, &s->cap, f.start + f.size))
		return -ENOMEM;
	return 0;
}

static int add_ehframe_functions(struct builder *b, Elf *elf)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(elf, ".eh_frame", &sh);
	struct ehframe eh = {(const unsigned char *)elf_getident(elf, NULL),
			     scn ? elf_getdata(scn, NULL) : NULL, scn ? sh.sh_addr : 0};
	if (!eh.data || sh.sh_type == SHT_NOBITS)
		return 0;
	size_t nsym = b->st->n;
	int err = 0;
	Dwarf_CFI_Entry e;
	struct signal_cies sig = {0};
	struct plt_ranges plt;
	find_plts(elf, &plt);
	for (Dwarf_Off off = 0, next; !err && dwarf_next_cfi(eh.ident, eh.data, true, off, &next,
							     &e) == 0; off = next) {
		if (e.CIE_id == LIBDW_CIE_ID)
			note_signal_cie(&sig, off, &e.cie);
		else if (is_signal_fde(&sig, &e.fde))
			err = note_sigreturn(b, &eh, &e.fde);
		else
			err = add_fde(b, nsym, &eh, &e.fde, &plt);
	}
	return err;
}

/* A function the symbol tables name may start inside an FDE's range (an
 * FDE may cover a stub and what follows; a symbol of size 0 says nothing
 * of its end): an FDE-made function ends where the next known one starts.
 * The engine may displace bytes up to a function's end. */
static void clamp_ehframe(struct np_symtab *st)
{
	for (size_t i = 0; i + 1 < st->n; i++) {
		struct np_sym *s = &st->syms[i];
		size_t j = i + 1;
		while (j < st->n && st->syms[j].addr == s->addr)
			j++;
		if (s->source == NP_SYM_EHFRAME && j < st->n && s->addr + s->size > st->syms[j].addr)
			s->size = st->syms[j].addr - s->addr;
	}
}

/* ------------------------------------------------------------------ */
/* Loading                                                              */

static int open_elf(struct np_symtab *st, Elf **elf, char *err, size_t errlen)
{
	int fd = open(st->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		set_err(err, errlen, "cannot open %s: %s", st->path, strerror(e));
		return -e;
	}
	elf_version(EV_CURRENT);
	GElf_Ehdr eh;
	*elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	char out[PATH_MAX];
	if (!*elf || elf_kind(*elf) != ELF_K_ELF || !gelf_getehdr(*elf, &eh)) {
		/* a script: why the program it runs could not be told (follow.c) */
		if (np_follow_script(st->path, out, sizeof(out), NULL, 0, err, errlen) == 0)
			set_err(err, errlen, "%s: not an ELF file", st->path);
	} else if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		set_err(err, errlen, "%s: not an executable or shared object", st->path);
	} else if (!(st->priv = read_segments(*elf, fd))) {
		set_err(err, errlen, "%s: cannot read the program headers", st->path);
	} else {
		st->machine = eh.e_machine;
		st->dyn = eh.e_type == ET_DYN;
		return 0;
	}
	elf_end(*elf);
	close(fd);
	return -ENOEXEC;
}

/* Functions (named by a symbol or by their FDE) whose code is not entered
 * by a call: `starts` holds the FDE starts of that kind. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void mark_entry(struct np_symtab *st, struct starts *starts, enum np_sym_entry kind)
{
	if (!starts->n)
		return;
	qsort(starts->v, starts->n, sizeof(*starts->v), cmp_u64);
	for (size_t i = 0; i < st->n; i++)
		if (bsearch(&st->syms[i].addr, starts->v, starts->n, sizeof(*starts->v), cmp_u64))
			st->syms[i].entry = (unsigned char)kind;
}

/* Symbols inside a signal frame's range (pairs of start, end; few). */
static void mark_sigreturn(struct np_symtab *st, const struct starts *ranges)
{
	for (size_t k = 0; k + 1 < ranges->n; k += 2)
		for (size_t i = 0; i < st->n; i++)
			if (st->syms[i].addr >= ranges->v[k] && st->syms[i].addr < ranges->v[k + 1])
				st->syms[i].entry = NP_ENTRY_SIGRETURN;
}

/* C++ names, once per table (a name that does not demangle stays as is). */
static void demangle_all(struct np_symtab *st)
{
	for (size_t i = 0; i < st->n; i++) {
		struct np_sym *s = &st->syms[i];
		if (!(s->demangled = np_demangle(s->name)))
			continue;
		s->short_name = np_demangled_short(s->demangled);
	}
}

/* The ELF entry point (_start) is entered by the kernel, not by a call:
 * on x86-64 the word at the stack pointer there is argc, which a return
 * probe would replace (the program then reads a trampoline's address as
 * its argument count). glibc's crt1 says so in a CIE of _start's own
 * (DW_CFA_undefined of the return address column), which
 * fde_starts_mid_frame does not read; the entry point is known without
 * it, with or without unwind information. */
static int add_entry_point(struct builder *b, Elf *elf)
{
	GElf_Ehdr eh;
	struct starts *kind = &b->entry[NP_ENTRY_MID_FRAME];
	if (!gelf_getehdr(elf, &eh) || !eh.e_entry)
		return 0;
	return push_u64(&kind->v, &kind->n, &kind->cap, eh.e_entry) ? 0 : -ENOMEM;
}

int np_symtab_load(const char *path, struct np_symtab *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof(*st));
	char real[PATH_MAX];
	if (!realpath(path, real)) {
		int e = errno;
		set_err(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	if (!(st->path = strdup(real)))
		return -ENOMEM;
	Elf *elf = NULL;
	int ret = open_elf(st, &elf, err, errlen);
	if (ret) {
		np_symtab_free(st);
		return ret;
	}
	struct builder b = {st, 0, {{0}}};
	ret = load_symbols(&b, elf, err, errlen);
	if (!ret) {
		sort_unique(st);
		ret = add_ehframe_functions(&b, elf);
		if (!ret)
			ret = add_entry_point(&b, elf);
		sort_unique(st);
		clamp_ehframe(st);
		mark_entry(st, &b.entry[NP_ENTRY_MID_FRAME], NP_ENTRY_MID_FRAME);
		mark_sigreturn(st, &b.entry[NP_ENTRY_SIGRETURN]);
		demangle_all(st);
	}
	for (size_t k = 0; k < sizeof(b.entry) / sizeof(*b.entry); k++)
		free(b.entry[k].v);
	elf_end(elf);
	if (ret == -ENOMEM)
		set_err(err, errlen, "%s: out of memory", st->path);
	if (ret)
		np_symtab_free(st);
	return ret;
}

void np_symtab_free(struct np_symtab *st)
{
	struct priv *p = st->priv;
	for (size_t i = 0; i < st->n; i++) {
		free((char *)st->syms[i].name);
		free((char *)st->syms[i].demangled);
		free((char *)st->syms[i].short_name);
	}
	free(st->syms);
	free(st->path);
	if (p)
		close(p->fd);
	free(p);
	memset(st, 0, sizeof(*st));
}

/* ------------------------------------------------------------------ */
/* Queries                                                              */

const char *np_sym_source_name(unsigned source)
{
	switch (source) {
	case NP_SYM_SYMTAB:
		return "symtab";
	case NP_SYM_DYNSYM:
		return "dynsym";
	case NP_SYM_MINIDEBUG:
		return "minidebug";
	case NP_SYM_DEBUGFILE:
		return "debugfile";
	case NP_SYM_EHFRAME:
		return "eh_frame";
	}
	return "?";
}

const struct np_sym *np_symtab_find(const struct np_symtab *st, const char *name)
{
	for (size_t i = 0; i < st->n; i++)
		if (!strcmp(st->syms[i].name, name) ||
		    (st->syms[i].short_name && !strcmp(st->syms[i].short_name, name)))
			return &st->syms[i];
	return NULL;
}

static bool matches(const struct np_sym *s, const char *glob)
{
	return !fnmatch(glob, s->name, 0) ||
	       (s->demangled && !fnmatch(glob, s->demangled, 0)) ||
	       (s->short_name && !fnmatch(glob, s->short_name, 0));
}

/* Of two names of one function, the one a user knows: malloc before
 * __libc_malloc and __GI___libc_malloc, glibc's internal aliases. Fewer
 * leading underscores, then the shorter, then the first by name. */
static bool better_name(const struct np_sym *a, const struct np_sym *b)
{
	size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_");
	size_t la = strlen(a->name), lb = strlen(b->name);
	bool ia = !strncmp(a->name, "__GI_", 5), ib = !strncmp(b->name, "__GI_", 5);
	if (ia != ib)
		return ib;
	if (ua != ub)
		return ua < ub;
	if (la != lb)
		return la < lb;
	return strcmp(a->name, b->name) < 0;
}

size_t np_symtab_match(const struct np_symtab *st, const char *glob, const struct np_sym ***out)
{
	size_t n = 0;
	*out = NULL;
	for (size_t i = 0; i < st->n; i++) {
		const struct np_sym *s = &st->syms[i];
		if (!matches(s, glob))
			continue;
		if (n && (*out)[n - 1]->addr == s->addr) { /* an alias: keep the public name */
			if (better_name(s, (*out)[n - 1]))
				(*out)[n - 1] = s;
			continue;
		}
		const struct np_sym **v = realloc(*out, (n + 1) * sizeof(*v));
		if (!v)
			break; /* what was matched so far is still a valid answer */
		*out = v;
		v[n++] = s;
	}
	return n;
}

const struct np_sym *np_symtab_at(const struct np_symtab *st, uint64_t vaddr)
{
	size_t lo = 0, hi = st->n; /* first entry starting after vaddr */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (st->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* aliases share a start: any of them may carry the size */
	for (size_t i = lo; i-- > 0 && st->syms[i].addr == st->syms[lo - 1].addr;) {
		const struct np_sym *s = &st->syms[i];
		if (vaddr == s->addr || vaddr - s->addr < s->size)
			return s;
	}
	return NULL;
}

void np_symtab_suggest(const struct np_symtab *st, const char *name, char *buf, size_t len)
{
	struct suggest sg;
	suggest_init(&sg, name);
	for (size_t i = 0; i < st->n; i++)
		if (st->syms[i].source != NP_SYM_EHFRAME) /* synthetic names spell nothing */
			suggest_consider(&sg, st->syms[i].name);
	suggest_format(&sg, "", buf, len);
}

int np_symtab_offset_to_vaddr(const struct np_symtab *st, uint64_t off, uint64_t *vaddr)
{
	const struct priv *p = st->priv;
	for (size_t i = 0; p && i < p->nseg; i++) {
		const struct seg *s = &p->seg[i];
		if (off >= s->off && off - s->off < s->filesz) {
			*vaddr = s->vaddr + (off - s->off);
			return 0;
		}
	}
	return -ERANGE;
}

int np_symtab_read(const struct np_symtab *st, uint64_t vaddr, void *buf, size_t len)
{
	const struct priv *p = st->priv;
	for (size_t i = 0; p && i < p->nseg; i++) {
		const struct seg *s = &p->seg[i];
		if (vaddr < s->vaddr || vaddr - s->vaddr > s->filesz || len > s->filesz - (vaddr - s->vaddr))
			continue;
		ssize_t got = pread(p->fd, buf, len, (off_t)(s->off + (vaddr - s->vaddr)));
		return got == (ssize_t)len ? 0 : -EIO;
	}
	return -EFAULT;
}

uint64_t np_symtab_limit(const struct np_symtab *st, const struct np_sym *s)
{
	const struct priv *p = st->priv;
	uint64_t limit = s->addr + s->size;
	for (size_t i = 0; p && i < p->nseg; i++)
		if (s->addr >= p->seg[i].vaddr && s->addr - p->seg[i].vaddr < p->seg[i].filesz)
			limit = p->seg[i].vaddr + p->seg[i].filesz;
	for (const struct np_sym *t = s + 1; t < st->syms + st->n; t++)
		if (t->addr > s->addr)
			return t->addr < limit ? t->addr : limit;
	return limit;
}

/* ------------------------------------------------------------------ */
/* Resolving a probe spec's PATH                                        */

/* ldconfig -p tags each entry with its ABI; entries for the host's win. */
#if defined(__x86_64__)
#define HOST_ABI_TAG "x86-64"
#elif defined(__aarch64__)
#define HOST_ABI_TAG "AArch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_ABI_TAG "riscv64"
#else
#define HOST_ABI_TAG NULL
#endif

/* A name is a library's when it says so ("libc", "libc.so.6"). */
static bool is_lib_name(const char *name)
{
	return !strncmp(name, "lib", 3) || strstr(name, ".so");
}

/*
 * Does the file name base belong to library name? A soname ("libc.so.6")
 * must match exactly; a short name ("c", "libc") matches "libc.so",
 * "libc.so.<anything>" and "libc-<version>.so", never "libcrypt.so".
 */
static bool lib_match(const char *base, const char *name)
{
	if (strstr(name, ".so"))
		return !strcmp(base, name);
	char stem[NAME_MAX + 1];
	int n = snprintf(stem, sizeof(stem), "%s%s", strncmp(name, "lib", 3) ? "lib" : "", name);
	if (n < 0 || (size_t)n >= sizeof(stem) || strncmp(base, stem, (size_t)n))
		return false;
	const char *rest = base + n;
	size_t lr = strlen(rest);
	if (!strncmp(rest, ".so", 3))
		return rest[3] == '\0' || rest[3] == '.';
	return rest[0] == '-' && isdigit((unsigned char)rest[1]) && lr > 3 &&
	       !strcmp(rest + lr - 3, ".so");
}

static int set_out(const char *path, char *out, size_t outlen)
{
	char real[PATH_MAX];
	int n = snprintf(out, outlen, "%s", realpath(path, real) ? real : path);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

bool np_is_lib_name(const char *name)
{
	return is_lib_name(name);
}

/* The library in one of needer's DT_RUNPATH directories. */
static int from_runpath(const char *name, const char *needer, char *out, size_t outlen)
{
	static char dirs[16][PATH_MAX];
	int n = np_symtab_runpath(needer, dirs, 16), ret = -ENOENT;
	for (int i = 0; i < n && ret == -ENOENT; i++) {
		DIR *d = opendir(dirs[i]);
		for (struct dirent *e; d && ret == -ENOENT && (e = readdir(d));) {
			char cand[PATH_MAX * 2];
			if (strcmp(e->d_name, name) && !lib_match(e->d_name, name))
				continue;
			snprintf(cand, sizeof(cand), "%.4095s/%.255s", dirs[i], e->d_name);
			if (access(cand, R_OK) == 0)
				ret = set_out(cand, out, outlen);
		}
		if (d)
			closedir(d);
	}
	return ret;
}

int np_resolve_library(const char *name, const char *needer, pid_t pid, char *out,
		       size_t outlen, char *err, size_t errlen)
{
	if (pid <= 0 && needer && !strchr(name, '/') && from_runpath(name, needer, out, outlen) == 0)
		return 0;
	return np_resolve_path(name, pid, out, outlen, err, errlen);
}

/* The first file mapped in pid whose basename is name or name's library. */
static int from_maps(const char *name, pid_t pid, char *out, size_t outlen)
{
	char file[64], line[PATH_MAX + 128];
	snprintf(file, sizeof(file), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(file, "re");
	if (!f)
		return -ESRCH;
	int ret = -ENOENT;
	while (ret == -ENOENT && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		const char *base = strrchr(path, '/') + 1;
		if (!strcmp(base, name) || lib_match(base, name))
			ret = set_out(path, out, outlen);
	}
	fclose(f);
	return ret;
}

/* The library an entry of the loader's cache gives for name: the first
 * for the host's ABI, else the first of any (better than none). */
struct ldcache_pick {
	const char *name;
	char host[PATH_MAX], other[PATH_MAX];
};

static int pick_entry(const struct np_ldcache_entry *e, void *arg)
{
	struct ldcache_pick *p = arg;
	if (!lib_match(e->soname, p->name))
		return 0;
	if (!HOST_ABI_TAG || strstr(e->tags, HOST_ABI_TAG))
		return snprintf(p->host, sizeof(p->host), "%s", e->path), 1;
	if (!p->other[0])
		snprintf(p->other, sizeof(p->other), "%s", e->path);
	return 0;
}

/* One line of `ldconfig -p`: "\tlibc.so.6 (libc6,x86-64) => /lib/.../libc.so.6". */
static bool parse_ldconfig_line(char *line, struct np_ldcache_entry *e)
{
	char *open = strstr(line, " ("), *arrow = strstr(line, ") => ");
	if (line[0] != '\t' || !open || !arrow || arrow < open)
		return false;
	*open = *arrow = '\0';
	arrow[5 + strcspn(arrow + 5, "\n")] = '\0';
	e->soname = line + 1;
	snprintf(e->tags, sizeof(e->tags), "%s", open + 2);
	e->path = arrow + 5;
	return true;
}

/* The cache as ldconfig lists it, for a file ldcache.c does not read. */
static int ldconfig_each(int (*fn)(const struct np_ldcache_entry *, void *), void *arg)
{
	/* /sbin is not always in PATH; ldconfig lives there on every distro */
	FILE *f = popen(access("/sbin/ldconfig", X_OK) == 0 ? "/sbin/ldconfig -p 2>/dev/null"
							    : "ldconfig -p 2>/dev/null",
			"re");
	if (!f)
		return -ENOENT;
	char line[PATH_MAX + 256];
	struct np_ldcache_entry e;
	while (fgets(line, sizeof(line), f))
		if (parse_ldconfig_line(line, &e) && fn(&e, arg))
			break;
	pclose(f);
	return 0;
}

/* The loader's cache, read directly (no shell, no ldconfig: two processes
 * per name before the traced program starts); ldconfig itself only for a
 * file that reader does not know or trust. */
static int from_ldcache(const char *name, char *out, size_t outlen)
{
	struct ldcache_pick p = {.name = name};
	if (np_ldcache_each(NP_LDCACHE_FILE, pick_entry, &p) < 0) {
		p = (struct ldcache_pick){.name = name};
		ldconfig_each(pick_entry, &p);
	}
	if (p.host[0])
		return set_out(p.host, out, outlen);
	return p.other[0] ? set_out(p.other, out, outlen) : -ENOENT;
}

static int from_path_env(const char *name, char *out, size_t outlen)
{
	const char *env = getenv("PATH");
	char *dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
	int ret = -ENOENT;
	for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && ret == -ENOENT;
	     d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		struct stat sb;
		if (snprintf(cand, sizeof(cand), "%s/%s", d, name) < (int)sizeof(cand) &&
		    stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) && access(cand, X_OK) == 0)
			ret = set_out(cand, out, outlen);
	}
	free(dirs);
	return ret;
}

/* A name with a '/': made absolute, symlinks resolved when it exists. */
static int absolute(const char *name, char *out, size_t outlen)
{
	char cwd[PATH_MAX];
	if (name[0] == '/' || access(name, F_OK) == 0)
		return set_out(name, out, outlen);
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	while (name[0] == '.' && name[1] == '/') /* say cwd/x, not cwd/./x */
		name += 2;
	int n = snprintf(out, outlen, "%s/%s", cwd, name);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int np_resolve_path(const char *name, pid_t pid, char *out, size_t outlen, char *err,
		    size_t errlen)
{
	int ret = -ENOENT;
	if (strchr(name, '/'))
		return absolute(name, out, outlen);
	if (pid > 0 && (ret = from_maps(name, pid, out, outlen)) == -ESRCH) {
		set_err(err, errlen, "process %d not found", (int)pid);
		return -ESRCH;
	}
	/* a bare word is a program before it is a library: "python3" must not
	 * become libpython3.so; a process only has what it maps or can load */
	if (ret == -ENOENT && pid <= 0 && !is_lib_name(name))
		ret = from_path_env(name, out, outlen);
	if (ret == -ENOENT)
		ret = from_ldcache(name, out, outlen);
	if (ret == -ENOENT && pid > 0)
		set_err(err, errlen, "library '%s' not found in process %d nor in ld.so.cache",
			name, (int)pid);
	else if (ret == -ENOENT && is_lib_name(name))
		set_err(err, errlen, "library '%s' not found in ld.so.cache", name);
	else if (ret == -ENOENT)
		set_err(err, errlen, "unknown binary '%s': not found in $PATH", name);
	else if (ret)
		set_err(err, errlen, "'%s': %s", name, strerror(-ret));
	return ret;
}

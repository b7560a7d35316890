/* SPDX-License-Identifier: MIT */
/*
 * The planner's host for an ELF file (plan_file.h): the file's bytes, its
 * layout, its functions' bounds, their branches into each other and their
 * registers, for `list` and `analyze`.
 */
#include "plan_file.h"
#include "arch/regsum.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	unsigned machine;
	const char *name;
	const struct np_isa *isa;
} isas[] = {
	{EM_X86_64, "x86_64", &np_isa_x86_64},
	{EM_AARCH64, "arm64", &np_isa_arm64},
	{EM_RISCV, "riscv64", &np_isa_riscv64},
};
#define NISAS (sizeof(isas) / sizeof(isas[0]))

const char *plan_file_isa_names(void)
{
	return "x86_64, arm64 or riscv64";
}

const struct np_isa *plan_file_isa(int machine, const char *want, char *err, size_t len)
{
	for (size_t i = 0; i < NISAS; i++) {
		if (isas[i].machine != (unsigned)machine)
			continue;
		if (want && strcmp(want, isas[i].name)) {
			snprintf(err, len, "is %s, not %s", isas[i].name, want);
			return NULL;
		}
		return isas[i].isa;
	}
	snprintf(err, len, "e_machine %d is none of %s", machine, plan_file_isa_names());
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The file's layout                                                    */

static void read_exec_sections(Elf *e, struct plan_file *f)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)) && f->nexec < PLAN_FILE_NEXEC) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		f->exec_lo[f->nexec] = sh.sh_addr;
		f->exec_hi[f->nexec++] = sh.sh_addr + sh.sh_size;
	}
}

/* Trampoline places: a page below the first PT_LOAD, the page after the
 * last one's end; the executable sections; the unwind search table. */
static int read_layout(const char *path, struct plan_file *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	size_t n;
	uint64_t lo = UINT64_MAX, hi = 0;
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e)
		read_exec_sections(e, f);
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph))
				continue;
			if (ph.p_type == PT_GNU_EH_FRAME)
				f->eh_frame_hdr = ph.p_vaddr;
			if (ph.p_type != PT_LOAD)
				continue;
			lo = ph.p_vaddr < lo ? ph.p_vaddr : lo;
			hi = ph.p_vaddr + ph.p_memsz > hi ? ph.p_vaddr + ph.p_memsz : hi;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	if (lo > hi)
		return -ENOEXEC;
	f->places.below = (lo & ~0xfffull) - 0x1000;
	f->places.above = (hi + 0xfff) & ~0xfffull;
	return 0;
}

/* The end of the executable section holding addr (limit when none is known). */
static uint64_t section_end(const struct plan_file *f, uint64_t addr, uint64_t limit)
{
	for (unsigned i = 0; i < f->nexec; i++)
		if (addr >= f->exec_lo[i] && addr < f->exec_hi[i])
			return f->exec_hi[i] < limit ? f->exec_hi[i] : limit;
	return limit;
}

void plan_file_bounds(const struct plan_file *f, const struct np_sym *fn, uint64_t *end,
		      uint64_t *limit)
{
	*limit = section_end(f, fn->addr, np_symtab_limit(f->st, fn));
	*end = fn->size ? fn->addr + fn->size : *limit;
	*end = *end < *limit ? *end : *limit;
	*limit = *limit - fn->addr > NP_PLAN_MAX_FN_BYTES ? fn->addr + NP_PLAN_MAX_FN_BYTES : *limit;
	*end = *end < *limit ? *end : *limit;
}

/* Only a named function is known to be entered by calls: code that only
 * .eh_frame knows may be a .cold part, which a jump enters with the
 * caller's registers live. */
static bool fn_called(const struct np_sym *fn)
{
	return fn->source != NP_SYM_EHFRAME && !strstr(fn->name, ".cold");
}

/* The file's bytes at their vaddrs (jump tables too). */
static int file_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	return np_symtab_read(cookie, addr, dst, len) ? -EFAULT : 0;
}

/* ------------------------------------------------------------------ */
/* The module's register summaries                                      */

/* The PLT sections of the file: calls there keep the convention. */
static void add_stub_sections(const char *path, struct np_regsum *rs)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got", ".iplt", NULL};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	while (e && elf_getshdrstrndx(e, &shstrndx) == 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		for (const char *const *n = names; *n; n++)
			if (!strcmp(name, *n))
				np_regsum_add_stubs(rs, sh.sh_addr, sh.sh_addr + sh.sh_size);
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
}

struct span {
	uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Bytes [lo, hi) of the file to rs: a function, or code none bounds. */
static int add_bytes(const struct np_symtab *st, struct np_regsum *rs, uint64_t lo, uint64_t hi,
		     bool anon)
{
	uint8_t *code = hi > lo ? malloc(hi - lo) : NULL;
	int err = 0;
	if (hi > lo && !code)
		return -ENOMEM;
	if (code && np_symtab_read(st, lo, code, hi - lo) == 0)
		err = anon ? np_regsum_add_code(rs, code, hi - lo, lo)
			   : np_regsum_add(rs, code, hi - lo, lo);
	free(code);
	return err;
}

/* The executable sections' code outside every function (fn, sorted): the
 * gaps between them, code without symbol or FDE included. */
static int add_gaps(const struct plan_file *f, struct np_regsum *rs, struct span *fn, size_t n)
{
	int err = 0;
	qsort(fn, n, sizeof(*fn), by_lo);
	for (unsigned k = 0; k < f->nexec && !err; k++) {
		uint64_t at = f->exec_lo[k];
		for (size_t i = 0; i < n && !err && at < f->exec_hi[k]; i++) {
			if (fn[i].hi <= at || fn[i].lo >= f->exec_hi[k])
				continue;
			if (fn[i].lo > at)
				err = add_bytes(f->st, rs, at, fn[i].lo, true);
			at = fn[i].hi > at ? fn[i].hi : at;
		}
		if (!err && at < f->exec_hi[k])
			err = add_bytes(f->st, rs, at, f->exec_hi[k], true);
	}
	return err;
}

/* Every function of the file once, for what each may write and which
 * are reached directly (src/arch/regsum.h), and the code between them;
 * NULL when the ISA has no register table or memory runs out. */
static struct np_regsum *summarise(const struct plan_file *f)
{
	const struct np_symtab *st = f->st;
	struct np_regsum *rs = f->nexec < PLAN_FILE_NEXEC ? np_regsum_new(f->isa) : NULL;
	struct span *fn = calloc(st->n + 1, sizeof(*fn));
	size_t n = 0;
	int err = rs && fn ? 0 : -ENOMEM;
	if (!err)
		add_stub_sections(st->path, rs);
	for (size_t i = 0; i < st->n && !err; i++) {
		const struct np_sym *s = &st->syms[i];
		uint64_t end, limit;
		if (i && s->addr == st->syms[i - 1].addr)
			continue;
		plan_file_bounds(f, s, &end, &limit);
		if (end <= s->addr)
			continue;
		fn[n++] = (struct span){s->addr, end};
		err = add_bytes(st, rs, s->addr, end, false);
	}
	if (!err)
		err = add_gaps(f, rs, fn, n);
	free(fn);
	if (err || np_regsum_finish(rs)) {
		np_regsum_free(rs);
		return NULL;
	}
	return rs;
}

const struct np_regsum *plan_file_module(struct plan_file *f)
{
	if (!f->summed)
		f->sums = summarise(f);
	f->summed = true;
	return f->sums;
}

/* ------------------------------------------------------------------ */
/* The host                                                             */

static bool host_module(void *cookie, uint64_t start, bool called, struct np_freereg_env *env)
{
	const struct np_regsum *rs = plan_file_module(cookie);
	if (rs)
		np_regsum_env(rs, start, called, env);
	return rs != NULL;
}

/* Every function of the file's .eh_frame_hdr table once, as the engine
 * scans a loaded module's (src/core/neighbors.c). */
static void scan_neighbors(struct plan_file *f)
{
	struct np_mem mem = {file_read, NULL, (void *)f->st};
	uint64_t *starts;
	size_t n;
	f->scanned = true;
	if (!f->eh_frame_hdr || np_eh_frame_hdr_starts(&mem, f->eh_frame_hdr, &starts, &n))
		return;
	f->neighbors_known = np_targets_add_module(&f->neighbors, f->isa, &mem, starts, n) == 0;
	free(starts);
}

static void host_neighbors(void *cookie, uint64_t lo, uint64_t hi,
			   void (*add)(void *to, uint64_t target), void *to)
{
	struct plan_file *f = cookie;
	if (!f->scanned)
		scan_neighbors(f);
	np_targets_each(&f->neighbors, lo, hi, add, to);
}

/* The file's RELA relocations: what each writes, its addend and its
 * symbol's value (where the file defines it), to v[*n]. */
static int rela_values(Elf *e, uint64_t **v, size_t *n)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		Elf_Scn *syms;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !(sh.sh_flags & SHF_ALLOC) || !(d = elf_getdata(scn, NULL)))
			continue;
		syms = elf_getscn(e, sh.sh_link);
		Elf_Data *sd = syms ? elf_getdata(syms, NULL) : NULL;
		size_t count = sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : sizeof(Elf64_Rela));
		for (int i = 0; (size_t)i < count; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			if (!gelf_getrela(d, i, &r))
				return -EIO;
			if (*n + 2 > cap) {
				size_t c = cap ? 2 * cap : 1024;
				uint64_t *nv = realloc(*v, c * sizeof(*nv));
				if (!nv)
					return -ENOMEM;
				*v = nv;
				cap = c;
			}
			(*v)[(*n)++] = (uint64_t)r.r_addend;
			int k = (int)GELF_R_SYM(r.r_info);
			if (sd && k && gelf_getsym(sd, k, &sym) && sym.st_shndx != SHN_UNDEF)
				(*v)[(*n)++] = sym.st_value + (uint64_t)r.r_addend;
		}
	}
	return 0;
}

/* The code pointers the file holds: the words of its PT_LOAD segments'
 * bytes (a position-dependent executable's absolute ones, RELR's and
 * in-place addends), and what its RELA relocations write, that point
 * into its executable sections, as the engine reads a loaded module's
 * (src/core/held.c). The code of a position-independent file holds none
 * but through a relocation: its words, which at link-time addresses
 * would look like small constants, are left out. */
static void scan_held(struct plan_file *f)
{
	struct np_mem mem = {file_read, NULL, (void *)f->st};
	uint64_t code_lo = UINT64_MAX, code_hi = 0, *v = NULL;
	size_t n = 0;
	int fd = open(f->st->path, O_RDONLY | O_CLOEXEC);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t nph;
	int err = e && elf_getphdrnum(e, &nph) == 0 && f->nexec ? 0 : -ENOEXEC;
	f->held_scanned = true;
	for (unsigned i = 0; i < f->nexec; i++) {
		code_lo = f->exec_lo[i] < code_lo ? f->exec_lo[i] : code_lo;
		code_hi = f->exec_hi[i] > code_hi ? f->exec_hi[i] : code_hi;
	}
	GElf_Ehdr eh;
	bool exec = e && gelf_getehdr(e, &eh) && eh.e_type == ET_EXEC;
	for (size_t i = 0; !err && i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (exec || !(ph.p_flags & PF_X)))
			err = np_targets_add_held(&f->held, &mem, ph.p_vaddr,
						  ph.p_vaddr + ph.p_filesz, code_lo, code_hi);
	}
	if (!err)
		err = rela_values(e, &v, &n);
	if (!err)
		err = np_targets_add_values(&f->held, v, n, code_lo, code_hi);
	free(v);
	f->held_known = !err;
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
}

/* What the file's data holds, and its other functions form. */
static bool host_held(void *cookie, uint64_t lo, uint64_t hi,
		      void (*add)(void *to, uint64_t target), void *to)
{
	struct plan_file *f = cookie;
	if (!f->held_scanned)
		scan_held(f);
	if (!f->scanned)
		scan_neighbors(f);
	np_targets_each(&f->held, lo, hi, add, to);
	np_targets_each_formed(&f->neighbors, lo, hi, add, to);
	return f->held_known && f->neighbors_known;
}

static int host_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	struct plan_file *f = cookie;
	return file_read((void *)f->st, addr, dst, len);
}

int plan_file_open(struct plan_file *f, const struct np_symtab *st, const struct np_isa *isa)
{
	memset(f, 0, sizeof(*f));
	f->st = st;
	f->isa = isa;
	f->host = (struct np_plan_host){
		.read = host_read,
		.neighbor_targets = host_neighbors,
		.held_targets = host_held,
		.module = host_module,
		.cookie = f,
	};
	f->realise = np_plan_model(&f->places);
	elf_version(EV_CURRENT);
	return read_layout(st->path, f);
}

void plan_file_close(struct plan_file *f)
{
	np_targets_free(&f->neighbors);
	np_targets_free(&f->held);
	np_regsum_free(f->sums);
	f->sums = NULL;
}

int plan_file_view(struct plan_file *f, const struct np_sym *fn, unsigned flags,
		   struct np_fn_view *v)
{
	uint64_t end, limit;
	memset(v, 0, sizeof(*v));
	plan_file_bounds(f, fn, &end, &limit);
	if (end <= fn->addr)
		return -ENOENT;
	struct np_func_bounds fb = {fn->addr, end, limit, true, fn_called(fn)};
	int err = np_fn_view_load(v, f->isa, &f->host, &fb, fn->addr, flags);
	return err == -EFAULT ? -ENOENT : err; /* no bytes in the file (.bss-like) */
}

int plan_file_site(struct plan_file *f, struct np_fn_view *v, uint64_t pc, struct np_site_plan *s)
{
	return np_plan_site(v, pc, NP_WANT_AUTO, &f->realise, s);
}

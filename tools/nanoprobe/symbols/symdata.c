/* SPDX-License-Identifier: MIT */
/* What symtab.c's function table does not hold, read from the file once per
 * lookup (specs are few): any defined symbol by name, data included, for
 * @SYMBOL fetch args; and a library's DT_NEEDED list. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "symtab.h"

struct found {
	uint64_t vaddr, size;
	int type;
};

static bool find_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
		    struct found *out)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym sym;
		const char *s;
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (s && !strcmp(s, name)) {
			*out = (struct found){sym.st_value, sym.st_size, GELF_ST_TYPE(sym.st_info)};
			return true;
		}
	}
	return false;
}

static int find_symbol(const struct np_symtab *st, const char *name, struct found *out)
{
	int fd = open(st->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	bool found = false;
	for (Elf_Scn *scn = NULL; elf && !found && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			found = find_in(elf, scn, &sh, name, out);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found ? 0 : -ENOENT;
}

int np_symtab_find_data(const struct np_symtab *st, const char *name, uint64_t *vaddr)
{
	struct found f;
	int rc = find_symbol(st, name, &f);
	if (!rc)
		*vaddr = f.vaddr;
	return rc;
}

int np_symtab_find_object(const struct np_symtab *st, const char *name, uint64_t *vaddr,
			  uint64_t *size, int *type)
{
	struct found f;
	int rc = find_symbol(st, name, &f);
	if (!rc) {
		*vaddr = f.vaddr;
		*size = f.size;
		*type = f.type;
	}
	return rc;
}

/* The DT_NEEDED names of path, at most max of them: how many. */
int np_symtab_needed(const char *path, char names[][64], int max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize && n < max; i++) {
			GElf_Dyn dyn;
			const char *name;
			if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)))
				snprintf(names[n++], 64, "%s", name);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

/* Whether path's .dynsym imports (has undefined) a function matching glob:
 * a name the program calls in one of its libraries. */
bool np_symtab_imports(const char *path, const char *glob)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *scn = NULL; elf && !found && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; !found && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;
			int type;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx != SHN_UNDEF)
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			found = (type == STT_FUNC || type == STT_NOTYPE || type == STT_GNU_IFUNC) &&
				s && *s && !fnmatch(glob, s, 0);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* $ORIGIN and ${ORIGIN} in a DT_RUNPATH entry: the directory of the file. */
static void expand_origin(const char *entry, const char *file, char *out, size_t len)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", file);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	size_t at = 0;
	for (const char *p = entry; *p && at + 1 < len;) {
		size_t n = !strncmp(p, "${ORIGIN}", 9) ? 9 : !strncmp(p, "$ORIGIN", 7) ? 7 : 0;
		if (n) {
			at += (size_t)snprintf(out + at, len - at, "%s", dir);
			p += n;
		} else {
			out[at++] = *p++;
		}
	}
	out[at < len ? at : len - 1] = 0;
}

/* The directories of path's DT_RUNPATH (else DT_RPATH), at most max: how
 * many. */
int np_symtab_runpath(const char *path, char dirs[][PATH_MAX], int max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	char list[PATH_MAX] = "";
	bool runpath = false;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;
			if (!gelf_getdyn(d, (int)i, &dyn) ||
			    (dyn.d_tag != DT_RUNPATH && (dyn.d_tag != DT_RPATH || runpath)) ||
			    !(s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)))
				continue;
			snprintf(list, sizeof(list), "%s", s); /* RUNPATH wins over RPATH */
			runpath |= dyn.d_tag == DT_RUNPATH;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	for (char *save, *e = strtok_r(list, ":", &save); e && n < max; e = strtok_r(NULL, ":", &save))
		expand_origin(e, path, dirs[n++], PATH_MAX);
	return n;
}

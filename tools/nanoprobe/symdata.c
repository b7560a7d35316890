/* SPDX-License-Identifier: MIT */
/* What symtab.c's function table does not hold, read from the file once per
 * lookup (specs are few): any defined symbol by name, data included, for
 * @SYMBOL fetch args; and a library's DT_NEEDED list. */
#include <errno.h>
#include <fcntl.h>
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

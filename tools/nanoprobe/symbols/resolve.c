/* SPDX-License-Identifier: MIT */
/*
 * Resolving specs. The file is found as the kernel's tools would (absolute
 * path, $PATH, library short name through the target's mappings and the
 * loader's cache); functions come from every symbol source the file has.
 * The agent is told the module by device and inode and the site by ELF
 * vaddr: it adds the load bias of whatever mapping matches.
 */
#include "resolve.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "symtab.h"

/* Symbol tables stay loaded, at stable addresses, for the command's life. */
static struct np_symtab **tables;
static size_t ntables;

int resolve_table(const char *path, const struct np_symtab **out, char *err, size_t errlen)
{
	for (size_t i = 0; i < ntables; i++)
		if (!strcmp(tables[i]->path, path)) {
			*out = tables[i];
			return 0;
		}
	struct np_symtab **v = realloc(tables, (ntables + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	tables = v;
	struct np_symtab *t = calloc(1, sizeof(*t));
	int rc = t ? np_symtab_load(path, t, err, errlen) : -ENOMEM;
	if (rc) {
		free(t);
		return rc;
	}
	*out = tables[ntables++] = t;
	return 0;
}

static bool defines(const struct np_symtab *st, const char *glob)
{
	const struct np_sym **m = NULL;
	size_t n = np_symtab_match(st, glob, &m);
	free(m);
	return n > 0;
}

struct rprobe *resolve_add_probe(struct probe_set *set)
{
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 16;
		struct rprobe *p = realloc(set->p, cap * sizeof(*p));
		if (!p)
			return NULL;
		set->p = p;
		set->cap = cap;
	}
	struct rprobe *r = &set->p[set->n];
	memset(r, 0, sizeof(*r));
	r->m.type = NP_MSG_PROBE;
	r->m.id = (uint32_t)set->n++;
	return r;
}

/* [A-Za-z_][A-Za-z0-9_]*, as perf probe makes a name of a file or a
 * function: every other byte becomes '_', and a leading digit gets one. */
static void one_word(char *s, size_t size)
{
	for (char *c = s; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			*c = '_';
	if (isdigit((unsigned char)s[0]) && strlen(s) + 1 < size) {
		memmove(s + 1, s, strlen(s) + 1);
		s[0] = '_';
	}
}

/* perf probe's names: group probe_<file>, event <func>[_<off>][__return]. */
/* fn: the function's name for events, "" if there is none. */
static void name_probe(struct rprobe *r, const struct spec *s, const char *path, const char *fn)
{
	char base[NP_PATH_MAX];
	snprintf(base, sizeof(base), "%s", path);
	char *b = basename(base);
	b[strcspn(b, ".")] = 0;
	if (s->group[0])
		snprintf(r->group, sizeof(r->group), "%s", s->group);
	else
		snprintf(r->group, sizeof(r->group), "probe_%s", b);
	if (s->event[0])
		snprintf(r->event, sizeof(r->event), "%s", s->event);
	else if (!fn[0])
		snprintf(r->event, sizeof(r->event), "%s_0x%llx", b, (unsigned long long)s->offset);
	else if (r->m.vaddr != r->m.func_vaddr) /* func+OFFS, or a file offset inside it */
		snprintf(r->event, sizeof(r->event), "%s_%llu", fn,
			 (unsigned long long)(r->m.vaddr - r->m.func_vaddr));
	else
		snprintf(r->event, sizeof(r->event), "%s%s", fn, s->is_return ? "__return" : "");
	/* names are words, as the kernel's: Shop::price becomes Shop__price,
	 * the file my-app gives the group probe_my_app */
	one_word(r->event, sizeof(r->event));
	one_word(r->group, sizeof(r->group));
}

static int resolve_args(struct rprobe *r, const struct spec *s, const struct np_symtab *st,
			char *err, size_t errlen)
{
	r->m.nargs = (uint8_t)s->nargs;
	for (unsigned i = 0; i < s->nargs; i++) {
		const struct spec_arg *a = &s->args[i];
		r->m.args[i] = a->f;
		if (a->file_offset &&
		    np_symtab_offset_to_vaddr(st, a->f.imm, &r->m.args[i].imm)) {
			snprintf(err, errlen, "%s: @+0x%llx is outside the file's segments", st->path,
				 (unsigned long long)a->f.imm);
			return -ERANGE;
		}
		if (a->sym[0]) {
			uint64_t v;
			if (np_symtab_find_data(st, a->sym, &v)) {
				snprintf(err, errlen, "unknown symbol '@%s' in %s", a->sym, st->path);
				return -ENOENT;
			}
			r->m.args[i].imm = v + a->f.imm;
		}
	}
	return 0;
}

/* The bytes a patch may displace end where the next function starts,
 * whatever the symbol's size says: glibc's __memmove_chk_* falls through
 * into __memmove_*, whose entry other code calls. The symbol tables the
 * command reads (debug files included) know more entries than the
 * engine, which sees only the file's own .dynsym in a stripped library. */
uint64_t resolve_func_size(const struct np_symtab *st, const struct np_sym *fn)
{
	uint64_t next = np_symtab_limit(st, fn);
	return next > fn->addr && next - fn->addr < fn->size ? next - fn->addr : fn->size;
}

static int fill_probe(struct probe_set *set, const struct spec *s, const struct np_symtab *st,
		      const struct stat *file, const struct np_sym *fn, uint64_t vaddr,
		      unsigned action, char *err, size_t errlen)
{
	struct rprobe *r = resolve_add_probe(set);
	if (!r)
		return -ENOMEM;
	r->spec = s;
	r->m.is_return = s->is_return;
	r->m.action = (uint8_t)action;
	snprintf(r->m.path, sizeof(r->m.path), "%s", st->path);
	r->m.dev = (uint64_t)file->st_dev;
	r->m.ino = (uint64_t)file->st_ino;
	r->m.vaddr = vaddr;
	if (fn) {
		/* C++: the whole signature tells overloads apart */
		snprintf(r->func, sizeof(r->func), "%s", fn->demangled ? fn->demangled : fn->name);
		r->m.func_vaddr = fn->addr;
		r->m.func_size = resolve_func_size(st, fn);
	}
	name_probe(r, s, st->path, !fn ? "" : fn->short_name ? fn->short_name : fn->name);
	return resolve_args(r, s, st, err, errlen);
}

/* Why a probe cannot go at fn's entry (NULL: it can). A glob passes over
 * such functions; a name gets the reason. */
static const char *entry_refusal(const struct np_sym *fn, bool is_return)
{
	if (fn->entry == NP_ENTRY_SIGRETURN)
		return "is the signal return trampoline: it is never called, and a probe there "
		       "would fire on the return from every signal handler, its own included";
	if (fn->entry == NP_ENTRY_MID_FRAME && is_return)
		return "is entered by a jump with its frame already built (the .cold part of a "
		       "function, or an entry like _start): it has no return address to probe";
	return NULL;
}

/* Does the probe take the function's return? A return spec does, and
 * so does every probe of latency, which times each call to its return. */
static bool takes_return(const struct spec *s, unsigned action)
{
	return s->is_return || action == NP_ACT_LATENCY;
}

static int resolve_symbols(struct probe_set *set, const struct spec *s,
			   const struct np_symtab *st, const struct stat *file, unsigned action,
			   char *err, size_t errlen)
{
	const struct np_sym **m = NULL;
	size_t n = np_symtab_match(st, s->symbol, &m);
	int rc = 0;
	if (!n) {
		char hint[256] = "";
		if (!strpbrk(s->symbol, "*?["))
			np_symtab_suggest(st, s->symbol, hint, sizeof(hint));
		snprintf(err, errlen, "unknown symbol '%s' in %s%s%s", s->symbol, st->path,
			 hint[0] ? "; " : "", hint);
		return -ENOENT;
	}
	bool glob = strpbrk(s->symbol, "*?[") != NULL;
	size_t before = set->n;
	for (size_t i = 0; i < n && !rc; i++) {
		const char *why = entry_refusal(m[i], takes_return(s, action));
		if (why && glob)
			continue;
		if (why) {
			snprintf(err, errlen, "%s %s", m[i]->name, why);
			rc = -EINVAL;
			break;
		}
		if (m[i]->size && s->offset >= m[i]->size) {
			snprintf(err, errlen, "%s+%llu is past the end of %s (%llu bytes)", s->symbol,
				 (unsigned long long)s->offset, m[i]->name,
				 (unsigned long long)m[i]->size);
			rc = -ERANGE;
			break;
		}
		rc = fill_probe(set, s, st, file, m[i], m[i]->addr + s->offset, action, err, errlen);
	}
	free(m);
	if (!rc && set->n == before) {
		snprintf(err, errlen, "no function matching '%s' in %s can take this probe: "
				      "none is entered by a call", s->symbol, st->path);
		rc = -ENOENT;
	}
	return rc;
}

static int resolve_offset(struct probe_set *set, const struct spec *s,
			  const struct np_symtab *st, const struct stat *file, unsigned action,
			  char *err, size_t errlen)
{
	uint64_t vaddr;
	if (np_symtab_offset_to_vaddr(st, s->offset, &vaddr)) {
		snprintf(err, errlen, "offset 0x%llx is outside the loadable segments of %s",
			 (unsigned long long)s->offset, st->path);
		return -ERANGE;
	}
	const struct np_sym *fn = np_symtab_at(st, vaddr);
	if (s->is_return && (!fn || fn->addr != vaddr)) {
		snprintf(err, errlen, "a return probe must be at a function entry; 0x%llx is not",
			 (unsigned long long)s->offset);
		return -EINVAL;
	}
	const char *why = fn && fn->addr == vaddr ? entry_refusal(fn, takes_return(s, action))
						  : NULL;
	if (why) {
		snprintf(err, errlen, "%s %s", fn->name, why);
		return -EINVAL;
	}
	return fill_probe(set, s, st, file, fn, vaddr, action, err, errlen);
}

/* Does library `name` (as DT_NEEDED names it) define a function matching
 * glob? Its path in path when it does. */
static bool provides(const char *name, const char *needer, const char *glob, pid_t pid,
		     char *path, size_t len)
{
	const struct np_symtab *st;
	char err[256];
	return np_resolve_library(name, needer, pid, path, len, err, sizeof(err)) == 0 &&
	       resolve_table(path, &st, err, sizeof(err)) == 0 && defines(st, glob);
}

/* A function a file does not define may still be where the user met it: a
 * program's import (sqlite3_step in /usr/bin/sqlite3 is libsqlite3's), or
 * a stub library's (glibc 2.34 moved libpthread's and libdl's functions
 * into libc). As the dynamic linker would, look in the libraries the file
 * needs, then in theirs. */
static int from_needed(const char *file, const struct spec *s, pid_t pid, char *path,
		       size_t len, char name[64])
{
	char needed[16][64], deeper[16][64], dep[NP_PATH_MAX];
	int n = np_symtab_needed(file, needed, 16);
	for (int i = 0; i < n; i++)
		if (provides(needed[i], file, s->symbol, pid, path, len))
			return snprintf(name, 64, "%.63s", needed[i]), 0;
	for (int i = 0; i < n; i++) {
		char err[256];
		if (np_resolve_library(needed[i], file, pid, dep, sizeof(dep), err, sizeof(err)))
			continue;
		int m = np_symtab_needed(dep, deeper, 16);
		for (int j = 0; j < m; j++)
			if (provides(deeper[j], dep, s->symbol, pid, path, len))
				return snprintf(name, 64, "%.63s", deeper[j]), 0;
	}
	return -ENOENT;
}

int resolve_spec_file(const char *name, pid_t pid, const char *main_path, char *path,
		      size_t len, char *err, size_t errlen)
{
	static char noted[NP_PATH_MAX];
	char note[1024];
	const char *main_base = strrchr(main_path, '/');
	main_base = main_base ? main_base + 1 : main_path;
	/* the program itself may be named by its file name: 'app:fn' -- ./app */
	if (!name[0] || !strcmp(name, main_base))
		return snprintf(path, len, "%s", main_path) >= (int)len ? -ENAMETOOLONG : 0;
	/* a library: the one the program loads, maybe its own (DT_RUNPATH) */
	if (np_is_lib_name(name))
		return np_resolve_library(name, main_path, pid, path, len, err, errlen);
	int rc = np_resolve_program(name, pid, path, len, note, sizeof(note), err, errlen);
	if (!rc && note[0] && strcmp(noted, name)) { /* once per name */
		snprintf(noted, sizeof(noted), "%s", name);
		cli_error("%s", note);
	}
	return rc;
}

int resolve_spec(struct probe_set *set, const struct spec *s, pid_t pid, const char *main_path,
		 unsigned action, char *err, size_t errlen)
{
	char path[NP_PATH_MAX], dep[NP_PATH_MAX];
	const struct np_symtab *st, *dep_st;
	struct stat file, dep_file;
	int rc = resolve_spec_file(s->path, pid, main_path, path, sizeof(path), err, errlen);
	if (rc)
		return rc;
	if (stat(path, &file)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if ((rc = resolve_table(path, &st, err, errlen)))
		return rc;
	if (!s->symbol[0])
		return resolve_offset(set, s, st, &file, action, err, errlen);
	if (defines(st, s->symbol))
		return resolve_symbols(set, s, st, &file, action, err, errlen);
	bool imported = np_symtab_imports(path, s->symbol);
	char lib[64];
	bool elsewhere = from_needed(path, s, pid, dep, sizeof(dep), lib) == 0 &&
			 stat(dep, &dep_file) == 0 && resolve_table(dep, &dep_st, err, errlen) == 0;
	if (elsewhere && (imported || (st->dyn && strcmp(path, main_path)))) {
		if (imported)
			cli_error("'%s' is imported by %s: probed in %s, which defines it (every "
				  "caller's calls)", s->symbol, path, dep);
		return resolve_symbols(set, s, dep_st, &dep_file, action, err, errlen);
	}
	rc = resolve_symbols(set, s, st, &file, action, err, errlen);
	if (rc != -ENOENT)
		return rc;
	if (elsewhere) /* the program does not call it, a library it needs has it */
		snprintf(err, errlen, "unknown symbol '%s' in %s; %s, a library it needs, defines "
				      "it: %s:%s", s->symbol, path, lib, lib, s->symbol);
	else if (imported)
		snprintf(err, errlen, "'%s' is imported by %s from a library it needs, which was "
				      "not found: name the library, LIB:%s", s->symbol, path, s->symbol);
	return rc;
}

void probe_set_free(struct probe_set *set)
{
	free(set->p);
	*set = (struct probe_set){0};
}

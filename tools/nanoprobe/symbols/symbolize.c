/* SPDX-License-Identifier: MIT */
/*
 * Names for the traced process's code addresses. The mappings are kept
 * from the last read of /proc/PID/maps, so that addresses of a process
 * that has just exited (whose maps are gone) still get their names.
 */
#include "symbolize.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"
#include "symtab.h"

struct mapping {
	uint64_t lo, hi, off;
	char path[256];
};

struct symbolizer {
	pid_t pid;
	char main_path[NP_PATH_MAX];
	struct mapping *v;
	size_t n;
};

struct symbolizer *symbolizer_new(pid_t pid, const char *main_path)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	if (s) {
		s->pid = pid;
		char *real = main_path ? realpath(main_path, NULL) : NULL; /* as maps names it */
		snprintf(s->main_path, sizeof(s->main_path), "%s",
			 real ? real : main_path ? main_path : "");
		free(real);
	}
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	if (s)
		free(s->v);
	free(s);
}

/* Read the file-backed mappings again; keep the old ones if it fails. */
void symbolizer_refresh(struct symbolizer *s)
{
	char path[64], line[768];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	FILE *f = fopen(path, "re");
	struct mapping *v = NULL;
	size_t n = 0, cap = 0;
	while (f && fgets(line, sizeof(line), f)) {
		struct mapping m = {0};
		int at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &m.lo, &m.hi,
			   &m.off, &at) < 3 || !at || line[at] != '/')
			continue;
		snprintf(m.path, sizeof(m.path), "%.*s", (int)strcspn(line + at, "\n"), line + at);
		if (n == cap) {
			struct mapping *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = m;
	}
	if (f)
		fclose(f);
	if (!n) {
		free(v);
		return;
	}
	free(s->v);
	s->v = v;
	s->n = n;
}

static const struct mapping *find(const struct symbolizer *s, uint64_t addr)
{
	for (size_t i = 0; i < s->n; i++)
		if (addr >= s->v[i].lo && addr < s->v[i].hi)
			return &s->v[i];
	return NULL;
}

const char *symbolize(struct symbolizer *s, uint64_t addr, char *buf, size_t cap)
{
	snprintf(buf, cap, "0x%llx", (unsigned long long)addr);
	const struct mapping *m = find(s, addr);
	if (!m) {
		symbolizer_refresh(s);
		m = find(s, addr);
	}
	const struct np_symtab *st;
	char err[256];
	uint64_t vaddr;
	if (!m || resolve_table(m->path, &st, err, sizeof(err)) ||
	    np_symtab_offset_to_vaddr(st, addr - m->lo + m->off, &vaddr))
		return buf;
	const struct np_sym *fn = np_symtab_at(st, vaddr);
	if (!fn)
		return buf;
	const char *base = strrchr(m->path, '/');
	bool main = !strcmp(m->path, s->main_path);
	snprintf(buf, cap, "%s+0x%llx%s%s%s", fn->short_name ? fn->short_name : fn->name,
		 (unsigned long long)(vaddr - fn->addr), main ? "" : " (",
		 main ? "" : base ? base + 1 : m->path, main ? "" : ")");
	return buf;
}

const char *symbolize_fn(struct symbolizer *s, uint64_t addr, uint64_t *offset)
{
	const struct mapping *m = find(s, addr);
	if (!m) {
		symbolizer_refresh(s);
		m = find(s, addr);
	}
	const struct np_symtab *st;
	char err[256];
	uint64_t vaddr;
	if (!m || resolve_table(m->path, &st, err, sizeof(err)) ||
	    np_symtab_offset_to_vaddr(st, addr - m->lo + m->off, &vaddr))
		return NULL;
	const struct np_sym *fn = np_symtab_at(st, vaddr);
	if (!fn)
		return NULL;
	*offset = vaddr - fn->addr;
	return fn->demangled ? fn->demangled : fn->name;
}

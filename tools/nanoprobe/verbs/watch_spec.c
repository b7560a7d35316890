/* SPDX-License-Identifier: MIT */
/*
 * Watch specs, parsed from the right (PATH may itself hold no ':' but
 * the suffixes are few and fixed), then resolved the way code probes are:
 * the file through np_resolve_path, the symbol through its symbol tables,
 * and the shape checked by the engine's own rule (np_watch_shape_check),
 * all before anything is started or touched.
 */
#include "watch_spec.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arch/arch.h"
#include "symbols/symtab.h"

const char *watch_type_name(enum np_watch_type type)
{
	return type == NP_WATCH_RW ? "rw" : type == NP_WATCH_EXEC ? "x" : "w";
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Take ":w", ":rw", ":x" then ":LEN" off the end of buf. */
static int parse_suffixes(char *buf, struct watch_spec *w, char *err, size_t errlen)
{
	char *colon = strrchr(buf, ':');
	w->type = NP_WATCH_WRITE;
	if (colon && (!strcmp(colon + 1, "w") || !strcmp(colon + 1, "rw") ||
		      !strcmp(colon + 1, "x"))) {
		w->type = colon[1] == 'x' ? NP_WATCH_EXEC : colon[1] == 'r' ? NP_WATCH_RW
									: NP_WATCH_WRITE;
		*colon = 0;
	} else if (colon && !strcmp(colon + 1, "r")) {
		snprintf(err, errlen, "'%s': debug registers cannot watch loads alone: "
			 "use rw (loads and stores)", w->text);
		return -EINVAL;
	}
	colon = strrchr(buf, ':');
	if (colon && all_digits(colon + 1)) {
		errno = 0;
		unsigned long long len = strtoull(colon + 1, NULL, 10);
		if (errno || len == 0 || len > 64) {
			snprintf(err, errlen, "'%s': bad length '%s'", w->text, colon + 1);
			return -EINVAL;
		}
		w->len = (size_t)len;
		*colon = 0;
	}
	return 0;
}

static int parse_number(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

int watch_spec_parse(const char *text, struct watch_spec *w, char *err, size_t errlen)
{
	char buf[NP_PATH_MAX + SPEC_SYM_MAX];
	memset(w, 0, sizeof(*w));
	w->text = text;
	if (snprintf(buf, sizeof(buf), "%s", text) >= (int)sizeof(buf) || !*text) {
		snprintf(err, errlen, "'%s': empty or too long", text);
		return -EINVAL;
	}
	int rc = parse_suffixes(buf, w, err, errlen);
	if (rc)
		return rc;
	if (!strncmp(buf, "0x", 2) || !strncmp(buf, "0X", 2)) {
		if (parse_number(buf, &w->offset)) {
			snprintf(err, errlen, "'%s': bad address '%s'", text, buf);
			return -EINVAL;
		}
		return 0;
	}
	char *colon = strrchr(buf, ':'), *sym = buf;
	if (colon) {
		*colon = 0;
		if (strlen(buf) >= sizeof(w->path)) {
			snprintf(err, errlen, "'%s': path too long", text);
			return -EINVAL;
		}
		memcpy(w->path, buf, strlen(buf) + 1);
		sym = colon + 1;
	}
	char *plus = strchr(sym, '+');
	if (plus) {
		*plus = 0;
		if (parse_number(plus + 1, &w->offset)) {
			snprintf(err, errlen, "'%s': bad offset '+%s'", text, plus + 1);
			return -EINVAL;
		}
	}
	if (!*sym || (colon && !*w->path)) {
		snprintf(err, errlen, "'%s': give SYMBOL, PATH:SYMBOL or 0xADDR", text);
		return -EINVAL;
	}
	if (strlen(sym) >= sizeof(w->symbol)) {
		snprintf(err, errlen, "'%s': symbol too long", text);
		return -EINVAL;
	}
	memcpy(w->symbol, sym, strlen(sym) + 1);
	return 0;
}

/* -p: the address must be mapped in the process, with the access allowed. */
static int check_pid_mapping(pid_t pid, uint64_t addr, enum np_watch_type type, char *err,
			     size_t errlen)
{
	char path[64], line[512], perms[8];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "cannot read %s", path);
		return -errno;
	}
	int rc = -EINVAL;
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) != 3 ||
		    addr < lo || addr >= hi)
			continue;
		bool ok = type == NP_WATCH_EXEC ? perms[2] == 'x' : perms[0] == 'r';
		rc = ok ? 0 : -EINVAL;
		if (!ok)
			snprintf(err, errlen, "0x%llx is mapped in process %d but not %s",
				 (unsigned long long)addr, (int)pid,
				 type == NP_WATCH_EXEC ? "executable" : "readable");
		break;
	}
	fclose(f);
	if (rc && !err[0])
		snprintf(err, errlen, "nothing is mapped at 0x%llx in process %d",
			 (unsigned long long)addr, (int)pid);
	return rc;
}

/* The symbol: its vaddr, size and the length to watch, checked against
 * its kind. */
static int symbol_range(const struct watch_spec *w, const struct np_symtab *st, uint64_t *vaddr,
			uint64_t *size, size_t *len, char *err, size_t errlen)
{
	int type;
	if (np_symtab_find_object(st, w->symbol, vaddr, size, &type)) {
		snprintf(err, errlen, "unknown symbol '%s' in %s", w->symbol, st->path);
		return -ENOENT;
	}
	if (type == STT_TLS) {
		snprintf(err, errlen, "'%s' is thread-local: each thread has its own copy; watch "
			 "one thread's by its address (0xADDR)", w->symbol);
		return -EINVAL;
	}
	bool code = type == STT_FUNC || type == STT_GNU_IFUNC;
	if (code != (w->type == NP_WATCH_EXEC)) {
		snprintf(err, errlen, code ? "'%s' is a function: watch its execution with :x"
					   : "'%s' is not a function: :x watches code", w->symbol);
		return -EINVAL;
	}
	*len = w->len;
	if (!*len && w->type != NP_WATCH_EXEC) {
		uint64_t left = *size > w->offset ? *size - w->offset : 0;
		if (left != 1 && left != 2 && left != 4 && left != 8) {
			snprintf(err, errlen, "'%s' has %llu bytes from +%llu: say how many to watch "
				 "with :LEN (1, 2, 4 or 8), and which with +OFFSET", w->symbol,
				 (unsigned long long)left, (unsigned long long)w->offset);
			return -EINVAL;
		}
		*len = (size_t)left;
	}
	*vaddr += w->offset;
	return 0;
}

static int check_inside(const struct watch_spec *w, uint64_t size, size_t len, char *err,
			size_t errlen)
{
	if (!size || w->type == NP_WATCH_EXEC || w->offset + len <= size)
		return 0;
	snprintf(err, errlen, "'%s': %zu bytes at +%llu go past the end of %s (%llu bytes)",
		 w->text, len, (unsigned long long)w->offset, w->symbol, (unsigned long long)size);
	return -ERANGE;
}

static void fill(struct rprobe *r, const struct watch_spec *w, uint64_t vaddr, size_t len)
{
	r->spec = NULL;
	r->m.action = NP_ACT_WATCH;
	r->m.vaddr = vaddr;
	r->m.watch_type = (uint8_t)w->type;
	r->m.watch_len = (uint8_t)len;
	snprintf(r->group, sizeof(r->group), "watch");
	if (w->symbol[0] && w->offset)
		snprintf(r->event, sizeof(r->event), "%s+%llu", w->symbol,
			 (unsigned long long)w->offset);
	else if (w->symbol[0])
		snprintf(r->event, sizeof(r->event), "%s", w->symbol);
	else
		snprintf(r->event, sizeof(r->event), "0x%llx", (unsigned long long)vaddr);
	if (w->type == NP_WATCH_EXEC)
		return;
	static const char *const names[2] = {"old", "new"};
	r->m.nargs = 2;
	for (int i = 0; i < 2; i++) {
		snprintf(r->m.args[i].name, sizeof(r->m.args[i].name), "%s", names[i]);
		r->m.args[i].base = NP_FB_IMM; /* filled by the agent, not fetched */
		r->m.args[i].type = NP_FT_U;
		r->m.args[i].size = (uint8_t)len;
	}
}

static int resolve_file(const struct watch_spec *w, pid_t pid, const char *main_path,
			char *path, size_t cap, char *err, size_t errlen)
{
	const char *base = strrchr(main_path, '/');
	base = base ? base + 1 : main_path;
	if (w->path[0] && strcmp(w->path, base))
		return np_resolve_program(w->path, pid, path, cap, NULL, 0, err, errlen);
	return snprintf(path, cap, "%s", main_path) >= (int)cap ? -ENAMETOOLONG : 0;
}

int watch_spec_resolve(struct probe_set *set, const struct watch_spec *w, pid_t pid,
		       const char *main_path, char *err, size_t errlen)
{
	char why[256], path[NP_PATH_MAX];
	uint64_t vaddr = w->offset, size = 0;
	size_t len = w->len ? w->len : w->type == NP_WATCH_EXEC ? 0 : 8;
	const struct np_symtab *st = NULL;
	struct stat file = {0};
	int rc;
	err[0] = 0;
	if (w->symbol[0]) {
		if ((rc = resolve_file(w, pid, main_path, path, sizeof(path), err, errlen)) ||
		    (rc = resolve_table(path, &st, err, errlen)) ||
		    (rc = symbol_range(w, st, &vaddr, &size, &len, err, errlen)))
			return rc;
		if (stat(path, &file)) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -errno;
		}
	}
	/* a module's bias is page-aligned: the vaddr has the runtime alignment */
	if ((rc = np_watch_shape_check(&NP_ISA_NATIVE, vaddr, len, w->type == NP_WATCH_EXEC,
					why, sizeof(why)))) {
		snprintf(err, errlen, "'%s': %s", w->text, why);
		return rc;
	}
	if ((rc = check_inside(w, size, len, err, errlen)))
		return rc;
	if (!w->symbol[0] && pid > 0 && (rc = check_pid_mapping(pid, vaddr, w->type, err, errlen)))
		return rc;
	struct rprobe *r = resolve_add_probe(set);
	if (!r)
		return -ENOMEM;
	if (st) {
		snprintf(r->m.path, sizeof(r->m.path), "%s", st->path);
		r->m.dev = (uint64_t)file.st_dev;
		r->m.ino = (uint64_t)file.st_ino;
	}
	fill(r, w, vaddr, len);
	return 0;
}

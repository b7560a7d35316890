/* SPDX-License-Identifier: MIT */
/*
 * `nanoprobe list [-j] PATH [FUNC]`
 *
 * Without FUNC, or with a glob matching several functions: the functions
 * of PATH (address, size, name, the symbol source that named it), like
 * `nm -S --defined-only` sorted by address. With FUNC matching one
 * function: each of its instructions, disassembled, with the strategy a
 * probe there would get from AUTO and, when it is not JUMP, the planner's
 * reason. Nothing is attached and no process is needed: the engine's
 * planner (src/plan/) plans over the file's bytes (plan_file.c), for any
 * ISA this build has a layer for, assuming, as a file cannot tell, that
 * trampolines go next to the module.
 */
#include "cmd_list.h"
#include "cli.h"
#include "output/quote.h"
#include "symbols/plan_file.h"
#include "symbols/symtab.h"

#include <elf.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct list_opts {
	bool json, names;
	const char *path, *func;
};

enum { OPT_NAMES = 256 };

static const struct cli_opt list_own[] = {
	{'j', "json", NULL, "one JSON object per line, each with a \"type\""},
	{OPT_NAMES, "names", NULL, "the names of the functions only, one per line"},
	{0},
};
static const struct cli_opt *const list_opts[] = {list_own, NULL};

/* 0 to run, else the exit status (2: usage error). */
static int parse_args(int argc, char **argv, struct list_opts *o)
{
	struct option longs[8];
	char shortopts[16];
	int opt;
	cli_getopt_tables(list_opts, shortopts, sizeof(shortopts), longs, 8);
	optind = 1;
	while ((opt = getopt_long(argc, argv, shortopts, longs, NULL)) != -1) {
		if (opt == 'j')
			o->json = true;
		else if (opt == OPT_NAMES)
			o->names = true;
		else
			return cli_bad_option(opt, argv, list_opts);
	}
	if (optind >= argc) {
		cli_error("which file? nanoprobe list [OPTIONS] PATH [FUNC]");
		return 2;
	}
	o->path = argv[optind++];
	o->func = optind < argc ? argv[optind++] : NULL;
	if (optind < argc) {
		cli_error("unexpected argument '%s': nanoprobe list [OPTIONS] PATH [FUNC]",
			  argv[optind]);
		return 2;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Functions                                                            */

/* As nm -C shows it: C++ names demangled. */
static const char *shown(const struct np_sym *s)
{
	return s->demangled ? s->demangled : s->name;
}

/* --names: what a completion offers (a C++ name also without its
 * parameters, as specs take it). */
static void print_names(const struct np_sym *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", v[i]->name);
		if (v[i]->short_name && strcmp(v[i]->short_name, v[i]->name))
			printf("%s\n", v[i]->short_name);
	}
}

static void print_functions(const struct np_sym *const *v, size_t n, bool json)
{
	int w = 4; /* the longest name's width: SOURCE stays in line */
	for (size_t i = 0; i < n && !json; i++)
		if ((int)strlen(shown(v[i])) > w)
			w = (int)strlen(shown(v[i]));
	if (!json)
		printf("%-16s  %8s  %-*s  %s\n", "ADDRESS", "SIZE", w, "NAME", "SOURCE");
	for (size_t i = 0; i < n; i++) {
		const struct np_sym *s = v[i];
		const char *src = np_sym_source_name(s->source);
		if (!json) {
			printf("%016" PRIx64 "  %8" PRIu64 "  %-*s  %s\n", s->addr, s->size, w,
			       shown(s), src);
			continue;
		}
		printf("{\"type\":\"function\",\"name\":");
		quote_json(stdout, s->name);
		if (s->demangled) {
			printf(",\"demangled\":");
			quote_json(stdout, s->demangled);
		}
		printf(",\"addr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"source\":\"%s\"}\n",
		       s->addr, s->size, src);
	}
}

static int list_all(const struct np_symtab *st, const struct list_opts *o)
{
	const struct np_sym **v = malloc((st->n ? st->n : 1) * sizeof(*v));
	if (!v) {
		cli_error("out of memory");
		return 1;
	}
	for (size_t i = 0; i < st->n; i++)
		v[i] = &st->syms[i];
	if (o->names)
		print_names(v, st->n);
	else
		print_functions(v, st->n, o->json);
	free(v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Instructions                                                         */

struct row {
	uint64_t pc;
	unsigned len;
	char text[160];
};

/* One function's bytes, as listed: [addr, addr + len). */
struct listing {
	const struct np_isa *isa;
	uint64_t addr;
	uint8_t *code;
	size_t len;
};

/* One instruction at pc; an undecodable byte is shown alone as "(bad)". */
static void decode_row(const struct listing *l, uint64_t pc, struct row *r)
{
	struct np_insn in;
	size_t off = pc - l->addr;
	int err = l->isa->decode(l->code + off, l->len - off, pc, &in);
	r->pc = pc;
	r->len = err ? 1 : in.len;
	if (err)
		snprintf(r->text, sizeof(r->text), "(bad)");
	else if (l->isa->format(l->code + off, l->len - off, pc, r->text, sizeof(r->text)) < 0)
		snprintf(r->text, sizeof(r->text), "(cannot format)");
	for (char *t = r->text; (t = strchr(t, '\t'));) /* objdump's tab: the columns stay */
		*t = ' ';
}

static const char *machine_name(unsigned machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86_64";
	case EM_AARCH64:
		return "aarch64";
	case EM_RISCV:
		return "riscv";
	case EM_386:
		return "i386";
	case EM_ARM:
		return "arm";
	}
	return NULL;
}

/* The machine check, the planner's view and the bytes listed: 0, or 1
 * with the reason printed. */
static int open_function(const struct np_symtab *st, const struct np_sym *s, struct plan_file *pf,
			 struct np_fn_view *v, struct listing *l)
{
	char err[128];
	const struct np_isa *isa = plan_file_isa(st->machine, NULL, err, sizeof(err));
	if (!isa) {
		char m[32];
		if (machine_name((unsigned)st->machine))
			snprintf(m, sizeof(m), "%s", machine_name((unsigned)st->machine));
		else
			snprintf(m, sizeof(m), "ELF machine %d", st->machine);
		cli_error("%s is %s; this build decodes %s only", st->path, m,
			  plan_file_isa_names());
		return 1;
	}
	if (s->size == 0) {
		cli_error("%s: size unknown, its instructions cannot be listed", s->name);
		return 1;
	}
	*l = (struct listing){isa, s->addr, malloc(s->size), s->size};
	int rc = !l->code ? -ENOMEM : np_symtab_read(st, s->addr, l->code, s->size) ? -EFAULT : 0;
	if (!rc && (rc = plan_file_open(pf, st, isa)))
		cli_error("%s: cannot read its segments: %s", st->path, strerror(-rc));
	else if (!rc && (rc = plan_file_view(pf, s, 0, v)) == -ENOENT)
		rc = -EFAULT;
	if (rc == -EFAULT || rc == -ENOMEM)
		cli_error("%s: cannot read its bytes from %s: %s", s->name, st->path,
			  strerror(-rc));
	return rc ? 1 : 0;
}

/* Column widths of an instruction listing. */
struct widths {
	int addr, bytes, text;
};

/* As np_strategy_name() names them (the engine's probe strategies). */
static const char *const strategy_json[] = {
	[NP_SITE_JUMP] = "jump", [NP_SITE_TRAP_SIM] = "trap", [NP_SITE_TRAP_OOL] = "trap",
	[NP_SITE_REFUSED] = "refused"};
static const char *const strategy_text[] = {
	[NP_SITE_JUMP] = "JUMP", [NP_SITE_TRAP_SIM] = "TRAP", [NP_SITE_TRAP_OOL] = "TRAP",
	[NP_SITE_REFUSED] = "refused"};

static void print_row(struct plan_file *pf, struct np_fn_view *v, const struct listing *l,
		      const struct row *r, const struct widths *w, bool json)
{
	struct np_site_plan s;
	char bytes[3 * 16] = "";
	plan_file_site(pf, v, r->pc, &s);
	const char *why = s.kind == NP_SITE_JUMP ? "" : s.why;
	char form[64] = ""; /* a jump to a hop says where the hop is */
	if (s.kind == NP_SITE_JUMP && s.plan.form == NP_JUMP_HOP)
		snprintf(form, sizeof(form), "%s 0x%" PRIx64,
			 np_plan_form_name(l->isa, s.plan.form), s.plan.hop);
	if (form[0])
		why = form;
	for (unsigned i = 0, n = 0; i < r->len && i < 16; i++)
		n += (unsigned)sprintf(bytes + n, i ? " %02x" : "%02x", l->code[r->pc - l->addr + i]);
	if (!json) {
		printf("  %*" PRIx64 "  %-*s  %-*s  %-*s%s%s\n", w->addr, r->pc, w->bytes, bytes,
		       w->text, r->text, why[0] ? 7 : 0, strategy_text[s.kind], why[0] ? "  " : "",
		       why);
		return;
	}
	printf("{\"type\":\"instruction\",\"addr\":\"0x%" PRIx64 "\",\"bytes\":\"%s\",\"insn\":",
	       r->pc, bytes);
	quote_json(stdout, r->text);
	printf(",\"strategy\":\"%s\",\"reason\":", strategy_json[s.kind]);
	if (why[0] && !form[0])
		quote_json(stdout, why);
	else
		printf("null");
	if (s.kind == NP_SITE_JUMP) {
		printf(",\"form\":");
		quote_json(stdout, np_plan_form_name(l->isa, s.plan.form));
	}
	if (form[0])
		printf(",\"hop\":\"0x%" PRIx64 "\"", s.plan.hop);
	printf("}\n");
}

static int list_instructions(const struct np_symtab *st, const struct np_sym *s, bool json)
{
	struct plan_file pf = {0};
	struct np_fn_view v = {0};
	struct listing l = {0};
	struct row r;
	uint64_t end = s->addr + s->size;
	int waddr = snprintf(NULL, 0, "%" PRIx64, end - 1);
	struct widths w = {waddr > 4 ? waddr : 4, 5, 11}; /* at least the headings */
	int rc = open_function(st, s, &pf, &v, &l);
	for (uint64_t pc = s->addr; !rc && pc < end; pc += r.len) {
		decode_row(&l, pc, &r);
		w.bytes = 3 * (int)r.len - 1 > w.bytes ? 3 * (int)r.len - 1 : w.bytes;
		w.text = (int)strlen(r.text) > w.text ? (int)strlen(r.text) : w.text;
	}
	if (!rc && !json)
		printf("%s: 0x%" PRIx64 "-0x%" PRIx64 " (%" PRIu64 " byte%s, %s) in %s\n", shown(s),
		       s->addr, end, s->size, s->size == 1 ? "" : "s",
		       np_sym_source_name(s->source), st->path);
	if (!rc && !json)
		printf("  %-*s  %-*s  %-*s  %s\n", w.addr, "ADDR", w.bytes, "BYTES", w.text,
		       "INSTRUCTION", "STRATEGY");
	for (uint64_t pc = s->addr; !rc && pc < end; pc += r.len) {
		decode_row(&l, pc, &r);
		print_row(&pf, &v, &l, &r, &w, json);
	}
	np_fn_view_free(&v);
	if (l.isa)
		plan_file_close(&pf);
	free(l.code);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The verb                                                             */

static bool is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static int list_matching(const struct np_symtab *st, const char *func,
			 const struct list_opts *o)
{
	const struct np_sym **m;
	size_t n = np_symtab_match(st, func, &m);
	int ret = 0;
	if (n && o->names) {
		print_names(m, n);
	} else if (n == 1) {
		ret = list_instructions(st, m[0], o->json);
	} else if (n > 1) {
		print_functions(m, n, o->json);
	} else {
		char hint[512] = "";
		if (!is_glob(func))
			np_symtab_suggest(st, func, hint, sizeof(hint));
		cli_error("no function %s '%s' in %s%s%s", is_glob(func) ? "matches" : "named", func,
			  st->path, hint[0] ? "; " : "", hint);
		ret = 1;
	}
	free(m);
	return ret;
}

int cmd_list(int argc, char **argv)
{
	struct list_opts o = {0};
	int ret = parse_args(argc, argv, &o);
	if (ret)
		return ret;
	char path[PATH_MAX], err[512], note[1024];
	struct np_symtab st;
	if (np_resolve_program(o.path, 0, path, sizeof(path), note, sizeof(note), err,
			       sizeof(err)) ||
	    np_symtab_load(path, &st, err, sizeof(err))) {
		cli_error("%s", err);
		return 1;
	}
	if (note[0])
		cli_error("%s", note);
	ret = o.func ? list_matching(&st, o.func, &o) : list_all(&st, &o);
	np_symtab_free(&st);
	return ret;
}

const struct cli_verb verb_list = {
	"list", cmd_list, "list [OPTIONS] PATH [FUNC]",
	"a binary's functions, or one's instructions and the probe each gets",
	"PATH: a file, a program in $PATH, or a library such as c or libm.so.6.\n"
	"FUNC: a name or a glob: the functions it matches; when it matches one, that\n"
	"      function's instructions, each with the strategy a probe there would get.\n",
	list_opts,
};

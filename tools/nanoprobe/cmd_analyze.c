/* SPDX-License-Identifier: MIT */
/*
 * `nanoprobe analyze [--arch x86_64|arm64|riscv64] [-j] ELF...`
 *
 * How much of a real binary can be probed without a trap. For every
 * function (the symbols `list` shows) and every instruction boundary in
 * it: the strategy a probe there would get (JUMP and its form, TRAP
 * simulated, TRAP out of line with a jump back or a second trap,
 * rejected) and why it is not JUMP, then a summary in the terms of
 * 003_2060ca1e897bea36.txt, whose riscv64 kernel figures are printed
 * beside ours: the share of sites with one free register (68.3% there),
 * the share with a free register both at the site and where an
 * auipc+jalr patch's jump back lands (51% there), the share that is
 * trap-free, and the share of function entries that are.
 *
 * It runs on any host for any ISA with a pure layer in this build: the
 * planning is over the file's bytes (analyze_site.c). --arch names the
 * ISA a file must be; by default each file's e_machine picks it.
 */
#include "analyze.h"
#include "arch/regsum.h"
#include "quote.h"
#include "symtab.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

static const struct {
	unsigned machine;
	const char *name;
	const struct np_isa *isa;
} an_isas[] = {
	{EM_X86_64, "x86_64", &np_isa_x86_64},
	{EM_AARCH64, "arm64", &np_isa_arm64},
	{EM_RISCV, "riscv64", &np_isa_riscv64},
};
#define AN_NISAS (sizeof(an_isas) / sizeof(an_isas[0]))

static const char *const an_kind_names[AN_NKINDS] = {"jump", "trap-simulated",
						      "trap-out-of-line", "rejected"};

struct an_opts {
	bool json;
	const char *arch;
	char **files;
	int nfiles;
};

#define AN_NREASONS 48

struct an_stats {
	size_t functions, sites, entries;
	size_t kind[AN_NKINDS], jump_short, one_free, one_free_plain, both_free, entries_free;
	size_t trap_back; /* of TRAP out of line: the copy traps back */
	struct np_regsum_stats sum; /* the module's functions (src/arch/regsum.h) */
	struct {
		char text[96];
		size_t n;
	} reasons[AN_NREASONS];
	size_t nreasons, other_reasons;
};

enum { OPT_ARCH = 256 };

static const struct cli_opt analyze_own[] = {
	{'j', "json", NULL, "one JSON object per line, each with a \"type\""},
	{OPT_ARCH, "arch", "ARCH", "the ISA the files must be: x86_64, arm64 or riscv64"},
	{0},
};
static const struct cli_opt *const analyze_opts[] = {analyze_own, NULL};

/* 0 to run, else the exit status (1: out of memory, 2: usage error). */
static int parse_args(int argc, char **argv, struct an_opts *o)
{
	struct option longs[8];
	char shortopts[16];
	int opt;
	o->files = calloc((size_t)argc, sizeof(char *));
	if (!o->files)
		return 1;
	cli_getopt_tables(analyze_opts, shortopts, sizeof(shortopts), longs, 8);
	optind = 1;
	while ((opt = getopt_long(argc, argv, shortopts, longs, NULL)) != -1) {
		if (opt == 'j')
			o->json = true;
		else if (opt == OPT_ARCH)
			o->arch = optarg;
		else
			return cli_bad_option(opt, argv, analyze_opts);
	}
	while (optind < argc)
		o->files[o->nfiles++] = argv[optind++];
	if (!o->nfiles)
		cli_error("which files? nanoprobe analyze [OPTIONS] ELF...");
	return o->nfiles ? 0 : 2;
}

/* ------------------------------------------------------------------ */
/* Files                                                                */

static const struct np_isa *isa_for(int machine, const char *want, char *err, size_t len)
{
	for (size_t i = 0; i < AN_NISAS; i++) {
		if (an_isas[i].machine != (unsigned)machine)
			continue;
		if (want && strcmp(want, an_isas[i].name)) {
			snprintf(err, len, "is %s, not %s", an_isas[i].name, want);
			return NULL;
		}
		if (!an_isas[i].isa)
			snprintf(err, len, "%s: this build has no %s ISA layer", an_isas[i].name,
				 an_isas[i].name);
		return an_isas[i].isa;
	}
	snprintf(err, len, "e_machine %d is none of x86_64, arm64, riscv64", machine);
	return NULL;
}

static void read_exec_sections(Elf *e, struct an_layout *l)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) && l->nexec < 16) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		l->exec_lo[l->nexec] = sh.sh_addr;
		l->exec_hi[l->nexec++] = sh.sh_addr + sh.sh_size;
	}
}

/* Trampoline places: a page below the first PT_LOAD, the page after the
 * last one's end; and the executable sections. */
static int read_layout(const char *path, struct an_layout *l)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	size_t n;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (fd < 0)
		return -errno;
	l->nexec = 0;
	l->far = 0;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e)
		read_exec_sections(e, l);
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
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
	l->below = (lo & ~0xfffull) - 0x1000;
	l->above = (hi + 0xfff) & ~0xfffull;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

static void print_regs(FILE *out, const struct np_isa *isa, uint64_t regs, bool json)
{
	bool first = true;

	fputs(json ? "[" : "", out);
	for (unsigned r = 0; r < NP_NGPR; r++) {
		if (!(regs >> r & 1) || !isa->reg_names[r])
			continue;
		fprintf(out, json ? "%s\"%s\"" : "%s%s", first ? "" : ",", isa->reg_names[r]);
		first = false;
	}
	fputs(json ? "]" : first ? "-" : "", out);
}

static void print_site(FILE *out, const struct np_isa *isa, const struct np_sym *fn,
		       const struct an_site *s, bool json)
{
	uint64_t off = s->pc - fn->addr;

	if (!json) {
		printf("  0x%-12" PRIx64 " %s+0x%" PRIx64 "\t%s%s%s\tfree=", s->pc, fn->name, off,
		       an_kind_names[s->kind], s->form ? " " : "", s->form ? s->form : "");
		print_regs(out, isa, s->free_in, false);
		printf(s->kind == AN_JUMP ? "\n" : "\t%s\n", s->why);
		return;
	}
	printf("{\"type\":\"site\",\"addr\":\"0x%" PRIx64 "\",\"function\":", s->pc);
	quote_json(out, fn->name);
	printf(",\"offset\":%" PRIu64 ",\"entry\":%s,\"strategy\":\"%s\",\"form\":", off,
	       off ? "false" : "true", an_kind_names[s->kind]);
	if (s->form)
		quote_json(out, s->form);
	else
		fputs("null", out);
	fputs(",\"free\":", out);
	print_regs(out, isa, s->free_in, true);
	fputs(",\"why\":", out);
	if (s->kind == AN_JUMP)
		fputs("null", out);
	else
		quote_json(out, s->why);
	fprintf(out, ",\"trap_back\":%s}\n", s->trap_back ? "true" : "false");
}

/* Reasons are counted with their addresses blanked, so alike ones fold. */
static void count_reason(struct an_stats *st, const char *why)
{
	char key[96];
	size_t n = 0;

	for (const char *p = why; *p && n + 1 < sizeof(key); p++) {
		if (p[0] == '0' && p[1] == 'x') {
			for (p += 2; p[1] && strchr("0123456789abcdef", p[1]); p++)
				;
			n += (size_t)snprintf(key + n, sizeof(key) - n, "ADDR");
			n = n < sizeof(key) ? n : sizeof(key) - 1;
			continue;
		}
		key[n++] = *p;
	}
	key[n] = '\0';
	for (size_t i = 0; i < st->nreasons; i++)
		if (!strcmp(st->reasons[i].text, key)) {
			st->reasons[i].n++;
			return;
		}
	if (st->nreasons == AN_NREASONS) {
		st->other_reasons++;
		return;
	}
	snprintf(st->reasons[st->nreasons].text, sizeof(st->reasons[0].text), "%s", key);
	st->reasons[st->nreasons++].n = 1;
}

static void count_site(struct an_stats *st, const struct an_site *s, bool entry)
{
	st->sites++;
	st->kind[s->kind]++;
	st->jump_short += s->kind == AN_JUMP && s->form && strcmp(s->form, "auipc+jalr") &&
			  strcmp(s->form, "adrp+add+br");
	st->trap_back += s->trap_back;
	st->one_free += s->free_in != 0;
	st->one_free_plain += s->free_plain != 0;
	st->both_free += s->free_in && s->free_back;
	if (entry) {
		st->entries++;
		st->entries_free += s->kind == AN_JUMP;
	}
	if (s->kind != AN_JUMP)
		count_reason(st, s->why);
}

static double pct(size_t n, size_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0.0;
}

static int by_count(const void *a, const void *b)
{
	size_t x = *(const size_t *)((const char *)a + 96), y = *(const size_t *)((const char *)b + 96);

	return x < y ? 1 : x > y ? -1 : 0;
}

static void print_summary_text(const char *path, const struct np_isa *isa, struct an_stats *st)
{
	size_t jl = st->kind[AN_JUMP] - st->jump_short;
	bool regs = isa->reg_use != NULL;

	printf("\n%s: %s, %zu functions, %zu instruction sites, %zu function entries\n", path,
	       isa->name, st->functions, st->sites, st->entries);
	printf("  %-40s %9s %8s   %s\n", "", "sites", "share", "003_2060ca1e897bea36 (riscv64 kernel)");
	if (regs) {
		printf("  %-40s %9zu %7.1f%%   68.3%%\n", "one free register at the site", st->one_free,
		       pct(st->one_free, st->sites));
		printf("  %-40s %9zu %7.1f%%\n", "  by liveness alone (no convention)",
		       st->one_free_plain, pct(st->one_free_plain, st->sites));
		printf("  %-40s %9zu %7.1f%%   51%%\n",
		       strcmp(isa->name, "arm64") ? "free registers both ways (8-byte patch)"
						  : "free registers both ways (12-byte patch)",
		       st->both_free, pct(st->both_free, st->sites));
	}
	printf("  %-40s %9zu %7.1f%%\n", "trap-free (JUMP)", st->kind[AN_JUMP],
	       pct(st->kind[AN_JUMP], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "  JUMP, short form", st->jump_short,
	       pct(st->jump_short, st->sites));
	if (isa->emit_jump_via) {
		char label[64];
		snprintf(label, sizeof(label), "  JUMP, %s (a free register)", an_long_form(isa));
		printf("  %-40s %9zu %7.1f%%\n", label, jl, pct(jl, st->sites));
	}
	printf("  %-40s %9zu %7.1f%%\n", "TRAP simulated", st->kind[AN_TRAP_SIM],
	       pct(st->kind[AN_TRAP_SIM], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "TRAP out of line", st->kind[AN_TRAP_OOL],
	       pct(st->kind[AN_TRAP_OOL], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "  back by a second trap", st->trap_back,
	       pct(st->trap_back, st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "rejected", st->kind[AN_REJECT],
	       pct(st->kind[AN_REJECT], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "function entries trap-free", st->entries_free,
	       pct(st->entries_free, st->entries));
	if (regs && st->sum.functions) {
		printf("  %-40s %9zu %7.1f%%\n", "functions the module calls directly",
		       st->sum.entered, pct(st->sum.entered, st->sum.functions));
		printf("  %-40s %9zu\n", "direct transfers to unknown code", st->sum.unknown_targets);
	}
	qsort(st->reasons, st->nreasons, sizeof(st->reasons[0]), by_count);
	printf("  why not JUMP (sites, reason):\n");
	for (size_t i = 0; i < st->nreasons && i < 12; i++)
		printf("  %9zu  %s\n", st->reasons[i].n, st->reasons[i].text);
}

static void print_share(const char *name, size_t n, size_t of, bool last)
{
	printf("\"%s\":%.4f%s", name, of ? (double)n / (double)of : 0.0, last ? "" : ",");
}

static void print_summary_json(const char *path, const struct np_isa *isa,
			       const struct an_stats *st)
{
	bool regs = isa->reg_use != NULL;

	fputs("{\"type\":\"summary\",\"file\":", stdout);
	quote_json(stdout, path);
	printf(",\"arch\":\"%s\",\"functions\":%zu,\"sites\":%zu,\"entries\":%zu,\"counts\":{",
	       isa->name, st->functions, st->sites, st->entries);
	printf("\"jump\":%zu,\"jump_short\":%zu,\"jump_long\":%zu,\"trap_simulated\":%zu,"
	       "\"trap_out_of_line\":%zu,\"rejected\":%zu,\"entries_trap_free\":%zu,"
	       "\"trap_back\":%zu",
	       st->kind[AN_JUMP], st->jump_short, st->kind[AN_JUMP] - st->jump_short,
	       st->kind[AN_TRAP_SIM], st->kind[AN_TRAP_OOL], st->kind[AN_REJECT], st->entries_free,
	       st->trap_back);
	if (regs)
		printf(",\"one_free_register\":%zu,\"one_free_register_liveness\":%zu,"
		       "\"free_both_ways\":%zu,\"functions_called_directly\":%zu,"
		       "\"unknown_direct_targets\":%zu",
		       st->one_free, st->one_free_plain, st->both_free, st->sum.entered,
		       st->sum.unknown_targets);
	fputs("},\"shares\":{", stdout);
	if (regs) {
		print_share("one_free_register", st->one_free, st->sites, false);
		print_share("one_free_register_liveness", st->one_free_plain, st->sites, false);
		print_share("free_both_ways", st->both_free, st->sites, false);
	}
	print_share("trap_free", st->kind[AN_JUMP], st->sites, false);
	print_share("entries_trap_free", st->entries_free, st->entries, true);
	printf("},\"paper\":{\"one_free_register\":0.683,\"free_both_ways\":0.51}}\n");
}

/* ------------------------------------------------------------------ */
/* Functions and files                                                  */

#define AN_MAX_FN (4u << 20) /* bytes of one function analysed at most */

/* Jump tables are read from the file. */
static int file_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	return np_symtab_read(cookie, addr, dst, len) ? -EFAULT : 0;
}

/* The end of the executable section holding addr (limit when none is known). */
static uint64_t section_end(const struct an_layout *l, uint64_t addr, uint64_t limit)
{
	for (unsigned i = 0; i < l->nexec; i++)
		if (addr >= l->exec_lo[i] && addr < l->exec_hi[i])
			return l->exec_hi[i] < limit ? l->exec_hi[i] : limit;
	return limit;
}

/* The bytes of fn analysed: [fn->addr, *end) its body, up to *limit its
 * padding, within its executable section and AN_MAX_FN. */
static void fn_bounds(const struct np_symtab *st, const struct an_layout *l,
		      const struct np_sym *fn, uint64_t *end, uint64_t *limit)
{
	*limit = section_end(l, fn->addr, np_symtab_limit(st, fn));
	*end = fn->size ? fn->addr + fn->size : *limit;
	*end = *end < *limit ? *end : *limit;
	*limit = *limit - fn->addr > AN_MAX_FN ? fn->addr + AN_MAX_FN : *limit;
	*end = *end < *limit ? *end : *limit;
}

/* Only a named function is known to be entered by calls: code that only
 * .eh_frame knows may be a .cold part, which a jump enters with the
 * caller's registers live. */
static bool fn_called(const struct np_sym *fn)
{
	return fn->source != NP_SYM_EHFRAME && !strstr(fn->name, ".cold");
}

static int analyze_function(const struct np_symtab *st, const struct np_isa *isa,
			    const struct an_layout *l, const struct np_regsum *rs,
			    const struct np_sym *fn, bool json, struct an_stats *stats)
{
	uint64_t limit, end;
	struct an_func f;
	struct np_freereg_env env;
	uint8_t *code;
	int err;

	fn_bounds(st, l, fn, &end, &limit);
	if (end <= fn->addr || !(code = malloc(limit - fn->addr)))
		return end <= fn->addr ? 0 : -ENOMEM;
	if (np_symtab_read(st, fn->addr, code, limit - fn->addr))
		limit = end; /* the padding is not in the file: the body only */
	if (limit == end && np_symtab_read(st, fn->addr, code, end - fn->addr)) {
		free(code);
		return 0; /* no bytes in the file (.bss-like): nothing to probe */
	}
	struct np_mem mem = {file_read, NULL, (void *)st};

	if (rs)
		np_regsum_env(rs, fn->addr, fn_called(fn), &env);
	if ((err = an_func_init(&f, isa, l, code, fn->addr, end, limit, &mem, fn_called(fn),
				rs ? &env : NULL))) {
		free(code);
		return err;
	}
	stats->functions++;
	for (uint64_t pc = fn->addr; pc < end;) {
		struct an_site s;

		an_plan_site(&f, pc, &s);
		print_site(stdout, isa, fn, &s, json);
		count_site(stats, &s, pc == fn->addr);
		pc += s.len ? s.len : (isa->insn_align ? isa->insn_align : 1);
	}
	an_func_free(&f);
	free(code);
	return 0;
}

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
static int add_gaps(const struct np_symtab *st, const struct an_layout *l, struct np_regsum *rs,
		    struct span *fn, size_t n)
{
	int err = 0;

	qsort(fn, n, sizeof(*fn), by_lo);
	for (unsigned k = 0; k < l->nexec && !err; k++) {
		uint64_t at = l->exec_lo[k];
		for (size_t i = 0; i < n && !err && at < l->exec_hi[k]; i++) {
			if (fn[i].hi <= at || fn[i].lo >= l->exec_hi[k])
				continue;
			if (fn[i].lo > at)
				err = add_bytes(st, rs, at, fn[i].lo, true);
			at = fn[i].hi > at ? fn[i].hi : at;
		}
		if (!err && at < l->exec_hi[k])
			err = add_bytes(st, rs, at, l->exec_hi[k], true);
	}
	return err;
}

/* Every function of the file once, for what each may write and which
 * are reached directly (src/arch/regsum.h), and the code between them;
 * NULL when the ISA has no register table or memory runs out. */
static struct np_regsum *summarise(const struct np_symtab *st, const struct np_isa *isa,
				   const struct an_layout *l)
{
	struct np_regsum *rs = l->nexec < 16 ? np_regsum_new(isa) : NULL; /* else some unseen */
	struct span *fn = calloc(st->n + 1, sizeof(*fn));
	size_t n = 0;
	int err = rs && fn ? 0 : -ENOMEM;

	if (!err)
		add_stub_sections(st->path, rs);
	for (size_t i = 0; i < st->n && !err; i++) {
		const struct np_sym *f = &st->syms[i];
		uint64_t end, limit;

		if (i && f->addr == st->syms[i - 1].addr)
			continue;
		fn_bounds(st, l, f, &end, &limit);
		if (end <= f->addr)
			continue;
		fn[n++] = (struct span){f->addr, end};
		err = add_bytes(st, rs, f->addr, end, false);
	}
	if (!err)
		err = add_gaps(st, l, rs, fn, n);
	free(fn);
	if (err || np_regsum_finish(rs)) {
		np_regsum_free(rs);
		return NULL;
	}
	return rs;
}

static int analyze_file(const char *path, const struct an_opts *o)
{
	struct np_symtab st;
	struct an_layout l;
	struct an_stats *stats;
	struct np_regsum *rs;
	const struct np_isa *isa;
	char err[256] = "";
	int rc = 0;

	if (np_symtab_load(path, &st, err, sizeof(err))) {
		cli_error("%s: %s", path, err);
		return 1;
	}
	isa = isa_for(st.machine, o->arch, err, sizeof(err));
	if (!isa || read_layout(st.path, &l) || !(stats = calloc(1, sizeof(*stats)))) {
		cli_error("%s: %s", path, isa ? "cannot read its segments" : err);
		np_symtab_free(&st);
		return 1;
	}
	if (!o->json)
		printf("%s (%s)\n", st.path, isa->name);
	rs = summarise(&st, isa, &l);
	if (rs)
		np_regsum_stats(rs, &stats->sum);
	for (size_t i = 0; i < st.n && !rc; i++)
		if (i == 0 || st.syms[i].addr != st.syms[i - 1].addr)
			rc = analyze_function(&st, isa, &l, rs, &st.syms[i], o->json, stats);
	np_regsum_free(rs);
	if (o->json)
		print_summary_json(st.path, isa, stats);
	else
		print_summary_text(st.path, isa, stats);
	free(stats);
	np_symtab_free(&st);
	return rc ? 1 : 0;
}

int cmd_analyze(int argc, char **argv)
{
	struct an_opts o = {0};
	int rc = parse_args(argc, argv, &o), status = 0;

	if (rc) {
		free(o.files);
		return rc;
	}
	if (o.arch && strcmp(o.arch, "x86_64") && strcmp(o.arch, "arm64") && strcmp(o.arch, "riscv64")) {
		cli_error("--arch is x86_64, arm64 or riscv64, not '%s'", o.arch);
		free(o.files);
		return 2;
	}
	elf_version(EV_CURRENT);
	for (int i = 0; i < o.nfiles; i++)
		status |= analyze_file(o.files[i], &o);
	free(o.files);
	return status;
}

const struct cli_verb verb_analyze = {
	"analyze", cmd_analyze, "analyze [OPTIONS] ELF...",
	"the probe strategy of every site in ELF files, and a summary",
	"For every function entry and instruction of each ELF file, of any ISA this build\n"
	"has a layer for: the strategy, why it is not JUMP, the free registers; then the\n"
	"share of sites with a free register, trap-free sites and function entries.\n",
	analyze_opts,
};

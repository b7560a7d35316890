/* SPDX-License-Identifier: MIT */
/*
 * `nanoprobe analyze [--arch x86_64|arm64|riscv64] [-j] ELF...`
 *
 * How much of a real binary can be probed without a trap. For every
 * function (the symbols `list` shows) and every instruction boundary in
 * it: the strategy a probe there would get (JUMP and its form, TRAP
 * simulated, TRAP out of line with a jump back or a second trap,
 * rejected) and why it is not JUMP, then a summary in the terms of the
 * riscv64 kernel's optimized-kprobe patch set (a detour through auipc+jalr
 * with a register found free by a forward scan), whose figures on a
 * riscv64 kernel are printed beside ours: the share of sites with one free register (68.3% there),
 * the share with a free register both at the site and where an
 * auipc+jalr patch's jump back lands (51% there), the share that is
 * trap-free, and the share of function entries that are.
 *
 * It runs on any host for any ISA with a pure layer in this build: the
 * planning is the engine's planner (src/plan/) over the file's bytes
 * (plan_file.c); this file counts and prints. --arch names the ISA a file
 * must be; by default each file's e_machine picks it.
 */
#include "arch/regsum.h"
#include "output/quote.h"
#include "symbols/plan_file.h"
#include "symbols/symtab.h"

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

/* enum np_site_kind's names */
static const char *const an_kind_names[] = {"jump", "trap-simulated", "trap-out-of-line",
					    "rejected"};
#define AN_NKINDS (sizeof(an_kind_names) / sizeof(an_kind_names[0]))
#define LONG_JUMP_LEN 8 /* auipc+jalr: the riscv64 kernel optprobes' patch, for the figures */
/* that patch set's coverage of a riscv64 kernel: one free register at the
 * site, and one free both there and where the jump back lands */
#define OPTPROBES_FIGURES "{\"one_free_register\":0.683,\"free_both_ways\":0.51}"

struct an_opts {
	bool json;
	const char *arch;
	char **files;
	int nfiles;
};

#define AN_NREASONS 48

struct an_stats {
	size_t functions, sites, entries;
	size_t kind[AN_NKINDS], jump_short, jump_hop, one_free, one_free_plain, both_free;
	size_t entries_free;
	/* first instructions of code entered mid-frame (a .cold part, _start):
	 * no call enters them, so they are not counted as entries */
	size_t fragments, fragments_free;
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

/* One site as printed and counted: its plan, and the registers around it. */
struct an_site {
	struct np_site_plan p;
	const char *form;    /* JUMP's form */
	uint64_t free_in;    /* registers free at the site */
	uint64_t free_back;  /* free where a long patch's jump back lands */
	uint64_t free_plain; /* free at the site by liveness alone */
};

static void print_site(FILE *out, const struct np_isa *isa, const struct np_sym *fn,
		       const struct an_site *s, bool json)
{
	uint64_t off = s->p.pc - fn->addr;

	if (!json) {
		printf("  0x%-12" PRIx64 " %s+0x%" PRIx64 "\t%s%s%s\tfree=", s->p.pc, fn->name, off,
		       an_kind_names[s->p.kind], s->form ? " " : "", s->form ? s->form : "");
		print_regs(out, isa, s->free_in, false);
		printf(s->p.kind == NP_SITE_JUMP ? "\n" : "\t%s\n", s->p.why);
		return;
	}
	printf("{\"type\":\"site\",\"addr\":\"0x%" PRIx64 "\",\"function\":", s->p.pc);
	quote_json(out, fn->name);
	printf(",\"offset\":%" PRIu64 ",\"entry\":%s,", off,
	       !off && fn->entry == NP_ENTRY_CALL ? "true" : "false");
	if (!off && fn->entry == NP_ENTRY_MID_FRAME)
		fputs("\"fragment\":true,", out);
	printf("\"strategy\":\"%s\",\"form\":", an_kind_names[s->p.kind]);
	if (s->form)
		quote_json(out, s->form);
	else
		fputs("null", out);
	fputs(",\"free\":", out);
	print_regs(out, isa, s->free_in, true);
	fputs(",\"why\":", out);
	if (s->p.kind == NP_SITE_JUMP)
		fputs("null", out);
	else
		quote_json(out, s->p.why);
	fprintf(out, ",\"trap_back\":%s}\n", s->p.trap_back ? "true" : "false");
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

/* first: the site is the function's first instruction */
static void count_site(struct an_stats *st, const struct an_site *s, const struct np_sym *fn,
		       bool first)
{
	st->sites++;
	st->kind[s->p.kind]++;
	st->jump_short += s->p.kind == NP_SITE_JUMP && s->p.plan.form == NP_JUMP_SHORT;
	st->jump_hop += s->p.kind == NP_SITE_JUMP && s->p.plan.form == NP_JUMP_HOP;
	st->trap_back += s->p.trap_back;
	st->one_free += s->free_in != 0;
	st->one_free_plain += s->free_plain != 0;
	st->both_free += s->free_in && s->free_back;
	if (first && fn->entry == NP_ENTRY_CALL) {
		st->entries++;
		st->entries_free += s->p.kind == NP_SITE_JUMP;
	} else if (first && fn->entry == NP_ENTRY_MID_FRAME) {
		st->fragments++;
		st->fragments_free += s->p.kind == NP_SITE_JUMP;
	}
	if (s->p.kind != NP_SITE_JUMP)
		count_reason(st, s->p.why);
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
	size_t jl = st->kind[NP_SITE_JUMP] - st->jump_short - st->jump_hop;
	bool regs = isa->reg_use != NULL;

	printf("\n%s: %s, %zu functions, %zu instruction sites, %zu function entries\n", path,
	       isa->name, st->functions, st->sites, st->entries);
	printf("  %-40s %9s %8s   %s\n", "", "sites", "share", "riscv64 optprobes (kernel)");
	if (regs) {
		printf("  %-40s %9zu %7.1f%%   68.3%%\n", "one free register at the site", st->one_free,
		       pct(st->one_free, st->sites));
		printf("  %-40s %9zu %7.1f%%\n", "  by liveness alone (no convention)",
		       st->one_free_plain, pct(st->one_free_plain, st->sites));
		char label[64];
		unsigned patch = np_plan_long_len(isa, 0);
		snprintf(label, sizeof(label), "free registers both ways (%u-byte patch)",
			 patch ? patch : LONG_JUMP_LEN);
		printf("  %-40s %9zu %7.1f%%   51%%\n", label, st->both_free,
		       pct(st->both_free, st->sites));
	}
	printf("  %-40s %9zu %7.1f%%\n", "trap-free (JUMP)", st->kind[NP_SITE_JUMP],
	       pct(st->kind[NP_SITE_JUMP], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "  JUMP, short form", st->jump_short,
	       pct(st->jump_short, st->sites));
	if (isa->emit_jump_via) {
		char label[64];
		snprintf(label, sizeof(label), "  JUMP, %s (a free register)", isa->jump_via_name);
		printf("  %-40s %9zu %7.1f%%\n", label, jl, pct(jl, st->sites));
	}
	if (isa->emit_hop) {
		char label[64];
		snprintf(label, sizeof(label), "  JUMP, %s", isa->hop_name);
		printf("  %-40s %9zu %7.1f%%\n", label, st->jump_hop, pct(st->jump_hop, st->sites));
	}
	printf("  %-40s %9zu %7.1f%%\n", "TRAP simulated", st->kind[NP_SITE_TRAP_SIM],
	       pct(st->kind[NP_SITE_TRAP_SIM], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "TRAP out of line", st->kind[NP_SITE_TRAP_OOL],
	       pct(st->kind[NP_SITE_TRAP_OOL], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "  back by a second trap", st->trap_back,
	       pct(st->trap_back, st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "rejected", st->kind[NP_SITE_REFUSED],
	       pct(st->kind[NP_SITE_REFUSED], st->sites));
	printf("  %-40s %9zu %7.1f%%\n", "function entries trap-free", st->entries_free,
	       pct(st->entries_free, st->entries));
	if (st->fragments)
		printf("  %-40s %9zu %7.1f%%   of %zu\n", "fragment starts trap-free (.cold)",
		       st->fragments_free, pct(st->fragments_free, st->fragments), st->fragments);
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
	printf("\"jump\":%zu,\"jump_short\":%zu,\"jump_long\":%zu,\"jump_hop\":%zu,"
	       "\"trap_simulated\":%zu,"
	       "\"trap_out_of_line\":%zu,\"rejected\":%zu,\"entries_trap_free\":%zu,"
	       "\"trap_back\":%zu,\"fragments\":%zu,\"fragments_trap_free\":%zu",
	       st->kind[NP_SITE_JUMP], st->jump_short,
	       st->kind[NP_SITE_JUMP] - st->jump_short - st->jump_hop, st->jump_hop,
	       st->kind[NP_SITE_TRAP_SIM], st->kind[NP_SITE_TRAP_OOL], st->kind[NP_SITE_REFUSED], st->entries_free,
	       st->trap_back, st->fragments, st->fragments_free);
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
	print_share("trap_free", st->kind[NP_SITE_JUMP], st->sites, false);
	print_share("entries_trap_free", st->entries_free, st->entries, true);
	/* "paper": the same figures under the name the first readers of
	 * this line were given */
	printf("},\"riscv64_optprobes\":%s,\"paper\":%s}\n", OPTPROBES_FIGURES, OPTPROBES_FIGURES);
}

/* ------------------------------------------------------------------ */
/* Functions and files                                                  */

/* The first instruction boundary at or after pc + need (the jump back of
 * a patch of that size lands there), 0 when the bytes do not decode. */
static uint64_t boundary_after(const struct np_fn_view *v, uint64_t pc, unsigned need)
{
	uint64_t at = pc;
	struct np_insn in;
	while (at < pc + need)
		if (np_fn_view_decode(v, at, &in))
			return 0;
		else
			at += in.len;
	return at;
}

/* Liveness alone, as the riscv64 kernel optprobes' scan sees it: the
 * entry convention left out. */
static bool analyse_plain(const struct np_fn_view *v, struct np_freereg *plain)
{
	if (!v->have_fr)
		return false;
	size_t len = v->fb.end - v->base < v->len ? v->fb.end - v->base : v->len;
	return np_freereg_analyse(v->isa, v->code, len, v->base, 0, v->have_env ? &v->env : NULL,
				  plain) == 0;
}

static int analyze_function(struct plan_file *pf, const struct np_sym *fn, bool json,
			    struct an_stats *stats)
{
	const struct np_isa *isa = pf->isa;
	struct np_fn_view v;
	struct np_freereg plain;
	int err = plan_file_view(pf, fn, NP_VIEW_MODULE | NP_VIEW_REGISTERS, &v);
	if (err) {
		np_fn_view_free(&v);
		return err == -ENOENT ? 0 : err;
	}
	bool have_plain = analyse_plain(&v, &plain);
	stats->functions++;
	for (uint64_t pc = fn->addr; pc < v.fb.end;) {
		struct an_site s;
		unsigned patch = np_plan_long_len(isa, pc);
		plan_file_site(pf, &v, pc, &s.p);
		s.form = s.p.kind == NP_SITE_JUMP ? np_plan_form_name(isa, s.p.plan.form) : NULL;
		s.free_in = np_fn_view_free_at(&v, pc);
		s.free_plain = have_plain ? np_freereg_at(&plain, pc) : 0;
		s.free_back = np_fn_view_free_at(
			&v, boundary_after(&v, pc, patch ? patch : LONG_JUMP_LEN));
		print_site(stdout, isa, fn, &s, json);
		count_site(stats, &s, fn, pc == fn->addr);
		pc += s.p.len ? s.p.len : (isa->insn_align ? isa->insn_align : 1);
	}
	if (have_plain)
		np_freereg_release(&plain);
	np_fn_view_free(&v);
	return 0;
}

static int analyze_file(const char *path, const struct an_opts *o)
{
	struct np_symtab st;
	struct plan_file pf;
	struct an_stats *stats = NULL;
	const struct np_regsum *rs;
	const struct np_isa *isa;
	char err[256] = "";
	int rc = 0;

	if (np_symtab_load(path, &st, err, sizeof(err))) {
		cli_error("%s: %s", path, err);
		return 1;
	}
	isa = plan_file_isa(st.machine, o->arch, err, sizeof(err));
	if (!isa || plan_file_open(&pf, &st, isa) || !(stats = calloc(1, sizeof(*stats)))) {
		cli_error("%s: %s", path, isa ? "cannot read its segments" : err);
		if (isa)
			plan_file_close(&pf);
		np_symtab_free(&st);
		return 1;
	}
	if (!o->json)
		printf("%s (%s)\n", st.path, isa->name);
	rs = plan_file_module(&pf);
	if (rs)
		np_regsum_stats(rs, &stats->sum);
	for (size_t i = 0; i < st.n && !rc; i++)
		if (i == 0 || st.syms[i].addr != st.syms[i - 1].addr)
			rc = analyze_function(&pf, &st.syms[i], o->json, stats);
	if (o->json)
		print_summary_json(st.path, isa, stats);
	else
		print_summary_text(st.path, isa, stats);
	free(stats);
	plan_file_close(&pf);
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
		cli_error("--arch is %s, not '%s'", plan_file_isa_names(), o.arch);
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

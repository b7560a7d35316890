/* SPDX-License-Identifier: MIT */
/*
 * Output as bpftrace 0.17 prints it, text or JSON (-f json): maps at the
 * end in name order, `@name[key]: value`, hist() and lhist() with their
 * bucket labels and 52-column bars, stats() and avg(), printf, print(),
 * time(). Stacks and symbols are named here, by the command, demangled.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "runtime.h"

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s ? s : strdup("");
}

/* bpftrace's usym: the function alone; its ustack frames: func+offset.
 * Each is named with the mappings of the process it was taken in, else
 * (a process that never joined, BEGIN's) the first process's. */
static struct symbolizer *sym_of(const struct script_rt *rt, pid_t pid)
{
	for (size_t i = 0; pid && i < rt->nsyms; i++)
		if (rt->syms[i].pid == pid)
			return rt->syms[i].sym;
	return rt->sym;
}

static char *sym_in(struct symbolizer *s, uint64_t addr, bool offset)
{
	uint64_t off = 0;
	const char *fn = s ? symbolize_fn(s, addr, &off) : NULL;
	if (!fn)
		return dupf("0x%llx", (unsigned long long)addr);
	return offset ? dupf("%s+%llu", fn, (unsigned long long)off) : dupf("%s", fn);
}

/* VM_USTACK's: the count, the process's pid above it, the frames. */
static char *stack_text(struct script_rt *rt, const uint8_t *p, int indent)
{
	uint64_t n;
	memcpy(&n, p, 8);
	struct symbolizer *sym = sym_of(rt, (pid_t)(n >> 32));
	n &= 0xffffffffu;
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return strdup("");
	fputc('\n', f);
	for (uint64_t i = 0; i < n && i < NP_VM_MAX_FRAMES; i++) {
		uint64_t a;
		memcpy(&a, p + 8 + 8 * i, 8);
		if (!a)
			break;
		char *t = sym_in(sym, a, true);
		fprintf(f, "%*s%s\n", indent, "", t);
		free(t);
	}
	fclose(f);
	return s;
}

static char *buf_text(const uint8_t *p)
{
	unsigned n = p[0];
	char *s = malloc(4u * n + 1), *o = s;
	if (!s)
		return strdup("");
	for (unsigned i = 0; i < n; i++) {
		unsigned char c = p[8 + i];
		if (c >= 32 && c < 127)
			*o++ = (char)c;
		else
			o += sprintf(o, "\\x%02x", c);
	}
	*o = 0;
	return s;
}

char *value_text(struct script_rt *rt, const struct type *t, const uint8_t *p, int indent)
{
	uint64_t v;
	memcpy(&v, p, 8);
	switch (t->t) {
	case T_INT:
		return t->is_signed ? dupf("%lld", (long long)v) : dupf("%llu", (unsigned long long)v);
	case T_STR:
		return dupf("%.*s", (int)strnlen((const char *)p, NP_VM_STR), (const char *)p);
	case T_USYM: {
		uint64_t pid;
		memcpy(&pid, p + 8, 8);
		return sym_in(sym_of(rt, (pid_t)pid), v, false);
	}
	case T_FUNC:
		return strdup(v < rt->nids && rt->func_names[v] ? rt->func_names[v] : "");
	case T_PROBE:
		return strdup(v < rt->nids && rt->probe_names[v] ? rt->probe_names[v] : "");
	case T_USTACK:
		return stack_text(rt, p, indent);
	case T_BUF:
		return buf_text(p);
	case T_NONE:
		break;
	}
	return strdup("");
}

static bool quoted(const struct type *t)
{
	return t->t != T_INT;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* --- keys ------------------------------------------------------------------- */

/* "[k1, k2]" (text) or "k1,k2" (JSON); "" for a map without keys. */
static char *key_text(struct script_rt *rt, const struct map_info *mi, const uint8_t *key)
{
	if (mi->nkeys <= 0)
		return strdup("");
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return strdup("");
	fputs(rt->json ? "" : "[", f);
	uint32_t pos = 0;
	for (int k = 0; k < mi->nkeys; k++) {
		char *t = value_text(rt, &mi->keys[k], key + pos, 4);
		fprintf(f, "%s%s", k ? (rt->json ? "," : ", ") : "", t);
		free(t);
		pos += type_size(&mi->keys[k]);
	}
	fputs(rt->json ? "" : "]", f);
	fclose(f);
	return s;
}

/* --- histograms ------------------------------------------------------------- */

static void hist_label(char *out, size_t n, int power)
{
	const char *suffix = "";
	if (power >= 40) {
		suffix = "T";
		power -= 40;
	} else if (power >= 30) {
		suffix = "G";
		power -= 30;
	} else if (power >= 20) {
		suffix = "M";
		power -= 20;
	} else if (power >= 10) {
		suffix = "K";
		power -= 10;
	}
	snprintf(out, n, "%d%s", 1 << power, suffix);
}

static void lhist_label(char *out, size_t n, long long v)
{
	if (v == 0)
		snprintf(out, n, "0");
	else if (v % 1048576 == 0)
		snprintf(out, n, "%lldM", v / 1048576);
	else if (v % 1024 == 0)
		snprintf(out, n, "%lldK", v / 1024);
	else
		snprintf(out, n, "%lld", v);
}

static void bar_line(FILE *f, const char *label, uint64_t v, uint64_t shown, uint64_t max)
{
	int width = max ? (int)((float)v / (float)max * 52.0f) : 0;
	fprintf(f, "%-16s%8llu |", label, (unsigned long long)shown);
	for (int i = 0; i < 52; i++)
		fputc(i < width ? '@' : ' ', f);
	fputs("|\n", f);
}

static void hist_text(FILE *f, const uint64_t *b, uint64_t div)
{
	int lo = -1, hi = -1;
	uint64_t max = 0;
	for (int i = 0; i < NP_VM_HIST_SLOTS; i++) {
		if (b[i]) {
			lo = lo < 0 ? i : lo;
			hi = i;
		}
		max = b[i] > max ? b[i] : max;
	}
	for (int i = lo; lo >= 0 && i <= hi; i++) {
		char label[64], a[16], c[16];
		if (i == 0) {
			snprintf(label, sizeof(label), "(..., 0)");
		} else if (i == 1) {
			snprintf(label, sizeof(label), "[0]");
		} else if (i == 2) {
			snprintf(label, sizeof(label), "[1]");
		} else {
			hist_label(a, sizeof(a), i - 2);
			hist_label(c, sizeof(c), i - 1);
			snprintf(label, sizeof(label), "[%s, %s)", a, c);
		}
		bar_line(f, label, b[i], b[i] / div, max);
	}
}

static void hist_json(FILE *f, const uint64_t *b, uint64_t div)
{
	bool first = true;
	int lo = -1, hi = -1;
	for (int i = 0; i < NP_VM_HIST_SLOTS; i++)
		if (b[i]) {
			lo = lo < 0 ? i : lo;
			hi = i;
		}
	fputc('[', f);
	for (int i = lo; lo >= 0 && i <= hi; i++) {
		fputs(first ? "{" : ", {", f);
		first = false;
		if (i == 0)
			fputs("\"max\": -1, ", f);
		else if (i == 1)
			fputs("\"min\": 0, \"max\": 0, ", f);
		else if (i == 2)
			fputs("\"min\": 1, \"max\": 1, ", f);
		else
			fprintf(f, "\"min\": %lld, \"max\": %lld, ", 1ll << (i - 2), (1ll << (i - 1)) - 1);
		fprintf(f, "\"count\": %llu}", (unsigned long long)(b[i] / div));
	}
	fputc(']', f);
}

static void lhist_bounds(const struct np_vm_map *m, const uint64_t *b, int *lo, int *hi)
{
	int n = (int)np_vm_agg_words(m);
	*lo = *hi = -1;
	for (int i = 0; i < n; i++)
		if (b[i]) {
			*lo = *lo < 0 ? i : *lo;
			*hi = i;
		}
}

static void lhist_text(FILE *f, const struct np_vm_map *m, const uint64_t *b)
{
	int lo, hi, buckets = (int)((m->lmax - m->lmin) / m->lstep);
	uint64_t max = 0;
	lhist_bounds(m, b, &lo, &hi);
	for (int i = 0; i < (int)np_vm_agg_words(m); i++)
		max = b[i] > max ? b[i] : max;
	for (int i = lo; lo >= 0 && i <= hi; i++) {
		char label[64], a[24], c[24];
		if (i == 0) {
			lhist_label(a, sizeof(a), m->lmin);
			snprintf(label, sizeof(label), "(..., %s)", a);
		} else if (i == buckets + 1) {
			lhist_label(a, sizeof(a), m->lmax);
			snprintf(label, sizeof(label), "[%s, ...)", a);
		} else {
			lhist_label(a, sizeof(a), (i - 1) * m->lstep + m->lmin);
			lhist_label(c, sizeof(c), i * m->lstep + m->lmin);
			snprintf(label, sizeof(label), "[%s, %s)", a, c);
		}
		bar_line(f, label, b[i], b[i], max);
	}
}

static void lhist_json(FILE *f, const struct np_vm_map *m, const uint64_t *b)
{
	int lo, hi, buckets = (int)((m->lmax - m->lmin) / m->lstep);
	lhist_bounds(m, b, &lo, &hi);
	fputc('[', f);
	for (int i = lo; lo >= 0 && i <= hi; i++) {
		fputs(i > lo ? ", {" : "{", f);
		if (i == 0)
			fprintf(f, "\"max\": %lld, ", (long long)(m->lmin - 1));
		else if (i == buckets + 1)
			fprintf(f, "\"min\": %lld, ", (long long)m->lmax);
		else
			fprintf(f, "\"min\": %lld, \"max\": %lld, ",
				(long long)((i - 1) * m->lstep + m->lmin),
				(long long)(i * m->lstep + m->lmin - 1));
		fprintf(f, "\"count\": %llu}", (unsigned long long)b[i]);
	}
	fputc(']', f);
}

/* --- a map ------------------------------------------------------------------- */

static char *agg_text(struct script_rt *rt, const struct np_vm_map *m, const struct map_info *mi,
		      const uint64_t *w, uint64_t div)
{
	/* w holds one word for count, two for the rest: read w[1] only there */
	int64_t avg = m->agg == VM_AGG_AVG || m->agg == VM_AGG_STATS
			      ? (w[0] ? (int64_t)w[1] / (int64_t)w[0] : 0)
			      : 0;
	switch (m->agg) {
	case VM_AGG_COUNT: return dupf("%llu", (unsigned long long)(w[0] / div));
	case VM_AGG_SUM: case VM_AGG_MIN: case VM_AGG_MAX: {
		/* min and max compare signed (vm.c), and bpftrace prints them
		 * so whatever the type; a sum has its argument's sign */
		uint64_t v = m->agg == VM_AGG_SUM ? w[0] : w[1];
		return mi->sum_signed || m->agg != VM_AGG_SUM
			       ? dupf("%lld", (long long)((int64_t)v / (int64_t)div))
			       : dupf("%llu", (unsigned long long)(v / div));
	}
	case VM_AGG_AVG: return dupf("%lld", (long long)(avg / (int64_t)div));
	case VM_AGG_STATS:
		return rt->json ? dupf("{\"count\": %lld, \"average\": %lld, \"total\": %lld}",
				       (long long)w[0], (long long)avg, (long long)w[1])
				: dupf("count %lld, average %lld, total %lld", (long long)w[0],
				       (long long)avg, (long long)w[1]);
	}
	return strdup("");
}

static const char *json_kind(const struct np_vm_map *m)
{
	if (m->kind != VM_MAP_AGG)
		return "map";
	if (m->agg == VM_AGG_HIST || m->agg == VM_AGG_LHIST)
		return "hist";
	if (m->agg == VM_AGG_AVG || m->agg == VM_AGG_STATS)
		return "stats";
	return "map";
}

static void print_row_value(struct script_rt *rt, FILE *f, const struct np_vm_map *m,
			    const struct map_info *mi, const struct row *row, uint64_t div)
{
	if (m->kind == VM_MAP_AGG && m->agg == VM_AGG_HIST)
		rt->json ? hist_json(f, row->words, div) : hist_text(f, row->words, div);
	else if (m->kind == VM_MAP_AGG && m->agg == VM_AGG_LHIST)
		rt->json ? lhist_json(f, m, row->words) : lhist_text(f, m, row->words);
	else {
		char *t;
		if (m->kind == VM_MAP_AGG) {
			t = agg_text(rt, m, mi, row->words, div);
		} else if (mi->value.t == T_INT && div > 1) {
			t = mi->value.is_signed ? dupf("%lld", (long long)((int64_t)row->words[0] / (int64_t)div))
						: dupf("%llu", (unsigned long long)(row->words[0] / div));
		} else {
			t = value_text(rt, &mi->value, (const uint8_t *)row->words, 8);
		}
		if (rt->json && m->kind == VM_MAP_VALUE && quoted(&mi->value))
			json_string(f, t);
		else
			fputs(t, f);
		free(t);
	}
}

void print_map(struct script_rt *rt, int map, uint64_t top, uint64_t div)
{
	const struct np_vm_map *m = &np_vm_maps(rt->comp->prog)[map];
	const struct map_info *mi = &rt->prog->maps[map];
	struct row *rows;
	void *buf;
	size_t n = map_rows(rt, map, &rows, &buf), first = top && n > top ? n - top : 0;
	FILE *f = rt->out;
	bool hist = m->kind == VM_MAP_AGG && (m->agg == VM_AGG_HIST || m->agg == VM_AGG_LHIST);
	bool stats = m->kind == VM_MAP_AGG && (m->agg == VM_AGG_AVG || m->agg == VM_AGG_STATS);
	bool stack_value = m->kind == VM_MAP_VALUE && (mi->value.t == T_USTACK);
	div = div ? div : 1;
	if (rt->json) {
		if (!n)
			goto out;
		fprintf(f, "{\"type\": \"%s\", \"data\": {", json_kind(m));
		json_string(f, mi->name);
		fputs(mi->nkeys > 0 ? ": {" : ": ", f);
		for (size_t i = first; i < n; i++) {
			char *k = key_text(rt, mi, rows[i].key);
			if (i > first)
				fputs(", ", f);
			if (mi->nkeys > 0) {
				json_string(f, k);
				fputs(": ", f);
			}
			free(k);
			print_row_value(rt, f, m, mi, &rows[i], div);
		}
		fputs(mi->nkeys > 0 ? "}}}\n" : "}}\n", f);
		goto out;
	}
	for (size_t i = first; i < n; i++) {
		char *k = key_text(rt, mi, rows[i].key);
		if (i > first && !stack_value)
			fputc('\n', f);
		fprintf(f, "%s%s: %s", mi->name, k, hist ? "\n" : "");
		free(k);
		print_row_value(rt, f, m, mi, &rows[i], div);
	}
	fputc('\n', f);
	if (stats)
		fputc('\n', f);
out:
	free(rows);
	free(buf);
	fflush(f);
}

static int by_name(const void *a, const void *b)
{
	const struct map_info *x = *(const struct map_info *const *)a,
			      *y = *(const struct map_info *const *)b;
	return strcmp(x->name, y->name);
}

void print_maps(struct script_rt *rt)
{
	int n = rt->prog->nmaps;
	const struct map_info **order = calloc((size_t)n + 1, sizeof(*order));
	if (!order)
		return;
	for (int i = 0; i < n; i++)
		order[i] = &rt->prog->maps[i];
	qsort(order, (size_t)n, sizeof(*order), by_name);
	for (int i = 0; i < n; i++)
		print_map(rt, (int)(order[i] - rt->prog->maps), 0, 0);
	free(order);
}

/* --- records ------------------------------------------------------------------ */

static void print_printf(struct script_rt *rt, const struct fmt_entry *fe, const uint8_t *payload)
{
	struct fmt_arg args[FMT_MAX_ARGS];
	char *texts[FMT_MAX_ARGS] = {0};
	for (int i = 0; i < fe->args.n; i++) {
		const struct type *t = &fe->args.types[i];
		const uint8_t *p = payload + fe->args.off[i];
		memset(&args[i], 0, sizeof(args[i]));
		if (t->t == T_INT) {
			memcpy(&args[i].num, p, 8);
			continue;
		}
		texts[i] = value_text(rt, t, p, 8);
		args[i].is_text = 1;
		args[i].text = texts[i];
		args[i].tlen = strlen(texts[i]);
	}
	char *s = NULL;
	size_t len = 0;
	format_print(&s, &len, fe->fmt, fe->flen, args, fe->args.n);
	if (rt->json) {
		fputs("{\"type\": \"printf\", \"data\": ", rt->out);
		json_string(rt->out, s ? s : "");
		fputs("}\n", rt->out);
	} else if (s) {
		fwrite(s, 1, len, rt->out);
	}
	free(s);
	for (int i = 0; i < fe->args.n; i++)
		free(texts[i]);
}

static void print_time(struct script_rt *rt, const char *fmt)
{
	char buf[256];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	size_t n = strftime(buf, sizeof(buf), fmt, &tm);
	buf[n] = 0;
	if (rt->json) {
		fputs("{\"type\": \"time\", \"data\": ", rt->out);
		json_string(rt->out, buf);
		fputs("}\n", rt->out);
	} else {
		fputs(buf, rt->out);
	}
}

void print_record(struct script_rt *rt, unsigned kind, uint32_t id, uint32_t probe,
		  const uint8_t *payload, uint32_t len)
{
	struct compiled *c = rt->comp;
	(void)probe;
	switch (kind) {
	case VM_REC_PRINTF:
		if (id < (uint32_t)c->nfmts && c->fmts[id].args.size <= len)
			print_printf(rt, &c->fmts[id], payload);
		break;
	case VM_REC_PRINT:
		if (id < (uint32_t)rt->prog->nmaps && len >= 16) {
			uint64_t top, div;
			memcpy(&top, payload, 8);
			memcpy(&div, payload + 8, 8);
			print_map(rt, (int)id, top, div);
		}
		break;
	case VM_REC_VALUE:
		if (id < (uint32_t)c->nvalues && c->values[id].size <= len) {
			const struct type *t = &c->values[id].types[0];
			char *s = value_text(rt, t, payload, 8);
			if (rt->json) {
				fputs("{\"type\": \"value\", \"data\": ", rt->out);
				if (quoted(t))
					json_string(rt->out, s);
				else
					fputs(s, rt->out);
				fputs("}\n", rt->out);
			} else {
				fprintf(rt->out, "%s\n", s);
			}
			free(s);
		}
		break;
	case VM_REC_TIME:
		if (id < (uint32_t)c->ntimes)
			print_time(rt, c->times[id]);
		break;
	case VM_REC_CLEAR:
	case VM_REC_ZERO:
		if (rt->shared)
			np_vm_map_void(c->prog, rt->shared, id, kind == VM_REC_ZERO);
		break;
	}
}

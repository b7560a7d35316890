/* SPDX-License-Identifier: MIT */
/*
 * printf formats. bpftrace passes every integer as 64 bits, whatever the
 * length modifier says (%d of a negative retval prints it negative, %x of
 * it 16 digits), and %s takes strings and whatever prints as text
 * (usym, func, probe, ustack); %r prints a buffer, with \xNN for bytes
 * that do not print.
 */
#include "format.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct spec {
	size_t start, end; /* the conversion in the format, % to its letter */
	char conv;         /* d i u x X o c s p r */
	char flags[8];
	int width, prec;   /* -1: none */
};

/* The next conversion at or after *at; 0 at the end, -1 if malformed. */
static int next_spec(const char *f, size_t len, size_t *at, struct spec *sp)
{
	size_t i = *at;
	while (i < len) {
		if (f[i] != '%') {
			i++;
			continue;
		}
		if (i + 1 < len && f[i + 1] == '%') {
			i += 2;
			continue;
		}
		memset(sp, 0, sizeof(*sp));
		sp->start = i++;
		sp->width = sp->prec = -1;
		size_t nf = 0;
		while (i < len && strchr("-+ #0", f[i]) && nf + 1 < sizeof(sp->flags))
			sp->flags[nf++] = f[i++];
		if (i < len && f[i] >= '0' && f[i] <= '9') {
			sp->width = 0;
			while (i < len && f[i] >= '0' && f[i] <= '9' && sp->width < 1000)
				sp->width = sp->width * 10 + (f[i++] - '0');
		}
		if (i < len && f[i] == '.') {
			sp->prec = 0;
			i++;
			while (i < len && f[i] >= '0' && f[i] <= '9' && sp->prec < 1000)
				sp->prec = sp->prec * 10 + (f[i++] - '0');
		}
		while (i < len && strchr("hlzjt", f[i]))
			i++;
		if (i >= len || !strchr("diuxXocspr", f[i]))
			return -1;
		sp->conv = f[i];
		sp->end = ++i;
		*at = i;
		return 1;
	}
	*at = len;
	return 0;
}

static bool is_text_type(enum ty t)
{
	return t == T_STR || t == T_USYM || t == T_FUNC || t == T_PROBE || t == T_USTACK;
}

int format_check(const char *fmt, size_t len, const struct type *types, int n, char *why,
		 size_t whylen)
{
	size_t at = 0;
	struct spec sp;
	int k = 0, rc;
	while ((rc = next_spec(fmt, len, &at, &sp)) > 0) {
		if (k >= n) {
			snprintf(why, whylen, "Not enough arguments for format string (%d supplied)", n);
			return -1;
		}
		bool text = sp.conv == 's', buf = sp.conv == 'r';
		const struct type *t = &types[k];
		if ((text && !is_text_type(t->t) && t->t != T_INT) || (buf && t->t != T_BUF) ||
		    (!text && !buf && t->t != T_INT)) {
			snprintf(why, whylen, "%%%c specifier expects a value of type %s (%s supplied)",
				 sp.conv, text ? "string" : buf ? "buffer" : "integer", type_name(t));
			return k + 1;
		}
		k++;
	}
	if (rc < 0) {
		snprintf(why, whylen, "invalid format string");
		return -1;
	}
	if (k < n) {
		snprintf(why, whylen, "Too many arguments for format string (%d supplied, %d expected)",
			 n, k);
		return -1;
	}
	return 0;
}

static void append(char **buf, size_t *len, const char *s, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);
	if (!b)
		return;
	memcpy(b + *len, s, n);
	*len += n;
	b[*len] = 0;
	*buf = b;
}

static void appendf(char **buf, size_t *len, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		append(buf, len, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* "%-10" + "ll" + conv, as C's printf wants it. */
static void c_spec(const struct spec *sp, const char *length, char conv, char *out, size_t n)
{
	char w[16] = "", p[16] = "";
	if (sp->width >= 0)
		snprintf(w, sizeof(w), "%d", sp->width);
	if (sp->prec >= 0)
		snprintf(p, sizeof(p), ".%d", sp->prec);
	snprintf(out, n, "%%%s%s%s%s%c", sp->flags, w, p, length, conv);
}

void format_print(char **buf, size_t *len, const char *fmt, size_t flen,
		  const struct fmt_arg *args, int n)
{
	size_t at = 0, lit = 0;
	struct spec sp;
	int k = 0;
	char cs[64];
	if (!*buf)
		append(buf, len, "", 0);
	while (next_spec(fmt, flen, &at, &sp) > 0) {
		/* the literal text before it, %% as % */
		for (size_t i = lit; i < sp.start; i++) {
			append(buf, len, fmt + i, 1);
			if (fmt[i] == '%' && i + 1 < sp.start && fmt[i + 1] == '%')
				i++;
		}
		lit = sp.end;
		const struct fmt_arg *a = k < n ? &args[k++] : NULL;
		if (!a)
			break;
		if (sp.conv == 's' || sp.conv == 'r') {
			c_spec(&sp, "", 's', cs, sizeof(cs));
			char *t = malloc(a->is_text ? a->tlen + 1 : 32);
			if (!t)
				continue;
			if (a->is_text) {
				memcpy(t, a->text, a->tlen);
				t[a->tlen] = 0;
			} else {
				snprintf(t, 32, "%llu", a->num);
			}
			appendf(buf, len, cs, t);
			free(t);
		} else if (sp.conv == 'c') {
			c_spec(&sp, "", 'c', cs, sizeof(cs));
			appendf(buf, len, cs, (int)(unsigned char)a->num);
		} else if (sp.conv == 'p') {
			c_spec(&sp, "", 'p', cs, sizeof(cs));
			appendf(buf, len, cs, (void *)(uintptr_t)a->num);
		} else {
			char conv = sp.conv == 'i' ? 'd' : sp.conv;
			c_spec(&sp, "ll", conv, cs, sizeof(cs));
			appendf(buf, len, cs, a->num);
		}
	}
	for (size_t i = lit; i < flen; i++) {
		append(buf, len, fmt + i, 1);
		if (fmt[i] == '%' && i + 1 < flen && fmt[i + 1] == '%')
			i++;
	}
}

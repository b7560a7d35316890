/* SPDX-License-Identifier: MIT */
/*
 * The probe spec parser. Every error names the bad token and points at it,
 * the way a compiler does:
 *
 *   bad probe spec: unknown register '%zz'
 *     p c:malloc size=%zz
 *                     ^~~
 */
#include "spec.h"

#include <ctype.h>
#include <errno.h>
#include <nanoprobe/nanoprobe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cursor {
	const char *text; /* the whole spec, for the caret */
	char *err;
	size_t errlen;
};

static int fail_at(struct cursor *c, const char *tok, size_t toklen, const char *fmt, ...)
{
	char why[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	size_t col = (size_t)(tok - c->text);
	int n = snprintf(c->err, c->errlen, "bad probe spec: %s\n  %s\n  %*s^", why, c->text,
			 (int)col, "");
	for (size_t i = 1; i < toklen && n > 0 && (size_t)n + 1 < c->errlen; i++, n++)
		c->err[n] = '~', c->err[n + 1] = 0;
	return -EINVAL;
}

/* --- types ---------------------------------------------------------------- */

static int parse_type(struct cursor *c, const char *t, size_t len, struct np_fetch *f)
{
	char buf[16];
	if (len >= sizeof(buf))
		return fail_at(c, t, len, "unknown type '%.*s'", (int)len, t);
	memcpy(buf, t, len);
	buf[len] = 0;
	if (!strcmp(buf, "string") || !strcmp(buf, "ustring")) {
		f->type = NP_FT_STRING;
		f->size = 8;
		return 0;
	}
	char *end;
	long bits = strtol(buf + 1, &end, 10);
	const char *kinds = "usx";
	const char *k = strchr(kinds, buf[0]);
	if (!buf[0] || !k || *end || (bits != 8 && bits != 16 && bits != 32 && bits != 64))
		return fail_at(c, t, len, "unknown type '%s' (u8..u64, s8..s64, x8..x64, string)",
			       buf);
	f->type = (uint8_t)(NP_FT_U + (k - kinds));
	f->size = (uint8_t)(bits / 8);
	return 0;
}

const char *spec_type_name(const struct np_fetch *f, char *buf, size_t len)
{
	if (f->type == NP_FT_STRING)
		return "string";
	snprintf(buf, len, "%c%d", "usx"[f->type - NP_FT_U], f->size * 8);
	return buf;
}

/* --- fetch args ----------------------------------------------------------- */

static int parse_fetch(struct cursor *c, const char *s, size_t len, struct spec_arg *a);

static int parse_number(const char *s, size_t len, int base, uint64_t *v)
{
	char buf[32];
	char *end;
	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	*v = strtoull(buf, &end, base);
	return errno || *end ? -1 : 0;
}

static int parse_reg(struct cursor *c, const char *s, size_t len, struct np_fetch *f)
{
	char name[16] = "r";
	if (len < 2 || len > 8)
		return fail_at(c, s, len, "unknown register '%.*s'", (int)len, s);
	memcpy(name + 1, s + 1, len - 1); /* kernel style: %di is rdi */
	int reg = np_reg_lookup(name + 1);
	if (reg < 0)
		reg = np_reg_lookup(name);
	if (reg < 0)
		return fail_at(c, s, len, "unknown register '%.*s'", (int)len, s);
	f->base = NP_FB_REG;
	f->index = reg;
	return 0;
}

static int parse_var(struct cursor *c, const char *s, size_t len, struct np_fetch *f)
{
	uint64_t n;
	if (len == 7 && !memcmp(s, "$retval", 7)) {
		f->base = NP_FB_RETVAL;
	} else if (len == 6 && !memcmp(s, "$stack", 6)) {
		f->base = NP_FB_SP;
	} else if (len > 6 && !memcmp(s, "$stack", 6) && !parse_number(s + 6, len - 6, 10, &n) &&
		   n < 1024) {
		f->base = NP_FB_STACK;
		f->index = (int32_t)n;
	} else if (len > 4 && !memcmp(s, "$arg", 4) && !parse_number(s + 4, len - 4, 10, &n) &&
		   n >= 1 && n <= 6) {
		f->base = NP_FB_ARG;
		f->index = (int32_t)n - 1; /* $arg1 is the first */
	} else {
		return fail_at(c, s, len,
			       "unknown variable '%.*s' ($arg1..$arg6, $retval, $stack, $stackN)",
			       (int)len, s);
	}
	return 0;
}

/* @ADDR, @+FILEOFFSET, @SYMBOL[+|-OFFS]: the memory at that address. */
static int parse_at(struct cursor *c, const char *s, size_t len, struct spec_arg *a)
{
	struct np_fetch *f = &a->f;
	const char *p = s + 1;
	size_t n = len - 1;
	f->nderef = 1;
	f->off[0] = 0;
	if (n && *p == '+') {
		a->file_offset = true;
		f->base = NP_FB_MODREL;
		if (parse_number(p + 1, n - 1, 0, &f->imm))
			return fail_at(c, s, len, "bad file offset '%.*s'", (int)len, s);
		return 0;
	}
	if (n && isdigit((unsigned char)*p)) {
		f->base = NP_FB_IMM;
		if (parse_number(p, n, 0, &f->imm))
			return fail_at(c, s, len, "bad address '%.*s'", (int)len, s);
		return 0;
	}
	size_t symlen = strcspn(p, "+-");
	if (symlen > n)
		symlen = n;
	if (!symlen || symlen >= sizeof(a->sym))
		return fail_at(c, s, len, "bad symbol reference '%.*s'", (int)len, s);
	memcpy(a->sym, p, symlen);
	a->sym[symlen] = 0;
	f->base = NP_FB_MODREL;
	if (symlen < n) {
		uint64_t off;
		if (parse_number(p + symlen + 1, n - symlen - 1, 0, &off))
			return fail_at(c, s, len, "bad offset in '%.*s'", (int)len, s);
		f->imm = p[symlen] == '-' ? (uint64_t)-(int64_t)off : off;
	}
	return 0;
}

/* +OFFS(FETCH) or -OFFS(FETCH): the memory at FETCH + OFFS. */
static int parse_deref(struct cursor *c, const char *s, size_t len, struct spec_arg *a)
{
	const char *open = memchr(s, '(', len);
	uint64_t off;
	if (!open || s[len - 1] != ')' || parse_number(s + 1, (size_t)(open - s - 1), 0, &off))
		return fail_at(c, s, len, "bad dereference '%.*s' (want +OFFS(FETCHARG))", (int)len,
			       s);
	int err = parse_fetch(c, open + 1, (size_t)(s + len - 1 - open - 1), a);
	if (err)
		return err;
	if (a->f.nderef == NP_MAX_DEREF)
		return fail_at(c, s, len, "more than %d nested dereferences", NP_MAX_DEREF);
	a->f.off[a->f.nderef++] = *s == '-' ? -(int64_t)off : (int64_t)off;
	return 0;
}

static int parse_fetch(struct cursor *c, const char *s, size_t len, struct spec_arg *a)
{
	if (!len)
		return fail_at(c, s, 1, "missing fetch argument");
	switch (*s) {
	case '%': return parse_reg(c, s, len, &a->f);
	case '$': return parse_var(c, s, len, &a->f);
	case '@': return parse_at(c, s, len, a);
	case '+':
	case '-': return parse_deref(c, s, len, a);
	}
	return fail_at(c, s, len, "unknown fetch argument '%.*s'", (int)len, s);
}

/* A name the kernel's uprobe_events takes for a group, an event or an
 * argument: [A-Za-z_][A-Za-z0-9_]*. Outputs print them unquoted. */
static bool good_name(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* [NAME=]FETCH[:TYPE] */
static int parse_arg(struct cursor *c, const char *s, size_t len, struct spec_arg *a,
		     unsigned index)
{
	const char *eq = memchr(s, '=', len);
	const char *body = s;
	if (eq) {
		size_t n = (size_t)(eq - s);
		if (!n || n >= NP_ARG_NAME_MAX || !good_name(s, n))
			return fail_at(c, s, n ? n : 1,
				       "bad argument name: letters, digits and _, not first a digit");
		memcpy(a->f.name, s, n);
		body = eq + 1;
	} else {
		snprintf(a->f.name, sizeof(a->f.name), "arg%u", index + 1);
	}
	size_t blen = (size_t)(s + len - body);
	const char *colon = NULL;
	for (const char *p = body + blen; p > body; p--) /* the type comes last */
		if (p[-1] == ':' || p[-1] == ')') {
			colon = p[-1] == ':' ? p - 1 : NULL;
			break;
		}
	a->f.type = NP_FT_X;
	a->f.size = 8;
	int err = parse_fetch(c, body, colon ? (size_t)(colon - body) : blen, a);
	if (!err && colon)
		err = parse_type(c, colon + 1, (size_t)(body + blen - colon - 1), &a->f);
	return err;
}

/* --- the probe point ------------------------------------------------------ */

/* p, r, p:EVENT, r:GRP/EVENT */
static int parse_kind(struct cursor *c, const char *t, size_t len, struct spec *s)
{
	s->is_return = *t == 'r';
	if (len == 1)
		return 0;
	const char *name = t + 2, *slash = memchr(name, '/', len - 2);
	size_t n = len - 2;
	if (slash) {
		size_t g = (size_t)(slash - name);
		if (!g || g >= SPEC_NAME_MAX || !good_name(name, g))
			return fail_at(c, name, g ? g : 1,
				       "bad group name: letters, digits and _, not first a digit");
		memcpy(s->group, name, g);
		n -= g + 1;
		name = slash + 1;
	}
	if (!n || n >= SPEC_NAME_MAX || !good_name(name, n))
		return fail_at(c, name, n ? n : 1,
			       "bad event name: letters, digits and _, not first a digit");
	memcpy(s->event, name, n);
	return 0;
}

static int parse_symbol(struct cursor *c, const char *t, size_t len, struct spec *s)
{
	size_t plus = strcspn(t, "+");
	if (plus > len)
		plus = len;
	if (!plus || plus >= SPEC_SYM_MAX)
		return fail_at(c, t, len, "missing symbol");
	memcpy(s->symbol, t, plus);
	if (plus < len && parse_number(t + plus + 1, len - plus - 1, 0, &s->offset))
		return fail_at(c, t + plus, len - plus, "bad offset '%.*s'", (int)(len - plus),
			       t + plus);
	return 0;
}

/* PATH:SYMBOL[+OFFS][%return] or PATH:0xOFFSET */
static int parse_location(struct cursor *c, const char *t, size_t len, struct spec *s)
{
	const char *pct = memchr(t, '%', len);
	if (pct) {
		if ((size_t)(t + len - pct) != 7 || memcmp(pct, "%return", 7))
			return fail_at(c, pct, (size_t)(t + len - pct), "unknown suffix (want %%return)");
		s->is_return = true;
		len = (size_t)(pct - t);
	}
	/* PATH ends at the first lone ':' (C++ names hold "::") */
	const char *colon = NULL;
	for (const char *p = t; p < t + len && !colon; p++)
		if (*p == ':' && (p + 1 == t + len || p[1] != ':') && (p == t || p[-1] != ':'))
			colon = p;
	if (colon == t || (colon && colon + 1 == t + len))
		return fail_at(c, t, len, "want PATH:SYMBOL or PATH:0xOFFSET, got '%.*s'", (int)len,
			       t);
	/* without PATH: the traced program itself */
	size_t plen = colon ? (size_t)(colon - t) : 0;
	const char *what = colon ? colon + 1 : t;
	size_t rest = (size_t)(t + len - what);
	if (plen >= NP_PATH_MAX)
		return fail_at(c, t, plen, "path too long");
	memcpy(s->path, t, plen);
	if (isdigit((unsigned char)*what)) {
		if (parse_number(what, rest, 0, &s->offset))
			return fail_at(c, what, rest, "bad offset '%.*s'", (int)rest, what);
		return 0;
	}
	return parse_symbol(c, what, rest, s);
}

static size_t next_token(const char **p)
{
	while (isspace((unsigned char)**p))
		(*p)++;
	return strcspn(*p, " \t\n");
}

static bool is_kind(const char *t, size_t len)
{
	return (*t == 'p' || *t == 'r') && (len == 1 || t[1] == ':');
}

int spec_parse(const char *text, struct spec *s, char *err, size_t errlen)
{
	struct cursor c = {text, err, errlen};
	const char *p = text;
	size_t len = next_token(&p);
	int rc = 0;
	memset(s, 0, sizeof(*s));
	s->text = text;
	if (!len)
		return fail_at(&c, p, 1, "empty probe spec");
	if (is_kind(p, len) && (rc = parse_kind(&c, p, len, s)) == 0) {
		p += len;
		len = next_token(&p);
		if (!len)
			return fail_at(&c, p, 1, "missing PATH:SYMBOL after '%c'", *text);
	}
	if (rc || (rc = parse_location(&c, p, len, s)))
		return rc;
	for (p += len; (len = next_token(&p)) != 0 && !rc; p += len) {
		if (s->nargs == NP_MAX_ARGS)
			return fail_at(&c, p, len, "more than %d fetch arguments", NP_MAX_ARGS);
		rc = parse_arg(&c, p, len, &s->args[s->nargs], s->nargs);
		if (!rc && s->args[s->nargs].f.base == NP_FB_RETVAL && !s->is_return)
			return fail_at(&c, p, len, "$retval needs a return probe (r or %%return)");
		s->nargs++;
	}
	if (!rc && s->is_return && s->offset && s->symbol[0])
		return fail_at(&c, text, strlen(text), "a return probe must be at a function entry");
	return rc;
}

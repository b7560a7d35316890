/* SPDX-License-Identifier: MIT */
/*
 * Tokens of a bpftrace program, and the error messages that point at them.
 * Attach points ("uprobe:./shop:price_*", "interval:s:1") are read whole
 * by lex_attach, since paths hold characters that are operators elsewhere.
 */
#include "lex.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

FILE *script_err_stream;

void script_error(const struct program *p, struct loc at, const char *fmt, ...)
{
	FILE *f = script_err_stream ? script_err_stream : stderr;
	va_list ap;
	fprintf(f, "%s:%d:%d-%d: ERROR: ", p->file, at.line, at.col, at.col + at.len);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	const char *line = p->src;
	for (int l = 1; l < at.line && line; l++) {
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	if (!line)
		return;
	int n = (int)strcspn(line, "\n");
	fprintf(f, "%.*s\n%*s", n, line, at.col - 1, "");
	for (int i = 0; i < at.len; i++)
		fputc('~', f);
	fputc('\n', f);
}

void *ast_alloc(struct program *p, size_t n)
{
	void **v = realloc(p->blocks, (p->nblocks + 1) * sizeof(*v));
	if (!v)
		abort();
	p->blocks = v;
	void *m = calloc(1, n ? n : 1);
	if (!m)
		abort();
	p->blocks[p->nblocks++] = m;
	return m;
}

char *ast_strndup(struct program *p, const char *s, size_t n)
{
	char *d = ast_alloc(p, n + 1);
	memcpy(d, s, n);
	return d;
}

void program_free(struct program *p)
{
	for (struct probe *pr = p->probes; pr; pr = pr->next)
		free(pr->vars);
	free(p->maps);
	p->maps = NULL;
	p->probes = NULL;
	for (size_t i = 0; i < p->nblocks; i++)
		free(p->blocks[i]);
	free(p->blocks);
	p->blocks = NULL;
	p->nblocks = 0;
}

/* --- the cursor ------------------------------------------------------------ */

void lex_init(struct lexer *lx, struct program *p)
{
	memset(lx, 0, sizeof(*lx));
	lx->p = p;
	lx->s = p->src;
	lx->line = 1;
	lx->line_start = p->src;
}

static struct loc here(const struct lexer *lx, const char *at, int len)
{
	struct loc l = {lx->line, (int)(at - lx->line_start) + 1, len > 0 ? len : 1};
	return l;
}

/* Spaces, newlines, // and block comments. -1 on an unterminated comment. */
static int skip_space(struct lexer *lx)
{
	for (;;) {
		char c = *lx->s;
		if (c == '\n') {
			lx->line++;
			lx->s++;
			lx->line_start = lx->s;
		} else if (isspace((unsigned char)c)) {
			lx->s++;
		} else if (c == '/' && lx->s[1] == '/') {
			lx->s += strcspn(lx->s, "\n");
		} else if (c == '/' && lx->s[1] == '*') {
			const char *start = lx->s;
			lx->s += 2;
			while (*lx->s && !(lx->s[0] == '*' && lx->s[1] == '/')) {
				if (*lx->s == '\n') {
					lx->line++;
					lx->line_start = lx->s + 1;
				}
				lx->s++;
			}
			if (!*lx->s) {
				script_error(lx->p, here(lx, start, 2), "unterminated comment");
				return -1;
			}
			lx->s += 2;
		} else {
			return 0;
		}
	}
}

static int lex_string(struct lexer *lx, struct token *t)
{
	const char *start = lx->s;
	char *buf = ast_alloc(lx->p, strlen(start) + 1);
	size_t n = 0;
	lx->s++;
	while (*lx->s && *lx->s != '"' && *lx->s != '\n') {
		char c = *lx->s++;
		if (c == '\\') {
			char e = *lx->s++;
			switch (e) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '\\': c = '\\'; break;
			case '"': c = '"'; break;
			case '0': c = '\0'; break;
			default:
				script_error(lx->p, here(lx, lx->s - 2, 2), "invalid escape character '\\%c'", e);
				return -1;
			}
		}
		buf[n++] = c;
	}
	if (*lx->s != '"') {
		script_error(lx->p, here(lx, start, (int)(lx->s - start)), "unterminated string");
		return -1;
	}
	lx->s++;
	t->kind = TK_STR;
	t->text = buf;
	t->len = n;
	t->loc = here(lx, start, (int)(lx->s - start));
	return 0;
}

static int lex_number(struct lexer *lx, struct token *t)
{
	const char *start = lx->s;
	char digits[64];
	size_t n = 0;
	int base = 10;
	if (lx->s[0] == '0' && (lx->s[1] == 'x' || lx->s[1] == 'X')) {
		base = 16;
		lx->s += 2;
	}
	while (isalnum((unsigned char)*lx->s) || *lx->s == '_') {
		if (*lx->s != '_' && n + 1 < sizeof(digits))
			digits[n++] = *lx->s;
		lx->s++;
	}
	digits[n] = 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(digits, &end, base);
	t->loc = here(lx, start, (int)(lx->s - start));
	if (!n || *end || errno) {
		script_error(lx->p, t->loc, "invalid integer: %.*s", (int)(lx->s - start), start);
		return -1;
	}
	t->kind = TK_INT;
	t->ival = (int64_t)v;
	t->text = start;
	t->len = (size_t)(lx->s - start);
	return 0;
}

static const char *const two_char[] = {"==", "!=", "<=", ">=", "&&", "||", "<<", ">>",
				       "++", "--", "+=", "-=", "*=", "/=", "%=", "&=",
				       "|=", "^=", "->"};

int lex_next(struct lexer *lx, struct token *t)
{
	memset(t, 0, sizeof(*t));
	if (skip_space(lx))
		return -1;
	const char *s = lx->s;
	t->text = s;
	if (!*s) {
		t->kind = TK_EOF;
		t->loc = here(lx, s, 1);
		return 0;
	}
	if (*s == '"')
		return lex_string(lx, t);
	if (isdigit((unsigned char)*s))
		return lex_number(lx, t);
	if (isalpha((unsigned char)*s) || *s == '_' || *s == '$' || *s == '@') {
		const char *e = s + 1;
		while (isalnum((unsigned char)*e) || *e == '_')
			e++;
		t->kind = *s == '$' ? TK_VAR : *s == '@' ? TK_MAP : TK_IDENT;
		t->len = (size_t)(e - s);
		t->loc = here(lx, s, (int)t->len);
		lx->s = e;
		if (t->kind == TK_VAR && t->len == 1) {
			script_error(lx->p, t->loc, "syntax error, unexpected $");
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(two_char) / sizeof(*two_char); i++)
		if (s[0] == two_char[i][0] && s[1] == two_char[i][1]) {
			t->kind = TK_PUNCT;
			t->len = 2;
			/* <<= and >>= */
			if ((s[0] == '<' || s[0] == '>') && s[1] == s[0] && s[2] == '=')
				t->len = 3;
			t->loc = here(lx, s, (int)t->len);
			lx->s += t->len;
			return 0;
		}
	if (strchr("{}()[],;:/?<>=!~+-*%&|^.", *s)) {
		t->kind = TK_PUNCT;
		t->len = 1;
		t->loc = here(lx, s, 1);
		lx->s++;
		return 0;
	}
	t->loc = here(lx, s, 1);
	script_error(lx->p, t->loc, "syntax error, unexpected '%c'", *s);
	return -1;
}

bool tok_is(const struct token *t, const char *punct)
{
	return t->kind == TK_PUNCT && t->len == strlen(punct) && !memcmp(t->text, punct, t->len);
}

bool tok_word(const struct token *t, const char *word)
{
	return t->kind == TK_IDENT && t->len == strlen(word) && !memcmp(t->text, word, t->len);
}

/* An attach point: up to a space, ',' or '{' outside quotes. */
int lex_attach(struct lexer *lx, struct token *t)
{
	memset(t, 0, sizeof(*t));
	if (skip_space(lx))
		return -1;
	const char *s = lx->s, *e = s;
	bool quoted = false;
	if (*s && !isalpha((unsigned char)*s)) {
		t->loc = here(lx, s, 1);
		script_error(lx->p, t->loc, "syntax error, unexpected %c, expecting a probe", *s);
		return -1;
	}
	while (*e && (quoted || (!isspace((unsigned char)*e) && *e != ',' && *e != '{'))) {
		if (*e == '"')
			quoted = !quoted;
		e++;
	}
	t->kind = TK_ATTACH;
	t->text = s;
	t->len = (size_t)(e - s);
	t->loc = here(lx, s, (int)t->len);
	lx->s = e;
	if (!t->len) {
		script_error(lx->p, t->loc, *e ? "syntax error, unexpected '%c', expecting a probe"
					      : "syntax error, unexpected end of file, expecting a probe",
			     *e);
		return -1;
	}
	return 0;
}

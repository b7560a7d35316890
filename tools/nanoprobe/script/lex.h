/* SPDX-License-Identifier: MIT */
#ifndef NP_SCRIPT_LEX_H
#define NP_SCRIPT_LEX_H
#include "ast.h"

enum tok_kind { TK_EOF = 1, TK_INT, TK_STR, TK_IDENT, TK_VAR, TK_MAP, TK_PUNCT, TK_ATTACH };

struct token {
	enum tok_kind kind;
	const char *text; /* in the source (TK_STR: the decoded bytes) */
	size_t len;
	int64_t ival;
	struct loc loc;
};

struct lexer {
	struct program *p;
	const char *s;
	int line;
	const char *line_start;
};

void lex_init(struct lexer *lx, struct program *p);
/* The next token: 0, or -1 after printing the error. */
int lex_next(struct lexer *lx, struct token *t);
int lex_attach(struct lexer *lx, struct token *t);
bool tok_is(const struct token *t, const char *punct);
bool tok_word(const struct token *t, const char *word);
#endif

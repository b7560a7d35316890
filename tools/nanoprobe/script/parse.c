/* SPDX-License-Identifier: MIT */
/*
 * The parser: bpftrace's grammar, by recursive descent, for what runs in
 * user space. Probes are attach points, an optional predicate and a block;
 * statements are assignments, if/else, unroll, return and expressions;
 * expressions have C's operators and precedence, with bpftrace's calls,
 * builtins, $variables and @maps. Kernel-only attach points are refused
 * here, by name.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

struct parser {
	struct program *p;
	struct lexer lx;
	struct token tok; /* the current token */
	int depth;        /* nesting, bounded */
	bool predicate;   /* a bare '/' ends the predicate: not a division */
};

#define MAX_DEPTH 64

static int advance(struct parser *ps)
{
	return lex_next(&ps->lx, &ps->tok);
}

static int syntax(struct parser *ps, const char *expecting)
{
	const struct token *t = &ps->tok;
	if (t->kind == TK_EOF)
		script_error(ps->p, t->loc, "syntax error, unexpected end of file%s%s",
			     expecting ? ", expecting " : "", expecting ? expecting : "");
	else
		script_error(ps->p, t->loc, "syntax error, unexpected %.*s%s%s", (int)t->len,
			     t->kind == TK_STR ? "string" : t->text, expecting ? ", expecting " : "",
			     expecting ? expecting : "");
	return -1;
}

static int expect(struct parser *ps, const char *punct)
{
	if (!tok_is(&ps->tok, punct))
		return syntax(ps, punct);
	return advance(ps);
}

static struct node *node(struct parser *ps, enum node_kind kind, struct loc loc)
{
	struct node *n = ast_alloc(ps->p, sizeof(*n));
	n->kind = kind;
	n->loc = loc;
	n->map = n->var = -1;
	return n;
}

/* The span from a to b's end, on a's line. */
static struct loc span(struct loc a, struct loc b)
{
	if (b.line == a.line && b.col + b.len > a.col)
		a.len = b.col + b.len - a.col;
	return a;
}

static struct node *expr(struct parser *ps);
static struct node *unary_expr(struct parser *ps);
static struct node *paren(struct parser *ps, struct token t);
static struct node *call_list(struct parser *ps, struct node *n);

/* --- expressions ---------------------------------------------------------- */

static struct node *call_args(struct parser *ps, struct node *n)
{
	bool pred = ps->predicate;
	ps->predicate = false;
	n = call_list(ps, n);
	ps->predicate = pred;
	return n;
}

static struct node *call_list(struct parser *ps, struct node *n)
{
	if (advance(ps)) /* ( */
		return NULL;
	struct node *args[32];
	int na = 0;
	while (!tok_is(&ps->tok, ")")) {
		if (na == 32) {
			script_error(ps->p, ps->tok.loc, "too many arguments");
			return NULL;
		}
		if (!(args[na++] = expr(ps)))
			return NULL;
		if (tok_is(&ps->tok, ",")) {
			if (advance(ps))
				return NULL;
		} else if (!tok_is(&ps->tok, ")")) {
			syntax(ps, ", or )");
			return NULL;
		}
	}
	n->loc = span(n->loc, ps->tok.loc);
	n->args = ast_alloc(ps->p, sizeof(*n->args) * (size_t)(na ? na : 1));
	memcpy(n->args, args, sizeof(*args) * (size_t)na);
	n->nargs = na;
	return advance(ps) ? NULL : n;
}

static struct node *map_ref(struct parser *ps)
{
	struct node *n = node(ps, N_MAP, ps->tok.loc);
	n->name = ast_strndup(ps->p, ps->tok.text, ps->tok.len);
	n->nargs = -1; /* no [] */
	if (advance(ps))
		return NULL;
	if (!tok_is(&ps->tok, "["))
		return n;
	if (advance(ps))
		return NULL;
	struct node *keys[16];
	int nk = 0;
	for (;;) {
		if (nk == 16) {
			script_error(ps->p, ps->tok.loc, "too many map keys");
			return NULL;
		}
		if (!(keys[nk++] = expr(ps)))
			return NULL;
		if (tok_is(&ps->tok, "]"))
			break;
		if (expect(ps, ","))
			return NULL;
	}
	n->loc = span(n->loc, ps->tok.loc);
	n->args = ast_alloc(ps->p, sizeof(*keys) * (size_t)nk);
	memcpy(n->args, keys, sizeof(*keys) * (size_t)nk);
	n->nargs = nk;
	return advance(ps) ? NULL : n;
}

/* "int32", "uint8*"...: the bytes and signedness of an integer type. */
static bool int_type(const char *s, size_t len, int *bytes, bool *is_signed)
{
	static const struct { const char *name; int bytes; bool sig; } types[] = {
		{"int8", 1, true}, {"int16", 2, true}, {"int32", 4, true}, {"int64", 8, true},
		{"uint8", 1, false}, {"uint16", 2, false}, {"uint32", 4, false},
		{"uint64", 8, false},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(*types); i++)
		if (strlen(types[i].name) == len && !memcmp(types[i].name, s, len)) {
			*bytes = types[i].bytes;
			*is_signed = types[i].sig;
			return true;
		}
	return false;
}

/* After '(' when an integer type follows: (int32)x or (int32 *)x. */
static struct node *cast(struct parser *ps, struct loc open)
{
	struct node *n = node(ps, N_CAST, open);
	int bytes = 8;
	bool sig = true;
	/* the caller saw an integer type here: int_type always finds it */
	int_type(ps->tok.text, ps->tok.len, &bytes, &sig);
	n->ival = bytes;
	n->cast_signed = sig;
	if (advance(ps))
		return NULL;
	bool pointer = tok_is(&ps->tok, "*");
	if (pointer && advance(ps))
		return NULL;
	if (expect(ps, ")"))
		return NULL;
	/* unary binds tighter than binary operators: (int8)x + 1 is ((int8)x) + 1 */
	struct node *operand = unary_expr(ps);
	if (!operand)
		return NULL;
	n->a = operand;
	n->loc = span(open, operand->loc);
	if (pointer) /* a typed pointer: only good to dereference */
		n->op = '*';
	return n;
}

static struct node *primary(struct parser *ps)
{
	struct token t = ps->tok;
	struct node *n;
	switch (t.kind) {
	case TK_INT:
		n = node(ps, N_INT, t.loc);
		n->ival = t.ival;
		return advance(ps) ? NULL : n;
	case TK_STR:
		n = node(ps, N_STR, t.loc);
		n->str = (char *)t.text;
		n->slen = t.len;
		return advance(ps) ? NULL : n;
	case TK_VAR:
		n = node(ps, N_VAR, t.loc);
		n->name = ast_strndup(ps->p, t.text, t.len);
		return advance(ps) ? NULL : n;
	case TK_MAP:
		return map_ref(ps);
	case TK_IDENT:
		if (advance(ps))
			return NULL;
		n = node(ps, tok_is(&ps->tok, "(") ? N_CALL : N_BUILTIN, t.loc);
		n->name = ast_strndup(ps->p, t.text, t.len);
		return n->kind == N_CALL ? call_args(ps, n) : n;
	case TK_PUNCT:
		if (tok_is(&t, "(")) {
			bool pred = ps->predicate;
			ps->predicate = false;
			n = paren(ps, t);
			ps->predicate = pred;
			return n;
		}
		break;
	default:
		break;
	}
	syntax(ps, NULL);
	return NULL;
}

static struct node *paren(struct parser *ps, struct token t)
{
	if (advance(ps))
		return NULL;
	int bytes;
	bool sig;
	if (ps->tok.kind == TK_IDENT && int_type(ps->tok.text, ps->tok.len, &bytes, &sig))
		return cast(ps, t.loc);
	struct node *n = expr(ps);
	if (!n)
		return NULL;
	if (tok_is(&ps->tok, ",")) {
		script_error(ps->p, ps->tok.loc, "tuples are not supported");
		return NULL;
	}
	return expect(ps, ")") ? NULL : n;
}

static struct node *postfix(struct parser *ps)
{
	struct node *n = primary(ps);
	if (n && (tok_is(&ps->tok, ".") || tok_is(&ps->tok, "->"))) {
		script_error(ps->p, ps->tok.loc, "struct fields are not supported: "
						 "nanoprobe has no type information for them");
		return NULL;
	}
	return n;
}

static struct node *unary_expr(struct parser *ps)
{
	struct token t = ps->tok;
	int op = 0;
	if (tok_is(&t, "!") || tok_is(&t, "~") || tok_is(&t, "*"))
		op = t.text[0];
	else if (tok_is(&t, "-"))
		op = OP_NEG;
	else if (tok_is(&t, "++") || tok_is(&t, "--"))
		op = t.text[0] == '+' ? OP_INC : OP_DEC;
	else if (tok_is(&t, "&")) {
		script_error(ps->p, t.loc, "the address-of operator is not supported");
		return NULL;
	}
	if (!op)
		return postfix(ps);
	if (++ps->depth > MAX_DEPTH) {
		script_error(ps->p, t.loc, "expression nested too deeply");
		return NULL;
	}
	if (advance(ps))
		return NULL;
	struct node *operand = unary_expr(ps);
	ps->depth--;
	if (!operand)
		return NULL;
	struct node *n = node(ps, op == '*' ? N_DEREF : N_UNOP, span(t.loc, operand->loc));
	n->op = op;
	n->a = operand;
	if (op == '*') {
		n->ival = 8;
		/* *(int32 *)p reads what the cast says */
		if (operand->kind == N_CAST && operand->op == '*') {
			n->ival = operand->ival;
			n->cast_signed = operand->cast_signed;
			n->a = operand->a;
		}
	}
	return n;
}

/* Binary operators by precedence, lowest first. */
static const char *const levels[][4] = {
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", "<=", ">", ">="},
	{"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
};
#define NLEVELS (int)(sizeof(levels) / sizeof(*levels))

static int op_code(const struct token *t)
{
	static const struct { const char *s; int op; } two[] = {
		{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE}, {">=", OP_GE},
		{"&&", OP_AND}, {"||", OP_OR}, {"<<", OP_SHL}, {">>", OP_SHR},
	};
	for (size_t i = 0; i < sizeof(two) / sizeof(*two); i++)
		if (tok_is(t, two[i].s))
			return two[i].op;
	return t->text[0];
}

static struct node *binary(struct parser *ps, int level)
{
	if (level == NLEVELS)
		return unary_expr(ps);
	struct node *left = binary(ps, level + 1);
	while (left) {
		bool match = false;
		for (int k = 0; k < 4 && levels[level][k]; k++)
			match = match || tok_is(&ps->tok, levels[level][k]);
		if (ps->predicate && tok_is(&ps->tok, "/"))
			match = false;
		if (!match)
			break;
		struct token t = ps->tok;
		if (++ps->depth > MAX_DEPTH) {
			script_error(ps->p, t.loc, "expression nested too deeply");
			return NULL;
		}
		if (advance(ps))
			return NULL;
		struct node *right = binary(ps, level + 1);
		ps->depth--;
		if (!right)
			return NULL;
		struct node *n = node(ps, N_BINOP, span(left->loc, right->loc));
		n->op = op_code(&t);
		n->a = left;
		n->b = right;
		left = n;
	}
	return left;
}

static struct node *expr(struct parser *ps)
{
	if (++ps->depth > MAX_DEPTH) {
		script_error(ps->p, ps->tok.loc, "expression nested too deeply");
		return NULL;
	}
	struct node *cond = binary(ps, 0);
	if (cond && tok_is(&ps->tok, "?")) {
		struct node *n = node(ps, N_TERNARY, cond->loc);
		n->a = cond;
		if (advance(ps) || !(n->b = expr(ps)) || expect(ps, ":") || !(n->c = expr(ps)))
			return NULL;
		n->loc = span(cond->loc, n->c->loc);
		cond = n;
	}
	ps->depth--;
	return cond;
}

/* --- statements ----------------------------------------------------------- */

static struct node *block(struct parser *ps);

static bool is_assign_op(const struct token *t)
{
	static const char *const ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
					  "<<=", ">>="};
	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
		if (tok_is(t, ops[i]))
			return true;
	return false;
}

static struct node *assign_or_expr(struct parser *ps)
{
	struct node *e = expr(ps);
	if (!e)
		return NULL;
	if ((e->kind == N_MAP || e->kind == N_VAR) && is_assign_op(&ps->tok)) {
		struct node *n = node(ps, N_ASSIGN, e->loc);
		n->op = ps->tok.len == 1 ? '=' : ps->tok.text[0] == '<' ? OP_SHL
					       : ps->tok.text[0] == '>' ? OP_SHR
									: ps->tok.text[0];
		n->a = e;
		if (advance(ps) || !(n->b = expr(ps)))
			return NULL;
		n->loc = span(e->loc, n->b->loc);
		return n;
	}
	if ((e->kind == N_MAP || e->kind == N_VAR) && (tok_is(&ps->tok, "++") || tok_is(&ps->tok, "--"))) {
		struct node *n = node(ps, N_ASSIGN, span(e->loc, ps->tok.loc));
		n->op = ps->tok.text[0];
		n->a = e;
		n->b = node(ps, N_INT, ps->tok.loc);
		n->b->ival = 1;
		return advance(ps) ? NULL : n;
	}
	if (e->kind == N_UNOP && (e->op == OP_INC || e->op == OP_DEC) &&
	    (e->a->kind == N_MAP || e->a->kind == N_VAR)) {
		struct node *n = node(ps, N_ASSIGN, e->loc);
		n->op = e->op == OP_INC ? '+' : '-';
		n->a = e->a;
		n->b = node(ps, N_INT, e->loc);
		n->b->ival = 1;
		return n;
	}
	struct node *n = node(ps, N_EXPR, e->loc);
	n->a = e;
	return n;
}

static struct node *statement(struct parser *ps);

static struct node *if_stmt(struct parser *ps)
{
	struct node *n = node(ps, N_IF, ps->tok.loc);
	if (advance(ps) || expect(ps, "(") || !(n->a = expr(ps)) || expect(ps, ")"))
		return NULL;
	if (!(n->body = block(ps)))
		return NULL;
	if (!tok_word(&ps->tok, "else"))
		return n;
	if (advance(ps))
		return NULL;
	if (tok_word(&ps->tok, "if")) {
		if (!(n->c = if_stmt(ps)))
			return NULL;
	} else if (!(n->c = block(ps))) {
		return NULL;
	}
	return n;
}

static struct node *statement(struct parser *ps)
{
	struct token t = ps->tok;
	if (tok_word(&t, "if"))
		return if_stmt(ps);
	if (tok_word(&t, "unroll")) {
		struct node *n = node(ps, N_UNROLL, t.loc);
		if (advance(ps) || expect(ps, "("))
			return NULL;
		if (ps->tok.kind != TK_INT) {
			script_error(ps->p, ps->tok.loc, "unroll wants an integer count");
			return NULL;
		}
		n->ival = ps->tok.ival;
		if (n->ival < 1 || n->ival > 100) {
			script_error(ps->p, ps->tok.loc, "unroll maximum value is 100");
			return NULL;
		}
		if (advance(ps) || expect(ps, ")") || !(n->body = block(ps)))
			return NULL;
		return n;
	}
	if (tok_word(&t, "while") || tok_word(&t, "for")) {
		script_error(ps->p, t.loc, "%.*s loops are not supported: a probe's action must end "
					   "in bounded time (use unroll)", (int)t.len, t.text);
		return NULL;
	}
	if (tok_word(&t, "return")) {
		struct node *n = node(ps, N_RETURN, t.loc);
		return advance(ps) ? NULL : n;
	}
	return assign_or_expr(ps);
}

/* '{' statements '}': the statements as a list (NULL when empty; *err on
 * error). */
static struct node *stmt_list(struct parser *ps, bool *err)
{
	struct node *head = NULL, **tail = &head;
	*err = true;
	if (++ps->depth > MAX_DEPTH) {
		script_error(ps->p, ps->tok.loc, "blocks nested too deeply");
		return NULL;
	}
	if (expect(ps, "{"))
		return NULL;
	while (!tok_is(&ps->tok, "}")) {
		if (tok_is(&ps->tok, ";")) {
			if (advance(ps))
				return NULL;
			continue;
		}
		struct node *s = statement(ps);
		if (!s)
			return NULL;
		*tail = s;
		tail = &s->next;
		bool braced = s->kind == N_IF || s->kind == N_UNROLL;
		if (!braced && !tok_is(&ps->tok, ";") && !tok_is(&ps->tok, "}"))
			return syntax(ps, "; or }"), NULL;
	}
	ps->depth--;
	*err = false;
	return head;
}

/* A block as a statement list; an empty block is an N_EXPR-free list. */
static struct node *block(struct parser *ps)
{
	bool err;
	struct node *b = stmt_list(ps, &err);
	if (err)
		return NULL;
	if (advance(ps)) /* } */
		return NULL;
	if (!b) { /* empty: a placeholder statement that does nothing */
		b = node(ps, N_EXPR, ps->tok.loc);
		b->a = node(ps, N_INT, ps->tok.loc);
	}
	return b;
}

/* --- attach points --------------------------------------------------------- */

static const struct {
	const char *name, *alias;
	enum probe_kind kind;
} user_kinds[] = {
	{"uprobe", "u", PK_UPROBE},      {"uretprobe", "ur", PK_URETPROBE},
	{"BEGIN", NULL, PK_BEGIN},       {"END", NULL, PK_END},
	{"interval", "i", PK_INTERVAL},  {"usdt", "U", PK_USDT},
};

static const struct {
	const char *name, *alias;
} kernel_kinds[] = {
	{"kprobe", "k"}, {"kretprobe", "kr"}, {"tracepoint", "t"}, {"rawtracepoint", "rt"},
	{"software", "s"}, {"hardware", "h"}, {"profile", "p"}, {"watchpoint", "w"},
	{"asyncwatchpoint", "aw"}, {"kfunc", "f"}, {"kretfunc", "fr"}, {"iter", "it"},
};

/* The parts of "a:b:c" split at colons outside quotes, unquoted. */
static int split_colons(struct program *p, const char *s, size_t len, char **parts, int max)
{
	int n = 0;
	size_t start = 0;
	bool quoted = false;
	for (size_t i = 0; i <= len && n < max; i++) {
		if (i < len && s[i] == '"')
			quoted = !quoted;
		if (i < len && (quoted || s[i] != ':'))
			continue;
		char *part = ast_alloc(p, i - start + 1);
		size_t k = 0;
		for (size_t j = start; j < i; j++)
			if (s[j] != '"')
				part[k++] = s[j];
		parts[n++] = part;
		start = i + 1;
	}
	return n;
}

static int parse_interval(struct parser *ps, struct attach *a, char **parts, int n)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{"s", 1000000000ull}, {"ms", 1000000ull}, {"us", 1000ull}, {"hz", 0},
	};
	char *end;
	if (n == 3) {
		unsigned long long v = strtoull(parts[2], &end, 10);
		for (size_t i = 0; i < sizeof(units) / sizeof(*units) && !*end && v; i++)
			if (!strcmp(parts[1], units[i].unit)) {
				a->period_ns = units[i].ns ? v * units[i].ns : 1000000000ull / v;
				return a->period_ns ? 0 : -1;
			}
	}
	script_error(ps->p, a->loc, "interval probe must be interval:s:N, interval:ms:N, "
				    "interval:us:N or interval:hz:N");
	return -1;
}

/* FUNC[+OFFSET] */
static int parse_uprobe_func(struct parser *ps, struct attach *a, char *func)
{
	char *plus = strrchr(func, '+');
	if (plus && plus != func && isdigit((unsigned char)plus[1])) {
		char *end;
		a->offset = strtoull(plus + 1, &end, 0);
		if (*end) {
			script_error(ps->p, a->loc, "bad offset in '%s'", a->text);
			return -1;
		}
		*plus = 0;
	}
	if (!func[0]) {
		script_error(ps->p, a->loc, "uprobe needs a function: uprobe:PATH:FUNC");
		return -1;
	}
	if (!strncmp(func, "0x", 2) || isdigit((unsigned char)func[0])) {
		script_error(ps->p, a->loc, "uprobes on an address are not supported: "
					    "name the function (FUNC+OFFSET)");
		return -1;
	}
	a->func = func;
	return 0;
}

/* usdt:PATH:NAME or usdt:PATH:PROVIDER:NAME, as bpftrace; globs allowed */
static int parse_usdt(struct parser *ps, struct attach *a, char **parts, int n)
{
	if ((n != 3 && n != 4) || !parts[n - 1][0] || (n == 4 && !parts[2][0])) {
		script_error(ps->p, a->loc, "usdt probe must be usdt:PATH:[PROVIDER:]NAME, not %s",
			     a->text);
		return -1;
	}
	a->target = parts[1];
	a->provider = n == 4 ? parts[2] : NULL;
	a->func = parts[n - 1];
	return 0;
}

static int parse_attach(struct parser *ps, const struct token *t, struct attach *a)
{
	char *parts[8];
	int n = split_colons(ps->p, t->text, t->len, parts, 8);
	a->loc = t->loc;
	a->text = ast_strndup(ps->p, t->text, t->len);
	for (size_t i = 0; i < sizeof(kernel_kinds) / sizeof(*kernel_kinds); i++)
		if (!strcmp(parts[0], kernel_kinds[i].name) || !strcmp(parts[0], kernel_kinds[i].alias)) {
			script_error(ps->p, t->loc, "%s probes are not supported: nanoprobe traces user "
						    "space only (uprobe, uretprobe, usdt, BEGIN, END, interval)",
				     kernel_kinds[i].name);
			return -1;
		}
	for (size_t i = 0; i < sizeof(user_kinds) / sizeof(*user_kinds); i++) {
		if (strcmp(parts[0], user_kinds[i].name) &&
		    (!user_kinds[i].alias || strcmp(parts[0], user_kinds[i].alias)))
			continue;
		a->kind = user_kinds[i].kind;
		switch (a->kind) {
		case PK_BEGIN: case PK_END:
			if (n == 1)
				return 0;
			break;
		case PK_INTERVAL:
			return parse_interval(ps, a, parts, n);
		case PK_USDT:
			return parse_usdt(ps, a, parts, n);
		default: /* uprobe:[PATH:]FUNC; a C++ name's colons are quoted */
			if (n == 2) {
				a->target = "";
				return parse_uprobe_func(ps, a, parts[1]);
			}
			if (n == 3) {
				a->target = parts[1];
				return parse_uprobe_func(ps, a, parts[2]);
			}
			break;
		}
		script_error(ps->p, t->loc, "invalid %s probe: %s", parts[0], a->text);
		return -1;
	}
	script_error(ps->p, t->loc, "Invalid probe type: %s", parts[0]);
	return -1;
}

static struct probe *probe(struct parser *ps)
{
	struct probe *pr = ast_alloc(ps->p, sizeof(*pr));
	struct attach **tail = &pr->attach;
	struct token t;
	for (;;) {
		if (lex_attach(&ps->lx, &t))
			return NULL;
		struct attach *a = ast_alloc(ps->p, sizeof(*a));
		if (parse_attach(ps, &t, a))
			return NULL;
		*tail = a;
		tail = &a->next;
		if (advance(ps))
			return NULL;
		if (!tok_is(&ps->tok, ","))
			break;
	}
	pr->loc = pr->attach->loc;
	if (tok_is(&ps->tok, "/")) {
		/* the predicate ends at the next '/': '/' is not division there */
		if (advance(ps))
			return NULL;
		if (tok_is(&ps->tok, "/"))
			return syntax(ps, "a predicate"), NULL;
		ps->predicate = true;
		pr->pred = binary(ps, 0);
		ps->predicate = false;
		if (!pr->pred)
			return NULL;
		if (!tok_is(&ps->tok, "/"))
			return syntax(ps, "end predicate"), NULL;
		if (advance(ps))
			return NULL;
	}
	bool err;
	pr->body = stmt_list(ps, &err);
	if (err)
		return NULL;
	if (!pr->body) {
		pr->body = node(ps, N_EXPR, ps->tok.loc);
		pr->body->a = node(ps, N_INT, ps->tok.loc);
	}
	return pr; /* at its '}': the caller reads the next attach point */
}

int script_parse(struct program *p, const char *file, const char *src)
{
	struct parser ps = {.p = p};
	p->file = file;
	p->src = src;
	lex_init(&ps.lx, p);
	struct probe **tail = &p->probes;
	for (;;) {
		/* after a probe's '}': another probe, or the end */
		struct lexer save = ps.lx;
		struct token peek;
		if (lex_next(&ps.lx, &peek))
			return -1;
		if (peek.kind == TK_EOF)
			break;
		ps.lx = save;
		struct probe *pr = probe(&ps);
		if (!pr)
			return -1;
		pr->index = p->nprobes++;
		*tail = pr;
		tail = &pr->next;
	}
	if (!p->probes) {
		struct loc l = {1, 1, 1};
		script_error(p, l, "No probes to attach");
		return -1;
	}
	return 0;
}

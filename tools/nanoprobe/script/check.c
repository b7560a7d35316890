/* SPDX-License-Identifier: MIT */
/*
 * The type checker: every expression gets its type, every map one shape
 * (keys, and a value or an aggregation), every $variable one type per
 * probe; builtins are checked against the probes they appear in. What
 * bpftrace has but nanoprobe cannot do in user space is refused by name.
 *
 * Maps may be used before the statement that gives them their type
 * (`uretprobe /@start[tid]/` above `uprobe { @start[tid] = nsecs }`), so
 * the program is walked twice: the first pass only learns map types, the
 * second checks everything.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/vm.h"
#include "arch/arch.h" /* NP_USDT_MAX_ARGS */
#include "ast.h"
#include "format.h"

struct checker {
	struct program *p;
	struct probe *pr;
	bool strict; /* the second pass: report */
};

static const struct type T_U64 = {T_INT, false, 0, 0};
static const struct type T_S64 = {T_INT, true, 0, 0};
static const struct type T_STRING = {T_STR, false, 0, 0};

uint32_t type_size(const struct type *t)
{
	switch (t->t) {
	case T_INT: case T_FUNC: case T_PROBE: return 8;
	case T_USYM: return 16;
	case T_STR: return NP_VM_STR;
	case T_USTACK: return 8 + 8 * t->frames;
	case T_BUF: return 8 + ((t->blen + 7) & ~7u);
	case T_NONE: return 0;
	}
	return 0;
}

const char *type_name(const struct type *t)
{
	switch (t->t) {
	case T_INT: return t->is_signed ? "int64" : "uint64";
	case T_STR: return "string";
	case T_USTACK: return "ustack";
	case T_USYM: return "usym";
	case T_FUNC: return "func";
	case T_PROBE: return "probe";
	case T_BUF: return "buffer";
	case T_NONE: return "none";
	}
	return "?";
}

static bool same_type(const struct type *a, const struct type *b)
{
	return a->t == b->t && (a->t != T_USTACK || a->frames == b->frames) &&
	       (a->t != T_BUF || a->blen == b->blen);
}

static int fail(struct checker *c, struct loc at, const char *fmt, const char *a, const char *b)
{
	if (c->strict)
		script_error(c->p, at, fmt, a, b);
	return -1;
}

/* --- what applies where ----------------------------------------------------- */

static bool probe_all(const struct probe *pr, bool (*ok)(enum probe_kind))
{
	for (const struct attach *a = pr->attach; a; a = a->next)
		if (!ok(a->kind))
			return false;
	return true;
}

static bool is_entry(enum probe_kind k) { return k == PK_UPROBE; }
static bool is_return(enum probe_kind k) { return k == PK_URETPROBE; }
static bool is_uprobe(enum probe_kind k) { return k == PK_UPROBE || k == PK_URETPROBE; }
static bool is_hit(enum probe_kind k) { return is_uprobe(k) || k == PK_USDT; }
static bool has_args(enum probe_kind k) { return k == PK_UPROBE || k == PK_USDT; }
static bool is_usdt(enum probe_kind k) { return k == PK_USDT; }

static const char *first_kind(const struct probe *pr)
{
	switch (pr->attach->kind) {
	case PK_UPROBE: return "uprobe";
	case PK_URETPROBE: return "uretprobe";
	case PK_BEGIN: return "BEGIN";
	case PK_END: return "END";
	case PK_INTERVAL: return "interval";
	case PK_USDT: return "usdt";
	}
	return "?";
}

/* Builtins bpftrace has that read the kernel: refused by name. */
static const char *const kernel_builtins[] = {
	"kstack", "curtask", "cgroup", "ctx", "args", "jiffies", "numaid", "username", "cpid",
	"rand", "return",
};
static const char *const kernel_calls[] = {
	"kstack", "ksym", "kaddr", "kptr", "system", "cat", "signal", "override", "reg", "join",
	"ntop", "cgroupid", "macaddr", "strftime", "path", "sizeof", "offsetof", "uaddr",
	"cgroup_path", "skboutput", "pton", "unwatch", "percpu_kaddr", "bswap", "len",
};

static int builtin(struct checker *c, struct node *n)
{
	const char *s = n->name;
	struct probe *pr = c->pr;
	if (!strcmp(s, "pid") || !strcmp(s, "tid") || !strcmp(s, "nsecs") || !strcmp(s, "elapsed") ||
	    !strcmp(s, "cpu") || !strcmp(s, "uid") || !strcmp(s, "gid")) {
		n->type = T_U64;
		return 0;
	}
	if (!strcmp(s, "comm")) {
		n->type = T_STRING;
		return 0;
	}
	if (!strcmp(s, "probe")) {
		n->type.t = T_PROBE;
		return 0;
	}
	if (!strcmp(s, "func")) {
		n->type.t = T_FUNC;
		if (!probe_all(pr, is_uprobe))
			return fail(c, n->loc, "The func builtin can not be used with '%s' probes",
				    first_kind(pr), NULL);
		return 0;
	}
	if (!strcmp(s, "ustack")) {
		n->type.t = T_USTACK;
		n->type.frames = NP_VM_MAX_FRAMES;
		pr->uses_ustack = true;
		if (!probe_all(pr, is_hit))
			return fail(c, n->loc, "The ustack builtin can not be used with '%s' probes",
				    first_kind(pr), NULL);
		return 0;
	}
	if (!strcmp(s, "retval")) {
		n->type = T_U64;
		if (!probe_all(pr, is_return))
			return fail(c, n->loc, "The retval builtin can only be used with 'uretprobe' "
					       "probes%s%s", "", "");
		return 0;
	}
	bool arg = !strncmp(s, "arg", 3), sarg = !strncmp(s, "sarg", 4);
	if (arg || sarg) {
		const char *digits = s + (arg ? 3 : 4);
		char *end;
		long i = strtol(digits, &end, 10);
		if (*digits && !*end && i >= 0) {
			n->type = T_U64;
			n->ival = i;
			/* a USDT probe's arguments are its note's, up to 12; a
			 * uprobe's the calling convention's registers */
			if (arg && probe_all(pr, is_usdt)) {
				if (i >= NP_USDT_MAX_ARGS)
					return fail(c, n->loc, "%s: a USDT probe has at most 12 "
							       "arguments (arg0..arg11)%s", s, "");
			} else if (arg && i > 5) {
				return fail(c, n->loc, "%s: only arg0..arg5 are in registers (use sargN for "
						       "arguments on the stack)%s", s, "");
			}
			if (sarg && i > 1000)
				return fail(c, n->loc, "%s: too far up the stack%s", s, "");
			if (!probe_all(pr, arg ? has_args : is_entry))
				return fail(c, n->loc, "The %s builtin can only be used with %s probes",
					    s, arg ? "'uprobe' and 'usdt'" : "'uprobe'");
			if (arg && i > pr->max_arg)
				pr->max_arg = (int)i;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(kernel_builtins) / sizeof(*kernel_builtins); i++)
		if (!strcmp(s, kernel_builtins[i]))
			return fail(c, n->loc, "%s is not supported by nanoprobe: it needs the kernel "
					       "or is not available in user space%s", s, "");
	return fail(c, n->loc, "Unknown identifier: '%s'%s", s, "");
}

/* --- maps and variables ------------------------------------------------------- */

static struct map_info *map_of(struct checker *c, struct node *n)
{
	for (int i = 0; i < c->p->nmaps; i++)
		if (!strcmp(c->p->maps[i].name, n->name)) {
			n->map = i;
			return &c->p->maps[i];
		}
	struct map_info *v = realloc(c->p->maps, (size_t)(c->p->nmaps + 1) * sizeof(*v));
	if (!v)
		abort();
	c->p->maps = v;
	struct map_info *m = &v[c->p->nmaps];
	memset(m, 0, sizeof(*m));
	m->name = n->name;
	m->loc = n->loc;
	m->nkeys = -1;
	n->map = c->p->nmaps++;
	return m;
}

static int check_expr(struct checker *c, struct node *n);

/* The keys of a map reference against the map's. */
static int map_keys(struct checker *c, struct node *n, struct map_info *m)
{
	int nk = n->nargs < 0 ? 0 : n->nargs;
	for (int i = 0; i < nk; i++) {
		if (check_expr(c, n->args[i]))
			return -1;
		enum ty t = n->args[i]->type.t;
		if (t == T_NONE)
			return fail(c, n->args[i]->loc, "%s cannot be a map key%s",
				    type_name(&n->args[i]->type), "");
	}
	if (m->nkeys < 0) {
		m->nkeys = nk;
		m->keys = ast_alloc(c->p, sizeof(*m->keys) * (size_t)(nk ? nk : 1));
		for (int i = 0; i < nk; i++)
			m->keys[i] = n->args[i]->type;
		return 0;
	}
	if (m->nkeys != nk)
		return fail(c, n->loc, "Argument mismatch for %s: trying to access with %s arguments "
				       "when map expects a different number", m->name,
			    nk ? "more or fewer" : "no");
	for (int i = 0; i < nk; i++)
		if (!same_type(&m->keys[i], &n->args[i]->type))
			return fail(c, n->args[i]->loc, "Argument mismatch for %s: trying to access with "
							"%s key", m->name, type_name(&n->args[i]->type));
	return 0;
}

static struct var *var_of(struct checker *c, struct node *n, bool define)
{
	struct probe *pr = c->pr;
	for (int i = 0; i < pr->nvars; i++)
		if (!strcmp(pr->vars[i].name, n->name)) {
			n->var = i;
			return &pr->vars[i];
		}
	if (!define)
		return NULL;
	struct var *v = realloc(pr->vars, (size_t)(pr->nvars + 1) * sizeof(*v));
	if (!v)
		abort();
	pr->vars = v;
	memset(&v[pr->nvars], 0, sizeof(*v));
	v[pr->nvars].name = n->name;
	n->var = pr->nvars++;
	return &v[n->var];
}

/* --- calls -------------------------------------------------------------------- */

static int want_args(struct checker *c, struct node *n, int lo, int hi)
{
	if (n->nargs < lo || n->nargs > hi) {
		char want[32];
		snprintf(want, sizeof(want), lo == hi ? "%d" : "%d to %d", lo, hi);
		return fail(c, n->loc, "%s() takes %s arguments", n->name, want);
	}
	for (int i = 0; i < n->nargs; i++)
		if (check_expr(c, n->args[i]))
			return -1;
	return 0;
}

static int want_int(struct checker *c, struct node *arg, const char *fn)
{
	if (arg->type.t != T_INT)
		return fail(c, arg->loc, "%s() expects an integer argument, not %s", fn,
			    type_name(&arg->type));
	return 0;
}

static int want_const(struct checker *c, struct node *arg, const char *fn, int64_t *v)
{
	if (arg->kind == N_INT) {
		*v = arg->ival;
		return 0;
	}
	if (arg->kind == N_UNOP && arg->op == OP_NEG && arg->a->kind == N_INT) {
		*v = -arg->a->ival;
		return 0;
	}
	return fail(c, arg->loc, "%s: expects an integer literal%s", fn, "");
}

static bool is_agg(const char *name)
{
	static const char *const aggs[] = {"count", "sum", "avg", "min", "max", "stats", "hist",
					   "lhist"};
	for (size_t i = 0; i < sizeof(aggs) / sizeof(*aggs); i++)
		if (!strcmp(name, aggs[i]))
			return true;
	return false;
}

static int check_printf(struct checker *c, struct node *n)
{
	if (n->nargs < 1 || n->args[0]->kind != N_STR)
		return fail(c, n->loc, "%s() expects a format string as first argument%s", n->name, "");
	for (int i = 1; i < n->nargs; i++)
		if (check_expr(c, n->args[i]))
			return -1;
	char why[160];
	struct type types[32];
	for (int i = 1; i < n->nargs; i++)
		types[i - 1] = n->args[i]->type;
	int bad = format_check(n->args[0]->str, n->args[0]->slen, types, n->nargs - 1, why,
			       sizeof(why));
	if (bad)
		return fail(c, bad > 0 ? n->args[bad]->loc : n->loc, "%s: %s", n->name, why);
	return 0;
}

static int check_call(struct checker *c, struct node *n, bool stmt)
{
	const char *s = n->name;
	if (is_agg(s))
		return fail(c, n->loc, "%s() should be directly assigned to a map%s", s, "");
	if (!strcmp(s, "printf"))
		return check_printf(c, n);
	if (!strcmp(s, "str")) {
		if (want_args(c, n, 1, 2) || want_int(c, n->args[0], s) ||
		    (n->nargs == 2 && want_int(c, n->args[1], s)))
			return -1;
		n->type = T_STRING;
		return 0;
	}
	if (!strcmp(s, "buf")) {
		int64_t len = 64;
		if (want_args(c, n, 1, 2) || want_int(c, n->args[0], s) ||
		    (n->nargs == 2 && want_const(c, n->args[1], s, &len)))
			return -1;
		if (len < 1 || len > 64)
			return fail(c, n->loc, "buf: length must be 1 to 64%s%s", "", "");
		n->type.t = T_BUF;
		n->type.blen = (uint32_t)len;
		return 0;
	}
	if (!strcmp(s, "usym") || !strcmp(s, "uptr")) {
		if (want_args(c, n, 1, 1) || want_int(c, n->args[0], s))
			return -1;
		n->type = !strcmp(s, "uptr") ? T_U64 : (struct type){T_USYM, false, 0, 0};
		c->pr->uses_usym |= n->type.t == T_USYM;
		return 0;
	}
	if (!strcmp(s, "ustack")) {
		int64_t frames = NP_VM_MAX_FRAMES;
		if (want_args(c, n, 0, 2))
			return -1;
		int at = 0;
		if (n->nargs && n->args[0]->kind == N_BUILTIN &&
		    !strcmp(n->args[0]->name, "bpftrace"))
			at = 1;
		else if (n->nargs && n->args[0]->kind == N_BUILTIN)
			return fail(c, n->args[0]->loc, "ustack: only the bpftrace stack mode is "
							"supported, not '%s'", n->args[0]->name, NULL);
		if (n->nargs > at && want_const(c, n->args[at], s, &frames))
			return -1;
		if (frames < 1 || frames > NP_VM_MAX_FRAMES)
			return fail(c, n->loc, "ustack: the depth must be 1 to 127%s%s", "", "");
		n->type.t = T_USTACK;
		n->type.frames = (uint32_t)frames;
		c->pr->uses_ustack = true;
		if (!probe_all(c->pr, is_hit))
			return fail(c, n->loc, "ustack can not be used with '%s' probes", first_kind(c->pr),
				    NULL);
		return 0;
	}
	if (!strcmp(s, "strncmp")) {
		int64_t len;
		if (want_args(c, n, 3, 3) || want_const(c, n->args[2], s, &len))
			return -1;
		if (n->args[0]->type.t != T_STR || n->args[1]->type.t != T_STR)
			return fail(c, n->loc, "strncmp() compares two strings%s%s", "", "");
		n->type = T_U64;
		return 0;
	}
	if (!strcmp(s, "print")) {
		if (n->nargs >= 1 && n->args[0]->kind == N_MAP) {
			struct map_info *m = map_of(c, n->args[0]);
			int64_t v;
			if (n->nargs > 3)
				return fail(c, n->loc, "print() takes a map and up to 2 integers%s%s", "", "");
			for (int i = 1; i < n->nargs; i++)
				if (want_const(c, n->args[i], s, &v) || v < 0)
					return -1 | fail(c, n->args[i]->loc, "print: expects a positive "
									     "integer%s%s", "", "");
			if (n->args[0]->nargs >= 0)
				return fail(c, n->args[0]->loc, "print() expects a map without keys%s%s", "", "");
			if (c->strict && m->use == MU_UNKNOWN)
				return fail(c, n->args[0]->loc, "Undefined map: %s%s", m->name, "");
			return 0;
		}
		if (want_args(c, n, 1, 1))
			return -1;
		if (n->args[0]->type.t == T_NONE)
			return fail(c, n->loc, "print() cannot print a statement%s%s", "", "");
		return 0;
	}
	if (!strcmp(s, "clear") || !strcmp(s, "zero")) {
		if (n->nargs != 1 || n->args[0]->kind != N_MAP || n->args[0]->nargs >= 0)
			return fail(c, n->loc, "%s() expects a map without keys as its argument", s, NULL);
		struct map_info *m = map_of(c, n->args[0]);
		if (c->strict && m->use == MU_UNKNOWN)
			return fail(c, n->args[0]->loc, "Undefined map: %s%s", m->name, "");
		return 0;
	}
	if (!strcmp(s, "delete")) {
		if (n->nargs != 1 || n->args[0]->kind != N_MAP)
			return fail(c, n->loc, "delete() expects a map element as its argument%s%s", "", "");
		struct map_info *m = map_of(c, n->args[0]);
		if (map_keys(c, n->args[0], m))
			return -1;
		if (c->strict && m->use == MU_UNKNOWN)
			return fail(c, n->args[0]->loc, "Undefined map: %s%s", m->name, "");
		return 0;
	}
	if (!strcmp(s, "exit")) {
		return want_args(c, n, 0, 0);
	}
	if (!strcmp(s, "time")) {
		if (want_args(c, n, 0, 1))
			return -1;
		if (n->nargs && n->args[0]->kind != N_STR)
			return fail(c, n->loc, "time() expects a string literal%s%s", "", "");
		return 0;
	}
	(void)stmt;
	for (size_t i = 0; i < sizeof(kernel_calls) / sizeof(*kernel_calls); i++)
		if (!strcmp(s, kernel_calls[i]))
			return fail(c, n->loc, "%s() is not supported by nanoprobe: it needs the kernel, "
					       "or is not available in user space%s", s, "");
	return fail(c, n->loc, "Unknown function: %s%s", s, "");
}

/* --- expressions ---------------------------------------------------------------- */

static int check_binop(struct checker *c, struct node *n)
{
	if (check_expr(c, n->a) || check_expr(c, n->b))
		return -1;
	struct type *l = &n->a->type, *r = &n->b->type;
	bool cmp = n->op == OP_EQ || n->op == OP_NE;
	if (l->t == T_STR && r->t == T_STR && cmp) {
		n->type = T_U64;
		return 0;
	}
	if (l->t != T_INT || r->t != T_INT) {
		char what[64];
		snprintf(what, sizeof(what), "%s and %s", type_name(l), type_name(r));
		return fail(c, n->loc, "Type mismatch for '%s': comparing or combining %s",
			    n->op == OP_EQ ? "==" : n->op == OP_NE ? "!=" : "operator", what);
	}
	bool logical = n->op == OP_AND || n->op == OP_OR;
	bool relational = cmp || n->op == '<' || n->op == '>' || n->op == OP_LE || n->op == OP_GE;
	n->type = T_S64;
	if (!logical && !relational)
		n->type.is_signed = l->is_signed && r->is_signed;
	if (relational || logical)
		n->type.is_signed = false;
	return 0;
}

static int check_expr(struct checker *c, struct node *n)
{
	switch (n->kind) {
	case N_INT:
		n->type = T_S64;
		return 0;
	case N_STR:
		n->type = T_STRING;
		if (n->slen >= NP_VM_STR)
			return fail(c, n->loc, "String is too long (over %s bytes)%s", "63", "");
		return 0;
	case N_BUILTIN:
		return builtin(c, n);
	case N_VAR: {
		struct var *v = var_of(c, n, false);
		if (!v)
			return fail(c, n->loc, "Undefined or undeclared variable: %s%s", n->name, "");
		n->type = v->type;
		return 0;
	}
	case N_MAP: {
		struct map_info *m = map_of(c, n);
		if (map_keys(c, n, m))
			return -1;
		if (m->use == MU_AGG)
			return fail(c, n->loc, "%s holds an aggregation (count, sum, hist...): it can be "
					       "printed, not read in an expression%s", m->name, "");
		if (m->use == MU_UNKNOWN) {
			n->type = T_U64;
			return fail(c, n->loc, "Undefined map: %s%s", m->name, "");
		}
		n->type = m->value;
		return 0;
	}
	case N_CALL:
		return check_call(c, n, false);
	case N_BINOP:
		return check_binop(c, n);
	case N_UNOP:
		if (check_expr(c, n->a))
			return -1;
		if (n->op == OP_INC || n->op == OP_DEC)
			return fail(c, n->loc, "++ and -- are statements here: use @x++ or $x++%s%s", "", "");
		if (n->a->type.t != T_INT)
			return fail(c, n->loc, "Type mismatch: %s on %s", n->op == '!' ? "!" : "operator",
				    type_name(&n->a->type));
		n->type = n->a->type;
		if (n->op == '!')
			n->type.is_signed = false;
		return 0;
	case N_TERNARY:
		if (check_expr(c, n->a) || check_expr(c, n->b) || check_expr(c, n->c))
			return -1;
		if (n->a->type.t != T_INT)
			return fail(c, n->a->loc, "Invalid condition in ternary: %s%s",
				    type_name(&n->a->type), "");
		if (!same_type(&n->b->type, &n->c->type) ||
		    (n->b->type.t != T_INT && n->b->type.t != T_STR))
			return fail(c, n->loc, "Ternary operator must return the same type: have '%s' "
					       "and '%s'", type_name(&n->b->type), type_name(&n->c->type));
		n->type = n->b->type;
		n->type.is_signed = n->b->type.is_signed && n->c->type.is_signed;
		return 0;
	case N_CAST:
		if (check_expr(c, n->a))
			return -1;
		if (n->a->type.t != T_INT)
			return fail(c, n->loc, "Cannot cast from %s%s", type_name(&n->a->type), "");
		if (n->op == '*')
			return fail(c, n->loc, "a pointer cast is only good to dereference: *(int32 *)p%s%s",
				    "", "");
		n->type = (struct type){T_INT, n->cast_signed, 0, 0};
		return 0;
	case N_DEREF:
		if (check_expr(c, n->a))
			return -1;
		if (n->a->type.t != T_INT)
			return fail(c, n->loc, "Cannot dereference %s%s", type_name(&n->a->type), "");
		n->type = (struct type){T_INT, n->cast_signed, 0, 0};
		return 0;
	default:
		return fail(c, n->loc, "not an expression%s%s", "", "");
	}
}

/* --- statements ------------------------------------------------------------------ */

static int check_agg(struct checker *c, struct node *target, struct node *call, struct map_info *m)
{
	static const struct { const char *name; int agg, nargs; } aggs[] = {
		{"count", VM_AGG_COUNT, 0}, {"sum", VM_AGG_SUM, 1}, {"min", VM_AGG_MIN, 1},
		{"max", VM_AGG_MAX, 1}, {"avg", VM_AGG_AVG, 1}, {"stats", VM_AGG_STATS, 1},
		{"hist", VM_AGG_HIST, 1}, {"lhist", VM_AGG_LHIST, 4},
	};
	int agg = 0, want = 0;
	for (size_t i = 0; i < sizeof(aggs) / sizeof(*aggs); i++)
		if (!strcmp(call->name, aggs[i].name)) {
			agg = aggs[i].agg;
			want = aggs[i].nargs;
		}
	if (want_args(c, call, want, want) || (want && want_int(c, call->args[0], call->name)))
		return -1;
	int64_t lmin = 0, lmax = 0, lstep = 0;
	if (agg == VM_AGG_LHIST) {
		if (want_const(c, call->args[1], "lhist", &lmin) ||
		    want_const(c, call->args[2], "lhist", &lmax) ||
		    want_const(c, call->args[3], "lhist", &lstep))
			return -1;
		if (lstep <= 0 || lmax <= lmin || lmin < 0)
			return fail(c, call->loc, "lhist: invalid min, max or step (min >= 0, max > min, "
						  "step > 0)%s%s", "", "");
		if ((lmax - lmin) / lstep > NP_VM_LHIST_MAX || (lmax - lmin) / lstep < 1)
			return fail(c, call->loc, "lhist: too many buckets (at most 1000)%s%s", "", "");
	}
	if (m->use == MU_VALUE || (m->use == MU_AGG && m->agg != agg) ||
	    (agg == VM_AGG_LHIST && m->use == MU_AGG &&
	     (m->lmin != lmin || m->lmax != lmax || m->lstep != lstep)))
		return fail(c, target->loc, "Type mismatch for %s: trying to assign a different "
					    "value or aggregation%s", m->name, "");
	m->use = MU_AGG;
	m->agg = agg;
	m->lmin = lmin;
	m->lmax = lmax;
	m->lstep = lstep;
	if (want)
		m->sum_signed = call->args[0]->type.is_signed;
	call->type.t = T_NONE;
	return 0;
}

static int assign_map(struct checker *c, struct node *n)
{
	struct node *target = n->a;
	struct map_info *m = map_of(c, target);
	if (map_keys(c, target, m))
		return -1;
	if (n->op == '=' && n->b->kind == N_CALL && is_agg(n->b->name))
		return check_agg(c, target, n->b, m);
	if (check_expr(c, n->b))
		return -1;
	struct type vt = n->b->type;
	if (vt.t == T_NONE)
		return fail(c, n->b->loc, "this expression has no value to assign%s%s", "", "");
	if (n->op != '=' && vt.t != T_INT)
		return fail(c, n->loc, "compound assignment needs integers%s%s", "", "");
	if (m->use == MU_AGG)
		return fail(c, target->loc, "Type mismatch for %s: trying to assign a value to an "
					    "aggregation%s", m->name, "");
	if (m->use == MU_VALUE && !same_type(&m->value, &vt))
		return fail(c, target->loc, "Type mismatch for %s: trying to assign value of type "
					    "'%s' when map already contains a different type",
			    m->name, type_name(&vt));
	if (m->use == MU_UNKNOWN)
		m->value = vt;
	m->use = MU_VALUE;
	return 0;
}

static int check_stmts(struct checker *c, struct node *s);

static int check_stmt(struct checker *c, struct node *s)
{
	switch (s->kind) {
	case N_ASSIGN:
		if (s->a->kind == N_MAP)
			return assign_map(c, s);
		if (check_expr(c, s->b))
			return -1;
		if (s->b->type.t == T_NONE)
			return fail(c, s->b->loc, "this expression has no value to assign%s%s", "", "");
		{
			struct var *v = var_of(c, s->a, s->op == '=');
			if (!v)
				return fail(c, s->a->loc, "Undefined or undeclared variable: %s%s",
					    s->a->name, "");
			if (v->type.t != T_NONE && !same_type(&v->type, &s->b->type))
				return fail(c, s->loc, "Type mismatch for %s: trying to assign value of "
						       "type '%s' when variable already has another type",
					    v->name, type_name(&s->b->type));
			if (s->op != '=' && v->type.t != T_INT)
				return fail(c, s->loc, "compound assignment needs integers%s%s", "", "");
			v->type = s->b->type;
			s->a->type = v->type;
		}
		return 0;
	case N_IF:
		if (check_expr(c, s->a))
			return -1;
		if (s->a->type.t != T_INT)
			return fail(c, s->a->loc, "Invalid condition in if(): %s%s", type_name(&s->a->type), "");
		return check_stmts(c, s->body) || (s->c && check_stmts(c, s->c)) ? -1 : 0;
	case N_UNROLL:
		return check_stmts(c, s->body);
	case N_RETURN:
		return 0;
	case N_EXPR:
		if (s->a->kind == N_CALL)
			return check_call(c, s->a, true);
		return check_expr(c, s->a);
	default:
		return fail(c, s->loc, "not a statement%s%s", "", "");
	}
}

/* The first pass goes on past errors: a map typed further down is still
 * learned. */
static int check_stmts(struct checker *c, struct node *s)
{
	int rc = 0;
	for (; s; s = s->next)
		if (check_stmt(c, s)) {
			rc = -1;
			if (c->strict)
				break;
		}
	return rc;
}

static int check_probe(struct checker *c, struct probe *pr)
{
	c->pr = pr;
	pr->max_arg = -1;
	/* variables are per probe and typed by their first assignment in order */
	free(pr->vars);
	pr->vars = NULL;
	pr->nvars = 0;
	if (pr->pred) {
		if (check_expr(c, pr->pred))
			return -1;
		if (pr->pred->type.t != T_INT)
			return fail(c, pr->pred->loc, "Invalid type for predicate: %s%s",
				    type_name(&pr->pred->type), "");
	}
	return check_stmts(c, pr->body);
}

int script_check(struct program *p)
{
	struct checker c = {.p = p};
	/* learn the maps' types, quietly; then check for real */
	for (int pass = 0; pass < 2; pass++) {
		c.strict = pass == 1;
		for (struct probe *pr = p->probes; pr; pr = pr->next)
			if (check_probe(&c, pr) && c.strict)
				return -1;
	}
	return 0;
}

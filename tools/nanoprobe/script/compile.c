/* SPDX-License-Identifier: MIT */
/*
 * Code generation: one block of bytecode per probe (vm.h), in the order
 * of the program's probes.
 *
 * Integers (and what is an id: func, probe) live in registers, allocated
 * as a stack per statement; strings, stacks, buffers and symbols (an
 * address and its process's pid, as bpftrace's usym) live in the thread's
 * scratch, allocated once per block (a bump
 * allocator, so a value stays put for the whole block: $variables, keys,
 * printf arguments). Jumps only go forward: if/else, the ternary, && and
 * || and return are all branches to later code, and unroll is expanded.
 *
 * A predicate comparing an expression with a constant becomes one
 * compare-and-branch instruction: the rejecting predicate is then an
 * argument load and that branch.
 */
#include "compile.h"

#include <stdlib.h>
#include <string.h>

struct cg {
	struct program *p;
	struct compiled *out;
	struct np_vm_insn *code;
	size_t n, cap;
	uint8_t *consts;
	size_t nconst, constcap;
	uint32_t scratch, scratch_max;
	uint32_t max_record;
	int regs;
	struct probe *pr;
	size_t *returns; /* jumps to the block's end */
	size_t nreturns, capreturns;
	bool failed;
};

static void oom(void)
{
	abort();
}

static size_t emit_w(struct cg *g, int op, int dst, int a, int b, int32_t imm, uint32_t e0,
		     uint32_t e1)
{
	if (g->n + 2 > g->cap) {
		g->cap = g->cap ? g->cap * 2 : 256;
		g->code = realloc(g->code, g->cap * sizeof(*g->code));
		if (!g->code)
			oom();
	}
	size_t at = g->n;
	g->code[g->n++] = (struct np_vm_insn){(uint8_t)op, (uint8_t)dst, (uint8_t)a, (uint8_t)b, imm};
	if (np_vm_op_wide((unsigned)op)) {
		uint64_t x = (uint64_t)e0 | (uint64_t)e1 << 32;
		memcpy(&g->code[g->n++], &x, 8);
	}
	return at;
}

static size_t emit(struct cg *g, int op, int dst, int a, int b, int32_t imm)
{
	return emit_w(g, op, dst, a, b, imm, 0, 0);
}

/* Point the jump at `at` to the next instruction to be emitted. */
static void patch(struct cg *g, size_t at)
{
	size_t after = at + 1 + (size_t)np_vm_op_wide(g->code[at].op);
	g->code[at].imm = (int32_t)(g->n - after);
}

static int reg(struct cg *g, struct loc at)
{
	if (g->regs >= NP_VM_NREGS) {
		if (!g->failed)
			script_error(g->p, at, "expression too complex (more than %d values at once)",
				     NP_VM_NREGS);
		g->failed = true;
		return NP_VM_NREGS - 1;
	}
	return g->regs++;
}

static uint32_t scratch(struct cg *g, uint32_t size)
{
	uint32_t at = g->scratch;
	g->scratch += (size + 7u) & ~7u;
	if (g->scratch > g->scratch_max)
		g->scratch_max = g->scratch;
	return at;
}

/* A constant of `size` bytes, zero-padded: its offset in the pool. */
static uint32_t constant(struct cg *g, const void *bytes, size_t n, size_t size)
{
	if (g->nconst + size > g->constcap) {
		g->constcap = (g->constcap + size) * 2;
		g->consts = realloc(g->consts, g->constcap);
		if (!g->consts)
			oom();
	}
	uint32_t at = (uint32_t)g->nconst;
	memset(g->consts + at, 0, size);
	memcpy(g->consts + at, bytes, n < size ? n : size);
	g->nconst += size;
	return at;
}

static bool in_reg(const struct type *t)
{
	return t->t == T_INT || t->t == T_FUNC || t->t == T_PROBE;
}

/* A value: in a register, or in scratch. */
struct val {
	int reg;
	uint32_t off;
};

static struct val gen(struct cg *g, struct node *n);

static void load_imm(struct cg *g, int r, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		emit(g, VM_MOVI, r, 0, 0, (int32_t)v);
	else
		emit_w(g, VM_MOVW, r, 0, 0, 0, (uint32_t)v, (uint32_t)((uint64_t)v >> 32));
}

/* Store value v of type t at scratch + at. */
static void store(struct cg *g, const struct type *t, struct val v, uint32_t at)
{
	if (in_reg(t))
		emit(g, VM_STS, 0, v.reg, 0, (int32_t)at);
	else if (v.off != at)
		emit_w(g, VM_COPY, 0, 0, 0, (int32_t)at, v.off, type_size(t));
}

static uint32_t map_key(struct cg *g, struct node *m)
{
	const struct map_info *mi = &g->p->maps[m->map];
	uint32_t size = 0;
	for (int i = 0; i < mi->nkeys; i++)
		size += type_size(&mi->keys[i]);
	uint32_t at = scratch(g, size), pos = 0;
	for (int i = 0; i < m->nargs; i++) {
		int save = g->regs;
		struct node *k = m->args[i];
		struct val v = gen(g, k);
		store(g, &k->type, v, at + pos);
		pos += type_size(&k->type);
		g->regs = save;
	}
	return at;
}

static int compare_op(int op, bool is_signed)
{
	switch (op) {
	case OP_EQ: return VM_EQ;
	case OP_NE: return VM_NE;
	case '<': return is_signed ? VM_LTS : VM_LTU;
	case OP_LE: return is_signed ? VM_LES : VM_LEU;
	case '>': return is_signed ? VM_GTS : VM_GTU;
	case OP_GE: return is_signed ? VM_GES : VM_GEU;
	}
	return -1;
}

static int arith_op(int op, bool is_signed)
{
	switch (op) {
	case '+': return VM_ADD;
	case '-': return VM_SUB;
	case '*': return VM_MUL;
	case '/': return is_signed ? VM_DIVS : VM_DIVU;
	case '%': return is_signed ? VM_MODS : VM_MODU;
	case '&': return VM_AND;
	case '|': return VM_OR;
	case '^': return VM_XOR;
	case OP_SHL: return VM_SHL;
	case OP_SHR: return is_signed ? VM_SAR : VM_SHR;
	}
	return -1;
}

/* && and ||: r = a && b as 0 or 1, b evaluated only when it decides. */
static struct val gen_logical(struct cg *g, struct node *n)
{
	struct val a = gen(g, n->a);
	size_t skip = emit(g, n->op == OP_AND ? VM_JZ : VM_JNZ, 0, a.reg, 0, 0);
	int save = g->regs;
	struct val b = gen(g, n->b);
	emit(g, VM_MOV, a.reg, b.reg, 0, 0);
	g->regs = save;
	patch(g, skip);
	emit(g, VM_LNOT, a.reg, a.reg, 0, 0);
	emit(g, VM_LNOT, a.reg, a.reg, 0, 0);
	return a;
}

static struct val gen_binop(struct cg *g, struct node *n)
{
	if (n->op == OP_AND || n->op == OP_OR)
		return gen_logical(g, n);
	struct val a = gen(g, n->a), b = gen(g, n->b), r = {-1, 0};
	if (n->a->type.t == T_STR) {
		r.reg = reg(g, n->loc);
		emit_w(g, VM_STREQ, r.reg, 0, 0, (int32_t)a.off, b.off, NP_VM_STR);
		if (n->op == OP_NE)
			emit(g, VM_LNOT, r.reg, r.reg, 0, 0);
		return r;
	}
	bool sig = n->a->type.is_signed && n->b->type.is_signed;
	int op = compare_op(n->op, sig);
	if (op < 0)
		op = arith_op(n->op, sig);
	emit(g, op, a.reg, a.reg, b.reg, 0);
	g->regs = a.reg + 1;
	return a;
}

static struct val gen_ternary(struct cg *g, struct node *n)
{
	struct val res = {-1, 0};
	bool blob = !in_reg(&n->type);
	if (blob)
		res.off = scratch(g, type_size(&n->type));
	else
		res.reg = reg(g, n->loc);
	int save = g->regs;
	struct val c = gen(g, n->a);
	size_t to_else = emit(g, VM_JZ, 0, c.reg, 0, 0);
	g->regs = save;
	struct val b = gen(g, n->b);
	if (blob)
		store(g, &n->type, b, res.off);
	else
		emit(g, VM_MOV, res.reg, b.reg, 0, 0);
	g->regs = save;
	size_t to_end = emit(g, VM_JMP, 0, 0, 0, 0);
	patch(g, to_else);
	struct val e = gen(g, n->c);
	if (blob)
		store(g, &n->type, e, res.off);
	else
		emit(g, VM_MOV, res.reg, e.reg, 0, 0);
	g->regs = save;
	patch(g, to_end);
	return res;
}

static struct val gen_builtin(struct cg *g, struct node *n)
{
	struct val v = {-1, 0};
	const char *s = n->name;
	if (n->type.t == T_STR) { /* comm */
		v.off = scratch(g, NP_VM_STR);
		emit_w(g, VM_COMM, 0, 0, 0, (int32_t)v.off, 0, NP_VM_STR);
		return v;
	}
	if (n->type.t == T_USTACK) {
		v.off = scratch(g, type_size(&n->type));
		emit_w(g, VM_USTACK, 0, 0, 0, (int32_t)v.off, n->type.frames, type_size(&n->type));
		return v;
	}
	v.reg = reg(g, n->loc);
	static const struct { const char *name; int b; } builtins[] = {
		{"pid", VM_B_PID}, {"tid", VM_B_TID}, {"nsecs", VM_B_NSECS},
		{"elapsed", VM_B_ELAPSED}, {"cpu", VM_B_CPU}, {"uid", VM_B_UID}, {"gid", VM_B_GID},
		{"func", VM_B_FUNC}, {"probe", VM_B_PROBE},
	};
	for (size_t i = 0; i < sizeof(builtins) / sizeof(*builtins); i++)
		if (!strcmp(s, builtins[i].name)) {
			emit(g, VM_BUILTIN, v.reg, 0, 0, builtins[i].b);
			return v;
		}
	if (!strcmp(s, "retval"))
		emit(g, VM_RETVAL, v.reg, 0, 0, 0);
	else if (!strncmp(s, "sarg", 4))
		emit(g, VM_SARG, v.reg, 0, 0, (int32_t)n->ival);
	else
		emit(g, VM_ARG, v.reg, 0, 0, (int32_t)n->ival);
	return v;
}

static struct val gen_call(struct cg *g, struct node *n)
{
	struct val v = {-1, 0};
	const char *s = n->name;
	if (!strcmp(s, "uptr"))
		return gen(g, n->args[0]);
	if (!strcmp(s, "usym")) { /* the address, then whose it is */
		struct val a = gen(g, n->args[0]);
		v.off = scratch(g, type_size(&n->type));
		emit(g, VM_STS, 0, a.reg, 0, (int32_t)v.off);
		emit(g, VM_BUILTIN, a.reg, 0, 0, VM_B_PID);
		emit(g, VM_STS, 0, a.reg, 0, (int32_t)(v.off + 8));
		g->regs = a.reg;
		return v;
	}
	if (!strcmp(s, "ustack")) {
		v.off = scratch(g, type_size(&n->type));
		emit_w(g, VM_USTACK, 0, 0, 0, (int32_t)v.off, n->type.frames, type_size(&n->type));
		return v;
	}
	if (!strcmp(s, "str")) {
		struct val a = gen(g, n->args[0]);
		int b = 0xff;
		if (n->nargs == 2)
			b = gen(g, n->args[1]).reg;
		v.off = scratch(g, NP_VM_STR);
		emit_w(g, VM_STR, 0, a.reg, b, (int32_t)v.off, 0, NP_VM_STR);
		g->regs = a.reg;
		return v;
	}
	if (!strcmp(s, "buf")) {
		struct val a = gen(g, n->args[0]);
		int b = reg(g, n->loc);
		load_imm(g, b, n->type.blen);
		v.off = scratch(g, type_size(&n->type));
		emit_w(g, VM_BUF, 0, a.reg, b, (int32_t)v.off, 0, type_size(&n->type));
		g->regs = a.reg;
		return v;
	}
	if (!strcmp(s, "strncmp")) {
		struct val a = gen(g, n->args[0]), b = gen(g, n->args[1]);
		int64_t len = n->args[2]->ival;
		v.reg = reg(g, n->loc);
		emit_w(g, VM_STREQ, v.reg, 0, 0, (int32_t)a.off, b.off,
		       len < NP_VM_STR ? (uint32_t)(len < 0 ? 0 : len) : NP_VM_STR);
		emit(g, VM_LNOT, v.reg, v.reg, 0, 0);
		return v;
	}
	v.reg = reg(g, n->loc); /* a call used for its effect only */
	return v;
}

static struct val gen(struct cg *g, struct node *n)
{
	struct val v = {-1, 0};
	switch (n->kind) {
	case N_INT:
		v.reg = reg(g, n->loc);
		load_imm(g, v.reg, n->ival);
		return v;
	case N_STR:
		v.off = scratch(g, NP_VM_STR);
		emit_w(g, VM_CONST, 0, 0, 0, (int32_t)v.off, constant(g, n->str, n->slen, NP_VM_STR),
		       NP_VM_STR);
		return v;
	case N_BUILTIN:
		return gen_builtin(g, n);
	case N_VAR: {
		struct var *var = &g->pr->vars[n->var];
		if (!in_reg(&n->type)) {
			v.off = var->slot;
			return v;
		}
		v.reg = reg(g, n->loc);
		emit(g, VM_LDS, v.reg, 0, 0, (int32_t)var->slot);
		return v;
	}
	case N_MAP: {
		uint32_t key = map_key(g, n);
		v.reg = reg(g, n->loc);
		uint32_t val = 0;
		if (!in_reg(&n->type))
			val = v.off = scratch(g, type_size(&n->type));
		emit_w(g, VM_MGET, v.reg, 0, 0, n->map, key, val);
		return v;
	}
	case N_CALL:
		return gen_call(g, n);
	case N_BINOP:
		return gen_binop(g, n);
	case N_UNOP:
		v = gen(g, n->a);
		emit(g, n->op == '!' ? VM_LNOT : n->op == '~' ? VM_BNOT : VM_NEG, v.reg, v.reg, 0, 0);
		return v;
	case N_TERNARY:
		return gen_ternary(g, n);
	case N_CAST:
		v = gen(g, n->a);
		if (n->ival < 8)
			emit(g, n->cast_signed ? VM_SEXT : VM_ZEXT, v.reg, v.reg, 0, (int32_t)n->ival);
		return v;
	case N_DEREF:
		v = gen(g, n->a);
		emit(g, VM_READ, v.reg, v.reg, 0, (int32_t)n->ival);
		if (n->cast_signed && n->ival < 8)
			emit(g, VM_SEXT, v.reg, v.reg, 0, (int32_t)n->ival);
		return v;
	default:
		v.reg = reg(g, n->loc);
		return v;
	}
}

/* --- statements ---------------------------------------------------------------- */

static void record_size(struct cg *g, uint32_t size)
{
	if (size > g->max_record)
		g->max_record = size;
}

static int add_layout(struct layout *l, struct node **args, int n)
{
	l->n = n;
	l->size = 0;
	for (int i = 0; i < n && i < FMT_MAX_ARGS; i++) {
		l->types[i] = args[i]->type;
		l->off[i] = l->size;
		l->size += type_size(&args[i]->type);
	}
	return 0;
}

/* The values of args side by side in scratch: the payload's offset. */
static uint32_t payload(struct cg *g, struct node **args, int n, uint32_t *size)
{
	struct layout l;
	add_layout(&l, args, n);
	uint32_t at = scratch(g, l.size);
	for (int i = 0; i < n; i++) {
		int save = g->regs;
		store(g, &args[i]->type, gen(g, args[i]), at + l.off[i]);
		g->regs = save;
	}
	*size = l.size;
	record_size(g, l.size);
	return at;
}

static void gen_printf(struct cg *g, struct node *n)
{
	struct compiled *o = g->out;
	o->fmts = realloc(o->fmts, (size_t)(o->nfmts + 1) * sizeof(*o->fmts));
	if (!o->fmts)
		oom();
	struct fmt_entry *f = &o->fmts[o->nfmts];
	f->fmt = n->args[0]->str;
	f->flen = n->args[0]->slen;
	add_layout(&f->args, n->args + 1, n->nargs - 1);
	uint32_t size;
	uint32_t at = payload(g, n->args + 1, n->nargs - 1, &size);
	emit_w(g, VM_EMIT, VM_REC_PRINTF, 0, 0, o->nfmts++, at, size);
}

static void gen_print(struct cg *g, struct node *n)
{
	struct compiled *o = g->out;
	if (n->args[0]->kind == N_MAP) {
		uint32_t at = scratch(g, 16);
		int r = reg(g, n->loc);
		for (int i = 0; i < 2; i++) {
			load_imm(g, r, n->nargs > i + 1 ? n->args[i + 1]->ival : 0);
			emit(g, VM_STS, 0, r, 0, (int32_t)(at + 8u * (uint32_t)i));
		}
		record_size(g, 16);
		emit_w(g, VM_EMIT, VM_REC_PRINT, 0, 0, n->args[0]->map, at, 16);
		return;
	}
	o->values = realloc(o->values, (size_t)(o->nvalues + 1) * sizeof(*o->values));
	if (!o->values)
		oom();
	add_layout(&o->values[o->nvalues], n->args, 1);
	uint32_t size, at = payload(g, n->args, 1, &size);
	emit_w(g, VM_EMIT, VM_REC_VALUE, 0, 0, o->nvalues++, at, size);
}

static void gen_call_stmt(struct cg *g, struct node *n)
{
	const char *s = n->name;
	struct compiled *o = g->out;
	if (!strcmp(s, "printf")) {
		gen_printf(g, n);
	} else if (!strcmp(s, "print")) {
		gen_print(g, n);
	} else if (!strcmp(s, "exit")) {
		emit_w(g, VM_EMIT, VM_REC_EXIT, 0, 0, 0, 0, 0);
	} else if (!strcmp(s, "time")) {
		o->times = realloc(o->times, (size_t)(o->ntimes + 1) * sizeof(*o->times));
		if (!o->times)
			oom();
		o->times[o->ntimes] = n->nargs ? n->args[0]->str : "%H:%M:%S\n";
		emit_w(g, VM_EMIT, VM_REC_TIME, 0, 0, o->ntimes++, 0, 0);
	} else if (!strcmp(s, "clear") || !strcmp(s, "zero")) {
		emit_w(g, VM_EMIT, s[0] == 'c' ? VM_REC_CLEAR : VM_REC_ZERO, 0, 0, n->args[0]->map, 0, 0);
	} else if (!strcmp(s, "delete")) {
		uint32_t key = map_key(g, n->args[0]);
		emit_w(g, VM_MDEL, 0, 0, 0, n->args[0]->map, key, 0);
	} else {
		gen(g, n);
	}
}

static void gen_assign_var(struct cg *g, struct node *s)
{
	struct var *v = &g->pr->vars[s->a->var];
	if (!v->slotted) {
		v->slot = scratch(g, type_size(&v->type));
		v->slotted = true;
	}
	if (s->op == '=') {
		store(g, &v->type, gen(g, s->b), v->slot);
		return;
	}
	int r = reg(g, s->loc);
	emit(g, VM_LDS, r, 0, 0, (int32_t)v->slot);
	struct val b = gen(g, s->b);
	emit(g, arith_op(s->op, v->type.is_signed && s->b->type.is_signed), r, r, b.reg, 0);
	emit(g, VM_STS, 0, r, 0, (int32_t)v->slot);
}

static void gen_assign_map(struct cg *g, struct node *s)
{
	struct node *m = s->a;
	const struct map_info *mi = &g->p->maps[m->map];
	uint32_t key = map_key(g, m);
	if (mi->use == MU_AGG) {
		struct node *call = s->b;
		int r = call->nargs ? gen(g, call->args[0]).reg : reg(g, s->loc);
		emit_w(g, VM_AGG, 0, r, 0, m->map, key, 0);
		return;
	}
	if (s->op == '=') {
		struct val v = gen(g, s->b);
		if (in_reg(&mi->value))
			emit_w(g, VM_MSET, 0, v.reg, 0, m->map, key, 0);
		else
			emit_w(g, VM_MSET, 0, 0, 0, m->map, key, v.off);
		return;
	}
	int r = reg(g, s->loc);
	emit_w(g, VM_MGET, r, 0, 0, m->map, key, 0);
	struct val b = gen(g, s->b);
	emit(g, arith_op(s->op, mi->value.is_signed && s->b->type.is_signed), r, r, b.reg, 0);
	emit_w(g, VM_MSET, 0, r, 0, m->map, key, 0);
}

static void gen_stmts(struct cg *g, struct node *s);

/* Branch to the code after, unless cond holds: one compare-and-branch
 * for `EXPR OP CONSTANT`. Returns the jump to patch. */
static size_t branch_unless(struct cg *g, struct node *cond)
{
	struct node *c = cond;
	if (c->kind == N_BINOP && c->a->type.t == T_INT && c->b->kind == N_INT) {
		int op = compare_op(c->op, c->a->type.is_signed && c->b->type.is_signed);
		if (op >= 0) {
			struct val a = gen(g, c->a);
			int64_t k = c->b->ival;
			return emit_w(g, VM_JNCMPI, op, a.reg, 0, 0, (uint32_t)k,
				      (uint32_t)((uint64_t)k >> 32));
		}
	}
	struct val v = gen(g, cond);
	return emit(g, VM_JZ, 0, v.reg, 0, 0);
}

static void gen_stmt(struct cg *g, struct node *s)
{
	g->regs = 0;
	switch (s->kind) {
	case N_ASSIGN:
		if (s->a->kind == N_VAR)
			gen_assign_var(g, s);
		else
			gen_assign_map(g, s);
		break;
	case N_IF: {
		size_t to_else = branch_unless(g, s->a);
		gen_stmts(g, s->body);
		if (!s->c) {
			patch(g, to_else);
			break;
		}
		size_t to_end = emit(g, VM_JMP, 0, 0, 0, 0);
		patch(g, to_else);
		gen_stmts(g, s->c);
		patch(g, to_end);
		break;
	}
	case N_UNROLL:
		for (int64_t i = 0; i < s->ival; i++)
			gen_stmts(g, s->body);
		break;
	case N_RETURN:
		if (g->nreturns == g->capreturns) {
			g->capreturns = g->capreturns ? g->capreturns * 2 : 8;
			g->returns = realloc(g->returns, g->capreturns * sizeof(*g->returns));
			if (!g->returns)
				oom();
		}
		g->returns[g->nreturns++] = emit(g, VM_JMP, 0, 0, 0, 0);
		break;
	case N_EXPR:
		if (s->a->kind == N_CALL)
			gen_call_stmt(g, s->a);
		else
			gen(g, s->a);
		break;
	default:
		break;
	}
}

static void gen_stmts(struct cg *g, struct node *s)
{
	for (; s; s = s->next)
		gen_stmt(g, s);
}

static uint32_t gen_block(struct cg *g, struct probe *pr)
{
	uint32_t start = (uint32_t)g->n;
	g->pr = pr;
	g->scratch = 0;
	g->nreturns = 0;
	for (int i = 0; i < pr->nvars; i++)
		pr->vars[i].slotted = false;
	size_t reject = (size_t)-1;
	if (pr->pred) {
		g->regs = 0;
		reject = branch_unless(g, pr->pred);
	}
	gen_stmts(g, pr->body);
	if (reject != (size_t)-1)
		patch(g, reject);
	for (size_t i = 0; i < g->nreturns; i++)
		patch(g, g->returns[i]);
	emit(g, VM_EXIT, 0, 0, 0, 0);
	return start;
}

/* --- maps and the blob ------------------------------------------------------------ */

static uint32_t pow2_at_least(uint64_t v)
{
	uint32_t p = 1;
	while (p < v && p < (1u << 20))
		p <<= 1;
	return p;
}

static void layout_maps(const struct program *p, const struct compile_opts *o,
			struct np_vm_map *maps, uint32_t scratch_bytes, uint64_t *shared,
			uint64_t *thread)
{
	*shared = 0;
	*thread = scratch_bytes;
	for (int i = 0; i < p->nmaps; i++) {
		const struct map_info *mi = &p->maps[i];
		struct np_vm_map *m = &maps[i];
		memset(m, 0, sizeof(*m));
		m->kind = mi->use == MU_AGG ? VM_MAP_AGG : VM_MAP_VALUE;
		for (int k = 0; k < mi->nkeys; k++)
			m->key_size += type_size(&mi->keys[k]);
		bool big = mi->agg == VM_AGG_HIST || mi->agg == VM_AGG_LHIST;
		uint32_t max_keys = o->max_keys ? o->max_keys : big ? 1024 : 4096;
		m->max_keys = mi->nkeys > 0 ? max_keys : 1;
		m->nslots = mi->nkeys > 0 ? pow2_at_least(2ull * max_keys) : 1;
		if (m->kind == VM_MAP_VALUE) {
			m->agg = in_reg(&mi->value) ? VM_VAL_INT : VM_VAL_BLOB;
			m->value_size = type_size(&mi->value);
		} else {
			m->agg = (uint32_t)mi->agg;
			m->lmin = mi->lmin;
			m->lmax = mi->lmax;
			m->lstep = mi->lstep;
			m->entry_size = 8 + 8 * np_vm_agg_words(m);
		}
		m->slot_size = (uint32_t)sizeof(struct np_vm_slot) + m->key_size +
			       (m->kind == VM_MAP_VALUE ? m->value_size : 0);
		m->shared_off = *shared;
		*shared += (sizeof(struct np_vm_map_header) + (uint64_t)m->nslots * m->slot_size + 63) &
			   ~63ull;
		if (m->kind == VM_MAP_AGG) {
			m->thread_off = *thread;
			*thread += (uint64_t)m->nslots * m->entry_size;
		}
	}
}

int script_compile(struct program *p, const struct compile_opts *o, struct compiled *out)
{
	struct cg g = {.p = p, .out = out};
	memset(out, 0, sizeof(*out));
	uint32_t *blocks = calloc((size_t)p->nprobes + 1, sizeof(*blocks));
	if (!blocks)
		oom();
	for (struct probe *pr = p->probes; pr; pr = pr->next) {
		blocks[pr->index] = gen_block(&g, pr);
		if (g.scratch_max > NP_VM_MAX_SCRATCH && !g.failed) {
			script_error(p, pr->loc, "this probe needs %u bytes of scratch: at most %u",
				     g.scratch_max, NP_VM_MAX_SCRATCH);
			g.failed = true;
		}
	}
	if (g.failed) {
		free(blocks);
		free(g.code);
		free(g.consts);
		return -1;
	}
	uint32_t scratch_bytes = (g.scratch_max + 7u) & ~7u;
	if (!scratch_bytes)
		scratch_bytes = 8;
	uint64_t size = np_vm_prog_size((uint32_t)p->nmaps, (uint32_t)p->nprobes, (uint32_t)g.n,
					(uint32_t)g.nconst);
	struct np_vm_prog *prog = calloc(1, size);
	if (!prog)
		oom();
	*prog = (struct np_vm_prog){
		.magic = NP_VM_MAGIC, .version = NP_VM_VERSION, .size = (uint32_t)size,
		.ninsns = (uint32_t)g.n, .nblocks = (uint32_t)p->nprobes, .nmaps = (uint32_t)p->nmaps,
		.const_bytes = (uint32_t)g.nconst, .scratch_bytes = scratch_bytes,
		.max_record = g.max_record,
	};
	layout_maps(p, o, (struct np_vm_map *)np_vm_maps(prog), scratch_bytes, &prog->shared_bytes,
		    &prog->thread_bytes);
	memcpy((void *)np_vm_blocks(prog), blocks, 4u * (size_t)p->nprobes);
	memcpy((void *)np_vm_insns(prog), g.code, 8 * g.n);
	if (g.nconst)
		memcpy((void *)np_vm_consts(prog), g.consts, g.nconst);
	free(blocks);
	free(g.code);
	free(g.consts);
	free(g.returns);
	out->prog = prog;
	return 0;
}

void compiled_free(struct compiled *c)
{
	free(c->prog);
	free(c->fmts);
	free(c->values);
	free(c->times);
	memset(c, 0, sizeof(*c));
}

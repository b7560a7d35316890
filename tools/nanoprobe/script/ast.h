/* SPDX-License-Identifier: MIT */
/* A bpftrace program as parse.c reads it, check.c types it and compile.c
 * turns it into bytecode. Nodes live in one arena per program. */
#ifndef NP_SCRIPT_AST_H
#define NP_SCRIPT_AST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where in the source: for bpftrace-style messages with a caret. */
struct loc {
	int line, col, len; /* 1-based line and column; len >= 1 */
};

enum ty {
	T_NONE = 0, /* statements, exit() */
	T_INT,
	T_STR,    /* NP_VM_STR bytes */
	T_USTACK, /* u64 count, frames */
	T_USYM,   /* an address, printed as its function, and the pid of the
		   * process it is an address of (bpftrace's 16 bytes) */
	T_FUNC,   /* the probe's function, by probe id */
	T_PROBE,  /* the probe, by id */
	T_BUF,    /* u8 length, 7 pad, bytes */
};

struct type {
	enum ty t;
	bool is_signed;  /* T_INT */
	uint32_t frames; /* T_USTACK */
	uint32_t blen;   /* T_BUF: bytes at most */
};

enum node_kind {
	N_INT = 1, N_STR, N_BUILTIN, N_VAR, N_MAP, N_CALL, N_BINOP, N_UNOP, N_TERNARY, N_CAST,
	N_DEREF,
	/* statements */
	N_ASSIGN, N_IF, N_EXPR, N_UNROLL, N_RETURN,
};

/* Operators: the token's characters, or these for the two-character ones. */
enum {
	OP_EQ = 256, OP_NE, OP_LE, OP_GE, OP_AND, OP_OR, OP_SHL, OP_SHR, OP_INC, OP_DEC,
	OP_NEG, /* unary minus */
};

struct node {
	enum node_kind kind;
	int op;           /* N_BINOP, N_UNOP, N_ASSIGN ('=' or the operator of +=) */
	struct loc loc;
	int64_t ival;     /* N_INT; N_UNROLL count; N_CAST bytes */
	bool cast_signed; /* N_CAST, N_DEREF */
	char *name;       /* N_BUILTIN, N_VAR, N_MAP, N_CALL */
	char *str;        /* N_STR, its bytes */
	size_t slen;
	struct node *a, *b, *c;   /* operands; N_IF: cond, then, else; N_ASSIGN: target, value */
	struct node **args;       /* N_CALL arguments, N_MAP keys */
	int nargs;
	struct node *body;        /* N_IF then, N_UNROLL: statement lists */
	struct node *next;        /* the next statement */
	/* filled by check.c */
	struct type type;
	int map;                  /* N_MAP: index in the program's maps */
	int var;                  /* N_VAR: index in its probe's variables */
};

enum probe_kind {
	PK_UPROBE = 1, PK_URETPROBE, PK_BEGIN, PK_END, PK_INTERVAL, PK_USDT,
};

struct attach {
	enum probe_kind kind;
	struct loc loc;
	char *text;   /* as written */
	char *target; /* uprobe, usdt: the path as written ("" when none) */
	char *func;   /* uprobe: the function or glob; usdt: the name or glob */
	char *provider; /* usdt: the provider or glob, NULL when not given */
	uint64_t offset;
	uint64_t period_ns; /* interval */
	struct attach *next;
};

struct var {
	char *name;
	struct type type;
	uint32_t slot; /* scratch offset (compile.c) */
	bool slotted;
};

struct probe {
	struct attach *attach;
	struct node *pred;
	struct node *body;
	struct loc loc;
	struct var *vars;
	int nvars;
	int index;
	bool uses_ustack; /* reads the frame pointer */
	bool uses_usym;   /* names an address: each process's mappings are read */
	int max_arg;      /* the highest argN it reads, -1: none (check.c) */
	struct probe *next;
};

enum map_use { MU_UNKNOWN = 0, MU_VALUE, MU_AGG };

struct map_info {
	char *name;          /* with its @ */
	struct loc loc;      /* first seen */
	enum map_use use;
	int agg;             /* enum np_vm_agg */
	struct type value;   /* MU_VALUE; the aggregated expression's for MU_AGG */
	int nkeys;           /* -1 until seen */
	struct type *keys;
	int64_t lmin, lmax, lstep;
	bool sum_signed;
};

struct program {
	const char *file;   /* "stdin" for -e, as bpftrace */
	const char *src;
	struct probe *probes;
	int nprobes;
	struct map_info *maps;
	int nmaps;
	/* the arena */
	void **blocks;
	size_t nblocks;
};

/* An error as bpftrace prints it:
 *   FILE:LINE:COL-END: ERROR: message
 *   the source line
 *           ~~~~ */
void script_error(const struct program *p, struct loc at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), nonnull(3)));
extern FILE *script_err_stream; /* stderr unless a test swaps it */

void *ast_alloc(struct program *p, size_t n);
char *ast_strndup(struct program *p, const char *s, size_t n);
void program_free(struct program *p);

/* parse.c: 0, or -1 after the error is printed. */
int script_parse(struct program *p, const char *file, const char *src);
/* check.c: 0, or -1 after the first error is printed. */
int script_check(struct program *p);
/* Size in bytes of a value of this type (keys, values, printf arguments). */
uint32_t type_size(const struct type *t);
const char *type_name(const struct type *t);
#endif

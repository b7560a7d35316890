/* SPDX-License-Identifier: MIT */
/* From a checked program to bytecode (src/agent/vm.h), and what the command
 * needs to read what that bytecode writes: printf formats, the layout of
 * each record, the maps. */
#ifndef NP_SCRIPT_COMPILE_H
#define NP_SCRIPT_COMPILE_H
#include "agent/vm.h"
#include "ast.h"

#define FMT_MAX_ARGS 32

/* A record's payload: values of these types at these offsets. */
struct layout {
	int n;
	struct type types[FMT_MAX_ARGS];
	uint32_t off[FMT_MAX_ARGS];
	uint32_t size;
};

struct fmt_entry { /* printf */
	const char *fmt;
	size_t flen;
	struct layout args;
};

struct compiled {
	struct np_vm_prog *prog; /* the blob, prog->size bytes */
	struct fmt_entry *fmts;
	int nfmts;
	struct layout *values;   /* print(value) */
	int nvalues;
	const char **times;      /* time() formats */
	int ntimes;
};

struct compile_opts {
	uint32_t max_keys;       /* per map; 0: 4096, hist and lhist 1024 */
};

/* 0, or -1 after printing the error (a block or its scratch too large). */
int script_compile(struct program *p, const struct compile_opts *o, struct compiled *out);
void compiled_free(struct compiled *c);
#endif

/* SPDX-License-Identifier: MIT */
/* From probe specs to probes: files, functions, addresses, names. */
#ifndef NP_CLI_RESOLVE_H
#define NP_CLI_RESOLVE_H
#include <sys/types.h>

#include "spec.h"

/* One probe as the agent places it, with what the output needs. */
struct rprobe {
	struct np_msg_probe m; /* id, module, site, fetches */
	const struct spec *spec;
	char group[SPEC_NAME_MAX];
	char event[SPEC_SYM_MAX + 32];
	char func[SPEC_SYM_MAX]; /* the function's name ("" if none) */
	/* filled from ATTACHED */
	int err;
	unsigned strategy;
	uint64_t addr;
	char why[200];
	int state; /* 0 waiting for its module, 1 attached, -1 refused */
};

struct probe_set {
	struct rprobe *p;
	size_t n, cap;
};

/*
 * Add the probes of one spec (a wildcard gives several). `main_path` is the
 * program a spec without PATH refers to (the command's file or
 * /proc/PID/exe). `action` is the enum np_action their handlers take.
 * 0, or -errno with a one-line reason in err (unknown binary, unknown
 * symbol with suggestions, offset outside the function, ...).
 */
int resolve_spec(struct probe_set *set, const struct spec *s, pid_t pid, const char *main_path,
		 unsigned action, char *err, size_t errlen);
void probe_set_free(struct probe_set *set);
/* The file a spec's PATH names: the traced program (main_path) when empty
 * or its file name, a library (c, libc.so.6) as the program loads it, or a
 * program (a script followed to the ELF file it runs). 0, or -errno with
 * the reason in err. */
int resolve_spec_file(const char *name, pid_t pid, const char *main_path, char *path,
		      size_t len, char *err, size_t errlen);
/* The symbol table of a file, loaded once for the command's life. */
struct np_symtab;
int resolve_table(const char *path, const struct np_symtab **out, char *err, size_t errlen);
/* The bytes of fn a patch may displace: up to the next function's start
 * whatever fn's size says (resolve.c). */
struct np_sym;
uint64_t resolve_func_size(const struct np_symtab *st, const struct np_sym *fn);
/* A new probe in the set, zeroed, its id given; NULL when out of memory. */
struct rprobe *resolve_add_probe(struct probe_set *set);
#endif

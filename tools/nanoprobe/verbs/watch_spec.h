/* SPDX-License-Identifier: MIT */
/*
 * Watch specs (nanoprobe watch):
 *
 *   [PATH:]SYMBOL[+OFFS][:LEN][:w|rw|x]     a variable (or function, for x)
 *   0xADDR[:LEN][:w|rw|x]                   an address in the process
 *
 * LEN defaults to the symbol's size (1, 2, 4 or 8 bytes) or 8 for an
 * address; the type to w (stores). They become probes of the session
 * with action NP_ACT_WATCH: module identity + vaddr, as code probes are,
 * so that the agent finds the variable wherever the module is loaded.
 */
#ifndef NP_CLI_WATCH_SPEC_H
#define NP_CLI_WATCH_SPEC_H
#include <nanoprobe/nanoprobe.h>
#include <stdbool.h>
#include <sys/types.h>

#include "symbols/resolve.h"

struct watch_spec {
	const char *text;
	char path[NP_PATH_MAX];    /* "": the program */
	char symbol[SPEC_SYM_MAX]; /* "": an absolute address */
	uint64_t offset;           /* +OFFS, or the absolute address */
	size_t len;                /* 0: not given */
	enum np_watch_type type;
};

/* 0, or -EINVAL with the reason naming the bad token in err. */
int watch_spec_parse(const char *text, struct watch_spec *w, char *err, size_t errlen);

/* Add the probe of one spec to set. pid: -p (0 for a command not started
 * yet); main_path: the program a spec without PATH means. 0, or -errno
 * with the reason in err: unknown symbol, a length or alignment the
 * hardware cannot watch, nothing mapped at the address (-p). */
int watch_spec_resolve(struct probe_set *set, const struct watch_spec *w, pid_t pid,
		       const char *main_path, char *err, size_t errlen);

/* "w", "rw", "x" */
const char *watch_type_name(enum np_watch_type type);
#endif

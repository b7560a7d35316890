/* SPDX-License-Identifier: MIT */
/*
 * Probe specs in the kernel's uprobe_events grammar:
 *
 *   [p|r][:[GRP/]EVENT] PATH:SYMBOL[+OFFS][%return] [FETCHARGS]
 *   [p|r][:[GRP/]EVENT] PATH:0xOFFSET [FETCHARGS]
 *
 * FETCHARGS: [NAME=]FETCH[:TYPE] with FETCH one of %REG, $argN, $retval,
 * $stackN, $stack, @ADDR, @SYMBOL[+|-OFFS], @+FILEOFFSET, +|-OFFS(FETCH),
 * and TYPE one of u8..u64, s8..s64, x8..x64, string.
 */
#ifndef NP_CLI_SPEC_H
#define NP_CLI_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/proto.h"

#define SPEC_NAME_MAX 64
#define SPEC_SYM_MAX 256

struct spec_arg {
	struct np_fetch f;
	char sym[SPEC_SYM_MAX]; /* @SYMBOL: resolved to f.imm later */
	bool file_offset;       /* @+OFFSET: f.imm is a file offset */
};

struct spec {
	const char *text;         /* as given */
	bool is_return;
	char group[SPEC_NAME_MAX]; /* empty: default */
	char event[SPEC_NAME_MAX];
	char path[NP_PATH_MAX];    /* as written */
	char symbol[SPEC_SYM_MAX]; /* may hold wildcards; empty: offset form */
	uint64_t offset;           /* +OFFS, or the file offset */
	unsigned nargs;
	struct spec_arg args[NP_MAX_ARGS];
};

/* 0, or -EINVAL with err holding the reason, the spec and a caret under
 * the bad token (several lines). */
int spec_parse(const char *text, struct spec *s, char *err, size_t errlen);
/* The text of an argument as the kernel prints its type ("x64"...). */
const char *spec_type_name(const struct np_fetch *f, char *buf, size_t len);
#endif

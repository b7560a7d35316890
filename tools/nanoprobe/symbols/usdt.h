/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (<sys/sdt.h>, DTrace's and SystemTap's static probes) of an
 * ELF file: its stapsdt notes, and the probes `nanoprobe run` places at
 * their sites (usdt:PATH:[PROVIDER:]NAME).
 */
#ifndef NP_CLI_USDT_H
#define NP_CLI_USDT_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "resolve.h"

struct np_isa;

/* One probe site: a note of .note.stapsdt. */
struct usdt_note {
	char *provider, *name;
	char *args;    /* "-4@%edi 8@-8(%rbp)", as the assembler wrote them */
	uint64_t pc;   /* the nop's ELF vaddr, prelinking undone */
	uint64_t sema; /* the semaphore's ELF vaddr, 0: none */
};

struct usdt_notes {
	struct usdt_note *v;
	size_t n;
	int machine; /* e_machine: whose syntax args are in */
};

/* The notes of the ELF file at path (n is 0 when it has none). 0, or
 * -errno with a one-line reason in err. */
int usdt_notes_load(const char *path, struct usdt_notes *out, char *err, size_t errlen);
void usdt_notes_free(struct usdt_notes *n);
/* The ISA whose assembler wrote a file of this e_machine; NULL if none. */
const struct np_isa *usdt_isa(int machine);

/* An attach point usdt:PATH:[PROVIDER:]NAME, resolved. */
struct usdt_spec {
	const char *text;     /* as written, for messages */
	const char *path;     /* as written, "" for the traced program */
	const char *provider; /* a glob; NULL when not given */
	const char *name;     /* a glob */
	int max_arg;          /* the highest argN its action reads, -1: none */
};

/*
 * Add a probe (action `action`) at every site of every note that matches:
 * the file found as uprobe specs find theirs, each probe with its
 * arguments and semaphore. Without a provider a name must be one
 * provider's, as bpftrace wants. 0, or -errno with a one-line reason in err
 * that names the bad part: no such file, a file without notes, no match
 * (the probes it has are listed), an argument that cannot be read.
 */
int resolve_usdt(struct probe_set *set, const struct usdt_spec *u, pid_t pid,
		 const char *main_path, unsigned action, char *err, size_t errlen);
#endif

/* SPDX-License-Identifier: MIT */
/*
 * Function symbols of one ELF file, from every source elfutils reads:
 * .symtab, .dynsym, MiniDebugInfo (.gnu_debugdata), a separate debug file
 * found by build-id (or debuglink), and, for code no symbol covers, the
 * FDEs of .eh_frame (named "fn_<hex vaddr>", as a stripped binary still
 * has them). Addresses are ELF virtual addresses (st_value), not runtime.
 */
#ifndef NP_CLI_SYMTAB_H
#define NP_CLI_SYMTAB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum np_sym_source {
	NP_SYM_SYMTAB = 1u << 0,
	NP_SYM_DYNSYM = 1u << 1,
	NP_SYM_MINIDEBUG = 1u << 2, /* .gnu_debugdata */
	NP_SYM_DEBUGFILE = 1u << 3, /* build-id or debuglink debug file */
	NP_SYM_EHFRAME = 1u << 4,   /* bounds only, synthetic name */
};

struct np_sym {
	const char *name; /* owned by the table */
	/* C++: the demangled name, and without its parameters ("Shop::price");
	 * NULL for other names. Specs match any of the three. */
	const char *demangled, *short_name;
	uint64_t addr;    /* ELF vaddr */
	uint64_t size;    /* 0 if unknown */
	unsigned source;  /* one enum np_sym_source bit */
	unsigned char entry; /* enum np_sym_entry, from the unwind info */
};

/* How control reaches a function's first instruction. */
enum np_sym_entry {
	NP_ENTRY_CALL = 0, /* a call: a return address is on top */
	/* a jump with the frame already built (the .cold part of a function,
	 * _start): no return address, so no return probe */
	NP_ENTRY_MID_FRAME,
	/* the signal return trampoline (__restore_rt): the kernel's way back
	 * from every handler, never called; a breakpoint there would fire on
	 * the return from its own handler, forever */
	NP_ENTRY_SIGRETURN,
};

struct np_symtab {
	char *path;        /* as opened (absolute) */
	int machine;       /* e_machine */
	bool dyn;          /* ET_DYN: runtime address = load bias + vaddr */
	struct np_sym *syms; /* functions, sorted by addr then name */
	size_t n;
	unsigned sources;  /* enum np_sym_source bits that contributed */
	void *priv;
};

/* "symtab", "dynsym", "minidebug", "debugfile", "eh_frame". */
const char *np_sym_source_name(unsigned source);

/* 0, or -errno with a one-line reason in err ("not an ELF file", ...). */
int np_symtab_load(const char *path, struct np_symtab *st, char *err, size_t errlen);
void np_symtab_free(struct np_symtab *st);

/* Exact name (or C++ name without parameters); for a name with several
 * entries, the first by address. */
const struct np_sym *np_symtab_find(const struct np_symtab *st, const char *name);
/* Every function whose name matches the shell glob (fnmatch), one entry per
 * address (aliases folded to the public name: malloc, not
 * __GI___libc_malloc), in address order. Returns the
 * count; *out is malloc'd (free it), NULL when the count is 0. */
size_t np_symtab_match(const struct np_symtab *st, const char *glob, const struct np_sym ***out);
/* The function containing vaddr, or NULL. */
const struct np_sym *np_symtab_at(const struct np_symtab *st, uint64_t vaddr);
/* "did you mean: foo, foo2, bar?" for an unknown name (up to 3 closest
 * names by edit distance); empty string when nothing is close. */
void np_symtab_suggest(const struct np_symtab *st, const char *name, char *buf, size_t len);
/* The libraries path needs (DT_NEEDED), at most max: how many (symdata.c). */
int np_symtab_needed(const char *path, char names[][64], int max);
/* Whether path imports a function matching glob (an undefined symbol of
 * its .dynsym): one its libraries provide (symdata.c). */
bool np_symtab_imports(const char *path, const char *glob);
/* Any defined symbol, data included (symdata.c): its vaddr, or -ENOENT. */
int np_symtab_find_data(const struct np_symtab *st, const char *name, uint64_t *vaddr);
/* The same, with its size and ELF type (STT_OBJECT, STT_FUNC, STT_TLS...),
 * for watchpoints: 0 or -ENOENT. */
int np_symtab_find_object(const struct np_symtab *st, const char *name, uint64_t *vaddr,
			  uint64_t *size, int *type);
/* The kernel's PATH:0xOFFSET is a file offset: map it to a vaddr through
 * the program headers. 0 or -ERANGE when no PT_LOAD segment holds it. */
int np_symtab_offset_to_vaddr(const struct np_symtab *st, uint64_t off, uint64_t *vaddr);
/* The file's bytes at [vaddr, vaddr + len), which must lie in the file-backed
 * part of one PT_LOAD segment. 0, -EFAULT (not there) or -EIO. */
int np_symtab_read(const struct np_symtab *st, uint64_t vaddr, void *buf, size_t len);
/* The first address after s's start that belongs to something else: the
 * next function's start, or the end of s's segment's file bytes. Code
 * between s's end and it can only be padding (or unnamed code). */
uint64_t np_symtab_limit(const struct np_symtab *st, const struct np_sym *s);

/*
 * Resolve the PATH of a probe spec to an absolute file name:
 *   - a name containing '/' is taken as is (made absolute);
 *   - a library short name ("c", "libc", "libc.so.6", "pthread", "m"): first
 *     the target's own mappings (/proc/PID/maps, when pid > 0), then the
 *     loader's cache (ld.so.cache, read as `ldconfig -p` lists it, by
 *     ldcache.c), then for pid > 0 nothing else;
 *   - otherwise a program found in $PATH.
 * 0, or -ENOENT with a reason in err.
 */
int np_resolve_path(const char *name, pid_t pid, char *out, size_t outlen, char *err,
		    size_t errlen);

/* A library as program `needer` would load it: from the directories of its
 * DT_RUNPATH (or DT_RPATH, $ORIGIN expanded), where a program built with
 * its own libraries finds them (pyenv's python, libpython), then as
 * np_resolve_path. With pid > 0, the process's mapping (np_resolve_path). */
int np_resolve_library(const char *name, const char *needer, pid_t pid, char *out,
		       size_t outlen, char *err, size_t errlen);
/* "libc", "libfoo.so.1": named as a library rather than a program. */
bool np_is_lib_name(const char *name);
/* The directories of path's DT_RUNPATH, else DT_RPATH, $ORIGIN expanded,
 * at most max (symdata.c): how many. */
int np_symtab_runpath(const char *path, char dirs[][4096], int max);

/* The ELF file a script runs, where the script tells it (follow.c): its
 * interpreter (through /usr/bin/env too), a shell script's one literal
 * `exec PROGRAM`, a version manager's shim's program (`MANAGER which`).
 * 0 with out (path itself when it is no script) and, when a script was
 * followed, a line for the user in note; -ENOEXEC or -ELOOP with why in
 * err when it cannot be told. */
int np_follow_script(const char *path, char *out, size_t len, char *note, size_t notelen,
		     char *err, size_t errlen);
/* np_resolve_path for a program, then np_follow_script; a script that
 * cannot be followed is returned as it is (0). */
int np_resolve_program(const char *name, pid_t pid, char *out, size_t outlen, char *note,
		       size_t notelen, char *err, size_t errlen);
#endif

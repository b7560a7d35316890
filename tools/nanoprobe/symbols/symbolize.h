/* SPDX-License-Identifier: MIT */
/*
 * Runtime code addresses of the traced process as names: the mapping
 * (from /proc/PID/maps, read again when an address is not covered), the
 * file's symbols (symtab.c, the command's one reader), "func+0x1c", with
 * " (libfoo.so)" for anything but the program itself.
 */
#ifndef NP_CLI_SYMBOLIZE_H
#define NP_CLI_SYMBOLIZE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

struct symbolizer *symbolizer_new(pid_t pid, const char *main_path);
/* Read the process's mappings now. */
void symbolizer_refresh(struct symbolizer *s);
/* buf, holding the name; the hex address when nothing names it. */
const char *symbolize(struct symbolizer *s, uint64_t addr, char *buf, size_t cap);
void symbolizer_free(struct symbolizer *s);
/* The function holding addr as bpftrace names it (C++ demangled, whole
 * signature) and addr's offset into it; NULL when nothing names it. */
const char *symbolize_fn(struct symbolizer *s, uint64_t addr, uint64_t *offset);
#endif

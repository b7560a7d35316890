/* SPDX-License-Identifier: MIT */
/* Executable memory for trampolines (codemem.c). */
#ifndef NP_CORE_CODEMEM_H
#define NP_CORE_CODEMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h" /* np_codemem_alloc, np_code_write: the runtime's too */

/* np_codemem_alloc (host/host.h) with a new chunk, when one is needed,
 * placed at aim rather than at near: where the planner wants the
 * trampolines of a site's jumps (np_plan_chunk_aim, which places them so
 * that one chunk serves every jump form the site may get, and a program
 * reading /proc/self/maps sees the same mappings whichever it got). */
uint64_t np_codemem_alloc_aimed(uint64_t near, uint64_t aim, size_t len, uint64_t reach);
/* len bytes starting in [lo, lo + size); 0 if no room can be found there. */
uint64_t np_codemem_alloc_in(uint64_t lo, uint64_t size, size_t len);
void np_codemem_retire(uint64_t addr, size_t len);
bool np_codemem_holds(uint64_t pc);
bool np_codemem_equals(uint64_t addr, const void *bytes, size_t len);
void np_codemem_note_tramp(uint64_t at, size_t len, uint64_t land);
void np_codemem_forget_tramps(bool (*gone)(uint64_t at, void *cookie), void *cookie);
uint64_t np_codemem_committed(void); /* bytes ever handed out (tests) */
bool np_codemem_lands_inside(uint64_t start, uint64_t end);
bool np_codemem_leads_inside(uint64_t pc, uint64_t start, uint64_t end);
/* A trampoline's bytes: in a batch, gathered with its neighbours' into one
 * write, made before the next np_code_write. */
int np_codemem_fill(uint64_t addr, const void *src, size_t len);
/* Gather np_codemem_fill's writes (on: a batch opens, batch.c) or write
 * them at once (off: it closed, after np_codemem_flush). */
void np_codemem_stage(bool on);
int np_codemem_flush(void);
void np_code_begin(void); /* an API call that may write code starts */
/* Make room for descriptors at NP_FD_HIGH now (np_engine_preinit). */
void np_fd_table_grow(void);
bool np_code_mapped_exec(uint64_t addr, size_t len);

#endif

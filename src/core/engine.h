/* SPDX-License-Identifier: MIT */
/* Engine state: the lock, the fork protocol, probe slots, logging. */
#ifndef NP_CORE_ENGINE_H
#define NP_CORE_ENGINE_H

#include <nanoprobe/nanoprobe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h" /* np_logf, which the runtime uses too */

struct np_site;

/* The engine lock (fork.c), held by attach, detach and maintenance: 0, or
 * -EPERM in a child that shares its parent's memory (vfork), or
 * -ENOTRECOVERABLE in a child forked while another thread was changing
 * probes (both logged); nothing is held then. np_engine_unlock runs the
 * waits for handlers queued meanwhile, once the lock is free: no holder
 * waits for a handler, which may be forking (fork.c). */
int np_engine_lock(void);
void np_engine_unlock(void);
/* After the operation that holds the lock: a membarrier, every thread out
 * of site's handlers, then done(a, b), under the lock again if 'locked'
 * (done may be NULL: the wait alone, before the operation returns). */
typedef void np_quiesce_fn(void *a, void *b);
void np_quiesce_later(const struct np_site *site, np_quiesce_fn *done, void *a, void *b,
		      bool locked);
int np_fork_init(void);
/* A child that runs in its parent's memory (vfork, CLONE_VM)? Raw
 * syscalls only: the hit path asks it. */
bool np_fork_shares_memory(void);
/* In a forked child, before the engine runs there: drop what names the
 * parent's other threads (thread.c, trap.c, watch.c, sigchain.c;
 * code_write.c's np_code_after_fork). */
void np_thread_after_fork(void);
void np_trap_after_fork(void);
void np_sigchain_after_fork(void);
void np_watch_after_fork(void);
bool np_in_handler(void);
uint32_t np_slot_alloc(void);
void np_slot_free(uint32_t slot);
void np_slot_bases(uint32_t slot, uint64_t *hits, uint64_t *missed);

/* Fault-safe, errno untouched (uread.c): all len bytes, or false. */
bool np_uread_quiet(void *dst, uint64_t addr, size_t len);

#endif

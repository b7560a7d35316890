/* SPDX-License-Identifier: MIT */
/* Per-thread state (thread.c): the pool of blocks, counters and misses. */
#ifndef NP_CORE_THREAD_H
#define NP_CORE_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "host/layout.h"

/* The calling thread's block; claims one on first use, growing the pool
 * with one mmap if a burst of new threads emptied it (NULL only when out of
 * memory). Async-signal-safe; after the first use, one TLS load. */
struct np_thread *np_thread_self(void);
struct np_thread *np_thread_peek(void); /* no claim */
/* An entry handler redirected the call: no frame will carry its data. */
void np_thread_drop_call_data(struct np_ctx *ctx);
int np_thread_pool_init(void);
void np_thread_pool_stock(void);  /* control path: keep spare blocks */
uint64_t np_thread_sum_hits(uint32_t slot);
uint64_t np_thread_sum_missed(uint32_t slot);
/* Wait until no thread is running handlers of 'site' (after its list
 * changed and a membarrier made the change visible). */
void np_thread_wait_site(const struct np_site *site);
/* Is the thread tid running a probe's handlers (in_site)? For a thread
 * judged from outside rather than asked (stop.c). */
bool np_thread_in_handler(int tid);
/* The block of thread tid, NULL if it has none. */
const struct np_thread *np_thread_find(int tid);
/* A miss of the handlers with return handlers of l (on_return only: ret),
 * or of every handler, on thread t (NULL: none) for a reason. */
void np_miss_list(struct np_thread *t, const struct np_hlist *l, bool ret,
		  enum np_miss_reason why);
void np_miss_one(struct np_thread *t, const struct np_handler *h, enum np_miss_reason why);
/* The reason alone, where the miss is counted elsewhere (watches). */
void np_miss_why(struct np_thread *t, enum np_miss_reason why);
uint64_t np_thread_sum_why(enum np_miss_reason why);
uint64_t np_miss_no_thread(enum np_miss_reason why); /* with no thread block */
/* Every block, free or not (control path). */
void np_thread_each(void (*fn)(struct np_thread *t, void *cookie), void *cookie);
/* Owner-only counter bump: a plain add, readable by others. */
static inline void np_bump(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}
/* May this handler run where the trampoline saved no FP/vector state? A
 * handler that may touch it can meet such a trampoline: one built before
 * its probe joined the site, which a thread entered before the rebuilt
 * one was in (a return trampoline chosen at the call's entry, likewise).
 * It is not run there, its hit counted as missed: run, it would change
 * the program's registers. */
static inline bool np_handler_may_run(const struct np_handler *h, bool fpu_saved)
{
	return fpu_saved || !h->probe->uses_fpu;
}

#endif

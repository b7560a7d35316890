/* SPDX-License-Identifier: MIT */
/* The return path: the shadow stack (shadow.c), the threads' own stacks
 * (stacks.c) and the unwinders that must see through it (unwind.c). */
#ifndef NP_CORE_SHADOW_H
#define NP_CORE_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/layout.h"

/* Push a frame for the call ctx enters (its entry handlers have run),
 * after dropping the frames proven dead; a miss if there is no room. */
void np_shadow_push(struct np_thread *t, struct np_ctx *ctx, struct np_site *site,
		    const struct np_hlist *l);
/* An unwinder starts on this thread at stack position pos: the real
 * return addresses of the frames it may walk back where they live now. */
void np_shadow_unwind(struct np_thread *t, uint64_t pos);
/* The thread switches stacks (swapcontext, setcontext). */
void np_shadow_switch(struct np_thread *t);
/* A block is claimed (thread.c) or found free (the control path). */
void np_shadow_reset(struct np_thread *t, bool claimed);
/* The bounds of threads' own stacks (stacks.c). Control path: learn those
 * of these blocks, and the main thread's once per process. */
void np_shadow_learn_stacks(struct np_thread *const *blocks, size_t n);
/* Does a lie on t's own stack, as far as is known? (any thread) */
bool np_stack_home(const struct np_thread *t, uint64_t a);
/* Return probes off from now on: every arm counts as missed. */
void np_shadow_disarm(const char *why);
bool np_shadow_disarmed(void);

/* Control path, engine lock not held (unwind.c): guard the unwinders and
 * stack switchers of the modules loaded since, once return probes are
 * asked for (returns: this call asks). -EOPNOTSUPP when a module's
 * unwinder cannot be found: return probes are then refused, and turned
 * off if any were in place (np_unwind_refusal says why). */
int np_unwind_guard_refresh(bool returns);
const char *np_unwind_refusal(void);

#endif

/* SPDX-License-Identifier: MIT */
/* Reclaiming retired trampolines (reclaim.c). */
#ifndef NP_CORE_RECLAIM_H
#define NP_CORE_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_regs;
struct np_thread;

void np_reclaim_call_begin(void); /* an API call that writes code begins */
uint64_t np_reclaim_take(size_t len, bool (*fits)(uint64_t at, size_t len, void *cookie),
			 void *cookie, uint64_t chunk);
/* One thread's state in a census (in the stop signal's handler, or from
 * outside while it is blocked), or a thread that cannot be looked at. */
void np_reclaim_look(const struct np_regs *regs, bool all_regs, const struct np_thread *t);
void np_reclaim_look_stack(uint64_t lo, uint64_t end, const struct np_thread *t);
void np_reclaim_unsure(void);
void np_reclaim_stats(uint64_t *in_limbo, uint64_t *free_bytes);

#endif

/* SPDX-License-Identifier: MIT */
/* The planner (src/plan/plan.h) run on this process's code. */
#ifndef NP_CORE_PLAN_HOST_H
#define NP_CORE_PLAN_HOST_H
#include "plan/plan.h"

/* The view of the function around addr: bounds from the caller (fstart,
 * fsize; 0: none), else from the ELF symbols; the code as it was before
 * any probe; the regions in place, the neighbours' branches and the
 * module's registers from the engine's state. As np_fn_view_load. Engine
 * lock held. */
int np_live_view_load(struct np_fn_view *v, uint64_t addr, uint64_t fstart, size_t fsize);
/* The original code: what is mapped, with every region's patch undone. */
int np_read_original(uint64_t addr, uint8_t *buf, size_t len);
#endif

/* SPDX-License-Identifier: MIT */
/*
 * The planner's unit tests (src/plan/), one file per ISA, on every host:
 * a function's bytes at a fixed address, and a host that says what else
 * is there (regions placed, neighbours' branches, the module's registers),
 * planned with the command's model of trampoline places (model.c).
 */
#ifndef NP_TESTS_PLAN_H
#define NP_TESTS_PLAN_H

#include <errno.h>

#include "plan/plan.h"
#include "test.h"

struct fake_host {
	uint64_t base;
	const uint8_t *code;
	size_t len;
	struct np_plan_region regions[4];
	unsigned nregions;
	uint64_t targets[8]; /* the neighbours' branches */
	unsigned ntargets;
	bool held_known;     /* the module's code pointers are known: held */
	uint64_t held[8];
	unsigned nheld;
	bool have_env;       /* the module is known: env */
	struct np_freereg_env env;
	unsigned module_asks;
	struct np_plan_host host;
};

/* code (len bytes) at base, nothing else known. */
void fake_host_init(struct fake_host *h, uint64_t base, const uint8_t *code, size_t len);

/* The view of the function [base, end) of h (limit: where its padding
 * ends) around addr. */
void fake_view(struct np_fn_view *v, const struct np_isa *isa, struct fake_host *h, uint64_t end,
	       uint64_t limit, bool called, uint64_t addr, unsigned flags);

/* The strategy AUTO gives pc, over the model of these places. */
int fake_site(struct np_fn_view *v, uint64_t pc, const struct np_plan_places *pl,
	      struct np_site_plan *s);

#endif

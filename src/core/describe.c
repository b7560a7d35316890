/* SPDX-License-Identifier: MIT */
/*
 * What a probe would get, told without attaching one: the planner
 * (src/plan/) run over a function's bytes read from its file, for the
 * CLI's `list`, assuming, as a file cannot tell, that a trampoline would
 * be within a jump's reach.
 */
#include "core/describe.h"
#include "core/internal.h"

/* The planner decodes with np_host_isa here, so the build plans for the
 * host's machine only (NP_HOST_ELF_MACHINE). */
const struct np_isa *np_describe_isa(unsigned machine)
{
	return machine == NP_HOST_ELF_MACHINE ? np_host_isa : NULL;
}

static int fits_jump(void *cookie, const struct np_fn_view *v, struct np_site_plan *s, char *why,
		     size_t len)
{
	(void)cookie, (void)v, (void)s, (void)why, (void)len;
	return 0;
}

static int fits_trap(void *cookie, const struct np_fn_view *v, struct np_site_plan *s,
		     bool trap_back, char *why, size_t len)
{
	(void)cookie, (void)v, (void)s, (void)trap_back, (void)why, (void)len;
	return 0;
}

const struct np_plan_realise np_describe_realise = {fits_jump, fits_trap, NULL};

/* SPDX-License-Identifier: MIT */
/*
 * What a probe would get, told without attaching one: the planner of
 * plan.c run over a function's bytes read from its file. The CLI's `list`
 * shows, for every instruction, the strategy AUTO would pick there (JUMP,
 * else TRAP, else refused) and the planner's own reason when it is not
 * JUMP, so that a user sees the refusal before asking for the probe.
 *
 * It is the same code as an attach takes, with two differences:
 *   - the view comes from the file (np_fn_view_from_file), its jump tables
 *     read at file vaddrs through the caller's np_mem;
 *   - a JUMP also needs a trampoline within the ISA's jump_reach of the
 *     site. A running process nearly always has free address space that
 *     close, but a file cannot tell: it is assumed reachable here.
 * The plans see this process's regions (region_index.c); the CLI attaches no
 * probe, so there are none to merge with.
 */
#include "core/internal.h"
#include "core/plan.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The planner decodes with np_host_isa, so the build plans for the host's
 * machine only (NP_HOST_ELF_MACHINE). */
const struct np_isa *np_describe_isa(unsigned machine)
{
	return machine == NP_HOST_ELF_MACHINE ? np_host_isa : NULL;
}

int np_fn_view_from_file(struct fn_view *v, const struct np_func_bounds *fb,
			 const struct np_mem *mem)
{
	memset(v, 0, sizeof(*v));
	v->fb = *fb;
	v->fb.known = true;
	if (v->fb.limit < v->fb.end)
		v->fb.limit = v->fb.end;
	v->base = fb->start;
	/* as np_fn_view_load: padding beyond 64 bytes is never needed */
	uint64_t hi = v->fb.limit < v->fb.end + 64 ? v->fb.limit : v->fb.end + 64;
	if (hi <= v->base || hi - v->base > NP_MAX_FN_BYTES)
		return -E2BIG;
	v->len = hi - v->base;
	if (!(v->code = malloc(v->len)))
		return -ENOMEM;
	int err = mem->read(mem->cookie, v->base, v->code, v->len);
	if (err)
		return err;
	np_fn_view_analyse(v, mem);
	return 0;
}

int np_describe_site(const struct fn_view *v, uint64_t addr, enum np_strategy *chosen, char *why,
		     size_t len)
{
	struct plan p;
	char first[sizeof(p.why)];
	int err = np_plan_jump(v, addr, NP_JUMP_SHORT, &p);
	memcpy(first, p.why, sizeof(first));
	if (err && np_host_isa->emit_jump_via)
		err = np_plan_jump(v, addr, NP_JUMP_LONG, &p);
	if (err == 0) {
		*chosen = NP_STRATEGY_JUMP;
		if (len)
			why[0] = '\0';
		return 0;
	}
	snprintf(why, len, "%s", np_host_isa->emit_jump_via ? p.why : first);
	if (np_plan_trap(v, addr, &p)) {
		snprintf(why, len, "%s", p.why);
		return -EOPNOTSUPP;
	}
	*chosen = NP_STRATEGY_TRAP;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A script probe's hit: the thread's ring (claimed on its first hit, as
 * every verb's), its thread area right after the ring's events, and the
 * program's block for this probe (vm.c). Built like handlers.c:
 * general-regs-only, no libc, attached with NP_PROBE_NO_FPU.
 */
#include "agent/agent.h"
#include "agent/script.h"

/* The block, with this hit's environment (filtered: past its predicate,
 * which read arg). */
static inline void run_block(const struct np_vm_site *site, struct np_ctx *ctx,
			     struct np_ring *r, const struct np_shm_header *h, bool filtered,
			     uint64_t arg)
{
	struct np_vm_env env = {
		.site = site, .ctx = ctx, .thread = np_ring_extra(r, h->nprobes, h->ring_bytes),
		.ring = r, .ring_data = np_ring_data(r, h->nprobes), .ring_bytes = h->ring_bytes,
		.pid = (uint64_t)(uint32_t)r->pid, .filtered = filtered, .filter_arg = arg,
	};
	np_vm_run(&env);
}

/* A block that begins with a predicate np_vm_passes can test: a hit that
 * fails it ends here. A function of its own, so that on_script saves no
 * more registers for the blocks without one. */
static __attribute__((noinline)) void run_filtered(const struct np_vm_site *site,
						   struct np_ctx *ctx, struct np_ring *r,
						   const struct np_shm_header *h)
{
	uint64_t arg;
	if (np_vm_passes(site, ctx, &arg))
		run_block(site, ctx, r, h, true, arg);
}

/* Its probe's site (made at the attach, np_agent_script_handlers); the
 * session's memory and this thread's ring and area. */
static void on_script(struct np_ctx *ctx, void *data)
{
	const struct np_vm_site *site = data;
	struct np_ring *r = np_agent_ring_self();
	struct np_shm_header *h = np_agent.shm;
	if (!r || !h)
		return;
	np_ring_counts(r)[site->probe]++;
	if (site->filter)
		run_filtered(site, ctx, r, h);
	else
		run_block(site, ctx, r, h, false, 0);
}

/* What the probe's hits give the program: made at each attach, when the
 * probe's module bias is known. Its slot holds nothing of the last
 * attachment's: a probe is attached again only after its detach. */
static struct np_vm_site *make_site(const struct aprobe *ap)
{
	const struct np_agent_script *s = &np_agent_script;
	if (!s->sites || ap->m.id >= s->nsites)
		return NULL;
	struct np_vm_site *site = &s->sites[ap->m.id];
	*site = (struct np_vm_site){
		.prog = s->prog, .shared = s->shared, .block = ap->m.block, .probe = ap->m.id,
		.probe_key = ap->m.probe_key, .func_key = ap->m.func_key, .uid = s->uid,
		.gid = s->gid, .start_ns = s->start_ns, .main_stack_end = s->main_stack_end,
		.fp_reg = s->fp_reg, .sarg_skip = s->sarg_skip,
		.at_entry = !ap->m.is_return && ap->m.vaddr == ap->m.func_vaddr,
		.red_zone = s->red_zone, .usdt = ap->m.usdt ? ap->m.usdt_args : NULL,
		.nusdt = ap->m.nusdt, .bias = ap->bias,
	};
	np_vm_site_bind(site);
	return site;
}

void np_agent_script_handlers(const struct aprobe *ap, np_handler_fn *entry, np_handler_fn *ret,
			      void **data)
{
	struct np_vm_site *site = make_site(ap);
	*data = site;
	*entry = site && !ap->m.is_return ? on_script : NULL;
	*ret = site && ap->m.is_return ? on_script : NULL;
}

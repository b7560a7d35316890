/* SPDX-License-Identifier: MIT */
/*
 * A script probe's hit: the thread's ring (claimed on its first hit, as
 * every verb's), its thread area right after the ring's events, and the
 * program's block for this probe (vm.c). Built like handlers.c:
 * general-regs-only, no libc, attached with NP_PROBE_NO_FPU.
 */
#include "agent/agent.h"
#include "agent/script.h"

static void run_block(struct np_ctx *ctx, const struct aprobe *ap)
{
	struct np_ring *r = np_agent_ring_self();
	const struct np_vm_prog *prog = np_agent_script.prog;
	struct np_shm_header *h = np_agent.shm;
	if (!r || !prog || !h)
		return;
	np_ring_counts(r)[ap->m.id]++;
	struct np_vm_env env = {
		.prog = prog, .ctx = ctx, .shared = np_agent_script.shared,
		.thread = np_ring_extra(r, h->nprobes, h->ring_bytes), .ring = r,
		.ring_data = np_ring_data(r, h->nprobes), .ring_bytes = h->ring_bytes,
		.probe = ap->m.id, .probe_key = ap->m.probe_key, .func_key = ap->m.func_key,
		.pid = (uint64_t)(uint32_t)r->pid, .uid = np_agent_script.uid,
		.gid = np_agent_script.gid, .start_ns = np_agent_script.start_ns,
		.main_stack_end = np_agent_script.main_stack_end, .fp_reg = np_agent_script.fp_reg,
		.sarg_skip = np_agent_script.sarg_skip,
		.at_entry = !ap->m.is_return && ap->m.vaddr == ap->m.func_vaddr,
		.red_zone = np_agent_script.red_zone,
		.usdt = ap->m.usdt ? ap->m.usdt_args : NULL, .nusdt = ap->m.nusdt,
		.bias = ap->bias,
	};
	np_vm_run(&env, ap->m.block);
}

static void on_script(struct np_ctx *ctx, void *data)
{
	run_block(ctx, data);
}

void np_agent_script_handlers(const struct aprobe *ap, np_handler_fn *entry, np_handler_fn *ret)
{
	*entry = ap->m.is_return ? NULL : on_script;
	*ret = ap->m.is_return ? on_script : NULL;
}

/* SPDX-License-Identifier: MIT */
/* Running and checking script bytecode (vm.h): the agent on every hit, the
 * command for BEGIN, END and interval probes. */
#ifndef NP_AGENT_VM_RUN_H
#define NP_AGENT_VM_RUN_H
#include <nanoprobe/nanoprobe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/proto.h"
#include "agent/vm.h"

/* What a block's runs share: the same at every hit of one probe, made at
 * its attach (script_hit.c), and at each run of the command's own probes
 * (BEGIN, END, interval). */
struct np_vm_site {
	const struct np_vm_prog *prog; /* checked by np_vm_verify */
	uint8_t *shared;               /* prog->shared_bytes: the maps' tables */
	uint32_t block;                /* the probe's block */
	/* where prog's parts are, found once (np_vm_site_bind): a hit then
	 * starts at its first instruction without walking the blob's header */
	const struct np_vm_insn *code; /* the block's first instruction */
	const struct np_vm_map *maps;
	const uint8_t *consts;
	bool filter; /* the block begins with a predicate np_vm_passes tests */
	uint32_t probe;                /* the probe's id, for its records */
	uint32_t probe_key, func_key;  /* what `probe` and `func` are (np_msg_probe) */
	uint64_t uid, gid;
	uint64_t start_ns;             /* elapsed counts from here */
	uint64_t main_stack_end;       /* __libc_stack_end: the main stack's top */
	int fp_reg;                    /* the frame pointer's np_reg_lookup number */
	uint32_t sarg_skip;            /* words above sp before the first stack argument */
	uint8_t at_entry;              /* the probe is at a function's first instruction */
	uint8_t red_zone;              /* bytes below sp the code may use (x86-64: 128) */
	/* a USDT probe: its arguments (NULL for a uprobe, whose arg0.. are
	 * the calling convention's), and its module's load bias */
	const struct np_usdt_loc *usdt;
	uint32_t nusdt;
	uint64_t bias;
};

/* One run: the site, and what this hit and thread bring. */
struct np_vm_env {
	const struct np_vm_site *site;
	struct np_ctx *ctx;            /* the hit; NULL in the command */
	uint8_t *thread;               /* prog->thread_bytes: this thread's area */
	struct np_ring *ring;          /* records go there (tid and comm too) */
	unsigned char *ring_data;
	uint32_t ring_bytes;
	uint64_t pid;
	/* np_vm_passes passed the hit: the block starts past its predicate,
	 * the predicate's register holding the argument it read */
	bool filtered;
	uint64_t filter_arg;
};

/* Fill site's code, maps, consts and filter from its prog and block. */
void np_vm_site_bind(struct np_vm_site *site);

/* Does the hit pass the predicate the site's block begins with (a
 * register argument against a constant, site->filter)? One that fails it
 * would only exit: the hit path returns at once, without the
 * interpreter's entry. One that passes runs the block past the
 * predicate, with the argument read (*arg, np_vm_env.filtered). */
static inline bool np_vm_passes(const struct np_vm_site *site, const struct np_ctx *ctx,
				uint64_t *arg)
{
	const struct np_vm_insn *a = site->code, *j = a + 1;
	uint64_t k;
	__builtin_memcpy(&k, j + 1, 8);
	*arg = np_ctx_arg(ctx, (unsigned)a->imm);
	return np_vm_cmp(j->dst, *arg, k);
}

/* Run env->site's block: 0 at its end, 1 when it called exit(), -1 for
 * an instruction the verifier would have refused. */
int np_vm_run(const struct np_vm_env *env);

/* 0 when the blob of `size` bytes is a program np_vm_run may run, else
 * -EINVAL with the reason in why. */
int np_vm_verify(const void *blob, size_t size, char *why, size_t whylen);

/* clear(@map) (keep_key 0) or zero(@map) (1) on a checked program's maps. */
void np_vm_map_void(const struct np_vm_prog *prog, uint8_t *shared, uint32_t map, int keep_key);

#endif

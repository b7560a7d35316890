/* SPDX-License-Identifier: MIT */
/* The session's script in the agent: script.c receives and checks it,
 * script_hit.c runs it on hits. */
#ifndef NP_AGENT_SCRIPT_H
#define NP_AGENT_SCRIPT_H
#include <stdbool.h>
#include <stdint.h>

#include "agent/proto.h"
#include "agent/vm_run.h"
#include "core/nolibc.h"

struct np_agent_script {
	const struct np_vm_prog *prog; /* NULL: the session has none */
	uint64_t ring_extra;           /* each ring's thread area, page-aligned */
	uint64_t shared_bytes;         /* the maps' tables, page-aligned */
	uint8_t *shared;               /* in the session's shared memory */
	uint64_t uid, gid, start_ns, main_stack_end; /* pid: each ring's */
	/* The host ISA's (struct np_isa, learnt with the script): the frame
	 * pointer, the words above sp at a function's entry before its first
	 * stack argument (the return address, where calls push it), the red
	 * zone below sp. */
	int fp_reg;
	uint32_t sarg_skip;
	uint8_t red_zone;
	/* one per probe of the session, made at its attach (script_hit.c):
	 * what its hits give np_vm_run, side by side, where the probes'
	 * messages are 2 KiB apart */
	struct np_vm_site *sites;
	uint32_t nsites;
};
extern struct np_agent_script np_agent_script;

/* After HELLO: len bytes of program in NP_MSG_SCRIPT messages, checked,
 * for a session of nprobes probes. 0 or -errno. */
int np_agent_script_receive(int fd, uint32_t len, uint32_t nprobes);
/* A probe message's block exists. */
bool np_agent_script_probe_ok(const struct np_msg_probe *m);
/* The shared memory is made: fill its script fields, find the maps. */
void np_agent_script_bind(struct np_shm_header *h);
void np_agent_script_end(void);
#endif

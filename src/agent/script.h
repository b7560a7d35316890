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

#if defined(__x86_64__)
#define NP_SCRIPT_FP_REG "rbp"
#define NP_SCRIPT_SARG_SKIP 1 /* the return address */
#define NP_SCRIPT_RED_ZONE 128 /* the SysV ABI's, below sp */
#elif defined(__aarch64__)
#define NP_SCRIPT_FP_REG "x29"
#define NP_SCRIPT_SARG_SKIP 0
#define NP_SCRIPT_RED_ZONE 0
#else
#define NP_SCRIPT_FP_REG "s0"
#define NP_SCRIPT_SARG_SKIP 0
#define NP_SCRIPT_RED_ZONE 0
#endif

struct np_agent_script {
	const struct np_vm_prog *prog; /* NULL: the session has none */
	uint64_t ring_extra;           /* each ring's thread area, page-aligned */
	uint64_t shared_bytes;         /* the maps' tables, page-aligned */
	uint8_t *shared;               /* in the session's shared memory */
	uint64_t uid, gid, start_ns, main_stack_end; /* pid: each ring's */
	int fp_reg;
};
extern struct np_agent_script np_agent_script;

/* After HELLO: len bytes of program in NP_MSG_SCRIPT messages, checked.
 * 0 or -errno. */
int np_agent_script_receive(int fd, uint32_t len);
/* A probe message's block exists. */
bool np_agent_script_probe_ok(const struct np_msg_probe *m);
/* The shared memory is made: fill its script fields, find the maps. */
void np_agent_script_bind(struct np_shm_header *h);
void np_agent_script_end(void);
#endif

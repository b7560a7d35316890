/* SPDX-License-Identifier: MIT */
/*
 * A session's script, on the agent's side of the control socket: the
 * program comes after HELLO (NP_MSG_SCRIPT chunks), is checked once
 * (vm_verify.c) and then run by the probes whose action is NP_ACT_SCRIPT
 * (script_hit.c). Its memory is part of the session's shared memory, so
 * the command reads the maps where the probes write them: each ring gets
 * the program's thread area after its events, and the maps' tables sit
 * after the last ring.
 */
#include "agent/agent.h"
#include "agent/script.h"
#include "arch/arch.h"
#include "host/host.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct np_agent_script np_agent_script;

static uint64_t page_up(uint64_t v)
{
	return (v + 4095) & ~4095ull;
}

int np_agent_script_receive(int fd, uint32_t len, uint32_t nprobes)
{
	char why[200];
	if (len < sizeof(struct np_vm_prog) || len > (64u << 20))
		return -EPROTO;
	uint64_t *blob = calloc(1, (len + 7) & ~7u); /* 8-aligned for the checker */
	unsigned char *buf = malloc(NP_SCRIPT_CHUNK + 4);
	struct np_vm_site *sites = calloc(nprobes ? nprobes : 1, sizeof(*sites));
	if (!blob || !buf || !sites) {
		free(blob);
		free(buf);
		free(sites);
		return -ENOMEM;
	}
	uint32_t got = 0;
	int rc = 0;
	while (got < len && !rc) {
		ssize_t n = recv(fd, buf, NP_SCRIPT_CHUNK + 4, 0);
		uint32_t type;
		if (n < 4 || (memcpy(&type, buf, 4), type != NP_MSG_SCRIPT) ||
		    (size_t)n - 4 > len - got) {
			rc = -EPROTO;
			break;
		}
		memcpy((char *)blob + got, buf + 4, (size_t)n - 4);
		got += (uint32_t)(n - 4);
	}
	free(buf);
	if (!rc && np_vm_verify(blob, len, why, sizeof(why)))
		rc = -EPROTO;
	if (rc) {
		free(blob);
		free(sites);
		return rc;
	}
	np_agent_script.prog = (const struct np_vm_prog *)blob;
	np_agent_script.sites = sites;
	np_agent_script.nsites = nprobes;
	np_agent_script.ring_extra = page_up(np_agent_script.prog->thread_bytes);
	np_agent_script.shared_bytes = page_up(np_agent_script.prog->shared_bytes);
	np_agent_script.uid = (uint64_t)getuid();
	np_agent_script.gid = (uint64_t)getgid();
	void **end = dlsym(RTLD_DEFAULT, "__libc_stack_end");
	np_agent_script.main_stack_end = end ? (uint64_t)(uintptr_t)*end : 0;
	np_agent_script.fp_reg = np_host_isa->fp_reg;
	np_agent_script.sarg_skip = np_host_ret_in_memory() ? 1 : 0;
	np_agent_script.red_zone = np_host_isa->red_zone;
	return 0;
}

bool np_agent_script_probe_ok(const struct np_msg_probe *m)
{
	return np_agent_script.prog && m->block < np_agent_script.prog->nblocks;
}

void np_agent_script_bind(struct np_shm_header *h)
{
	if (!np_agent_script.prog)
		return;
	h->ring_extra = np_agent_script.ring_extra;
	h->script_off = np_shm_size(h->nprobes, h->nrings, h->ring_stride);
	h->script_bytes = np_agent_script.shared_bytes;
	np_agent_script.shared = (uint8_t *)h + h->script_off;
	np_agent_script.start_ns = h->start_ns; /* the tree's, whoever made the memory */
}

void np_agent_script_end(void)
{
	free((void *)np_agent_script.prog);
	free(np_agent_script.sites);
	memset(&np_agent_script, 0, sizeof(np_agent_script));
}

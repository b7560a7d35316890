/* SPDX-License-Identifier: MIT */
/* Reading the agent's rings. The memory is the traced program's to write:
 * nothing in it is trusted, every record is copied out, then checked. */
#ifndef NP_CLI_CONSUME_H
#define NP_CLI_CONSUME_H
#include "session.h"

struct consumer {
	struct np_shm_header *shm;
	size_t size;
	int fd; /* the memory's memfd (the caller's) */
	/* rings from this one on were never touched: holes of the memfd,
	 * FREE (consume.c, rings_in_reach) */
	uint32_t reach;
	uint32_t nprobes, nrings, ring_bytes, stride;
	const struct probe_set *set;
	struct totals *totals; /* folded in from rings of threads that ended */
	const struct session_ops *ops; /* on_reap, if any */
	uint64_t ring_extra, script_bytes; /* a script's areas (proto.h) */
	uint32_t hists; /* latency: histograms per ring (HELLO), 0: none */
};

/* A script's areas in every session's memory (proto.h): each ring's thread
 * area and the maps' shared area, page-aligned; set with the script. */
extern uint64_t session_script_ring_extra, session_script_bytes;

/* Map the agent's memory and check its header against what HELLO asked. */
int consumer_open(struct consumer *c, int fd, const struct np_msg_hello *h,
		  const struct probe_set *set, struct totals *t);
void consumer_close(struct consumer *c);
/* Hand every new event to ops->on_event. With `reap`, rings of threads
 * that no longer exist (in any process of the tree) are folded into the
 * totals and freed for reuse. */
void consumer_drain(struct consumer *c, const struct session_ops *ops, bool reap);
/* The totals now: folded values plus every live ring. */
void consumer_totals(const struct consumer *c, struct totals *now);
#endif

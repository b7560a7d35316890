/* SPDX-License-Identifier: MIT */
/* The processes of a session, one agent each (tree.c); session.c starts
 * them and reports. */
#ifndef NP_CLI_TREE_H
#define NP_CLI_TREE_H
#include <signal.h>

#include "session.h"

/* How the session starts: its socket, its first processes, what every
 * fresh image is told, and the flag its signals set. */
struct tree_start {
	int lfd;
	const char *sock; /* the socket's name, as the agents' environment has it */
	const pid_t *roots;
	size_t nroots;
	struct np_msg_hello hello;
	volatile sig_atomic_t *stop;
};

struct tree_end {
	bool stopped;  /* -d, a signal or output that could not be written ended it */
	bool released; /* every agent removed its probes, or has gone */
};

/* The session until every agent has gone or it is stopped. 0 when it ran
 * (*t holds its totals), 1 after printing why it could not start. */
int tree_run(const struct session_opts *o, const struct tree_start *s, struct probe_set *set,
	     const struct session_ops *ops, struct totals *t, struct tree_end *end);
/* The processes that were not traced, with why; the children not followed. */
void tree_report(const struct session_opts *o, const struct totals *t);
/* Processes whose agents joined the session. */
size_t tree_processes(void);
/* session.c: the clock the agent that made the memory says it reads, in
 * its header ("Clock: ..." unless -j). */
void session_note_clock(const struct session_opts *o, const struct np_shm_header *hdr);
#endif

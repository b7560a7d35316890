/* SPDX-License-Identifier: MIT */
/* Chrome trace-event JSON (what Perfetto and chrome://tracing open):
 * a return event that knows when its call began becomes a complete event
 * ("ph":"X") spanning the call; an entry event an instant ("ph":"i");
 * either carries its fetched arguments; each thread gets its name
 * ("ph":"M"). */
#ifndef NP_CLI_CHROME_H
#define NP_CLI_CHROME_H
#include <stdio.h>
#include <sys/types.h>

#include "session/session.h"

/* cmd_trace.c: an argument's value as trace prints it. */
void trace_value(FILE *f, const struct event *ev, unsigned i, bool json);

struct chrome;
struct chrome *chrome_open(const char *path);
void chrome_event(struct chrome *c, const struct event *ev, const char *comm);
/* Writes the thread names and closes the file. */
void chrome_close(struct chrome *c, pid_t pid);
#endif

/* SPDX-License-Identifier: MIT */
/*
 * What the engine offers a program that embeds it in the process beyond
 * the public API (include/nanoprobe/nanoprobe.h): the agent (src/agent/),
 * which runs the command's session inside the traced program, needs to
 * keep its descriptors out of the program's way, hook the loader with
 * probes of its own and keep the program's signal settings from undoing
 * the engine's. With core/fork.h (how a copy of the process knows itself),
 * this header is all the agent sees of core.
 */
#ifndef NP_CORE_EMBED_H
#define NP_CORE_EMBED_H

#include <signal.h>

#include <nanoprobe/nanoprobe.h>

/* The engine started (once; later calls return the first's result): its
 * fork handlers registered before the embedder's, so they run in the
 * order that keeps the embedder's lock outside the engine's. 0 or -errno. */
int np_engine_init(void);
/* What np_engine_init would do that costs far more once the process has a
 * second thread, each step then waiting for an RCU grace period: the
 * membarrier registrations (code_write.c), the descriptor table grown to
 * NP_FD_HIGH (codemem.c). For the preloaded agent's constructor, on the
 * program's thread before it starts its own: system calls only, no
 * allocation, errno kept, a descriptor open for a moment. Once;
 * np_engine_init does it where it was not done. */
void np_engine_preinit(void);

#define NP_FD_HIGH 700 /* where kept descriptors go (np_fd_move_high) */

/* fd duplicated at NP_FD_HIGH or above (close-on-exec), the original
 * closed; fd itself if that fails. */
int np_fd_move_high(int fd);

/* The probe is the embedder's own, not the user's: its misses are counted
 * without a reason (np_missed_by), as the engine's own probes are. */
void np_probe_mark_internal(struct np_probe *p);

/* The program's SIGTRAP disposition, kept behind the engine's handler
 * (sigchain.c): read and set as sigaction would; -EAGAIN before the
 * engine's handler is installed. */
int np_trap_chain_swap(const struct sigaction *act, struct sigaction *old);

/* The signal that moves threads out of bytes being patched (stop.c): a
 * thread that blocks it makes such a patch fail. */
int np_patch_signal(void);

#endif

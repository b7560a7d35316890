/* SPDX-License-Identifier: MIT */
/*
 * The engine's signals unblocked, for the length of a session, in the
 * threads of an injected process that block them (see masks.c).
 */
#ifndef NP_CLI_MASKS_H
#define NP_CLI_MASKS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One thread whose blocked mask we changed: what it was, what we set. */
struct np_mask_change {
	pid_t tid;
	uint64_t was, set;
};

struct np_masks {
	pid_t pid;
	size_t n, cap;
	struct np_mask_change *v;
};

/* The signals a breakpoint or the engine's fault-safe reads raise, and
 * the one it stops threads with. */
uint64_t np_masks_engine(void);
/* The signal the engine stops threads with (src/core/stop.c's default). */
int np_masks_engine_signal(void);
/* In every thread of pid that blocks one of them, unblock them. The
 * number of threads changed, or -errno (those changed so far are in *m). */
int np_masks_unblock(pid_t pid, struct np_masks *m);
/* Block them again in each thread whose mask is still one we set (or
 * was inherited from one we set); then forget them. */
void np_masks_restore(struct np_masks *m);
#endif

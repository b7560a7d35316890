/* SPDX-License-Identifier: MIT */
/* What a stopped thread's registers and stack say of the bytes a patch
 * replaces (stack_scan.c), for stopping threads (stop.c). These run in
 * the stop signal's handler too: fault-safe, no lock, no allocation. */
#ifndef NP_CORE_STACK_SCAN_H
#define NP_CORE_STACK_SCAN_H

#include <stdbool.h>
#include <stdint.h>

struct np_regs;

/* The bytes being replaced, [start, end), and where a thread strictly
 * inside goes: map(cookie, pc) (NULL: nowhere, no thread is moved). */
struct np_inside {
	uint64_t start, end;
	uint64_t (*map)(void *cookie, uint64_t pc);
	void *cookie;
};

/* A pc the patch would have to move a thread from? */
bool np_inside_moves(const struct np_inside *in, uint64_t pc);
/* Is the thread whose stack pointer is sp in a signal handler of the
 * program's that interrupted it strictly inside the bytes? */
bool np_stack_interrupted_inside(uint64_t sp, const struct np_inside *in);
/* Could a thread (pc, its registers gpr or NULL when seen from outside,
 * sp; in_handler: it runs a probe's handlers) be on its way through a
 * trampoline that jumps back strictly inside (start, end)? */
bool np_stack_way_back_seen(uint64_t pc, const uint64_t *gpr, uint64_t sp, bool in_handler,
			    uint64_t start, uint64_t end);
/* The same for the calling thread, stopped with regs (the stop signal's
 * handler asks; exposed for the unit tests). */
bool np_patch_on_way_back(const struct np_regs *regs, uint64_t start, uint64_t end);

#endif

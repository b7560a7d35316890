/* SPDX-License-Identifier: MIT */
/* Stopping the other threads of the process and moving them out of bytes
 * being replaced (stop.c), for the patch protocols (region_write.c,
 * word_write.c, batch.c), the census of retired trampolines (reclaim.c),
 * the SIGTRAP handler (trap.c) and the agent, which keeps the stop signal
 * unblocked in the program. */
#ifndef NP_CORE_STOP_H
#define NP_CORE_STOP_H

#include <stdbool.h>
#include <stdint.h>

/* The stop signal's handler, installed once (engine start-up). 0 or -errno. */
int np_stop_init(void);
/* Move threads whose pc lies in (start, end) to the address map() gives.
 * Threads blocked in a system call are not disturbed: one that would come
 * back to such a pc is passed to stuck() (the caller gives up the bytes
 * around it), or, with no stuck(), fails the call with -EAGAIN. Returns 0
 * or -EAGAIN when a thread could not be checked. */
int np_threads_move_out(uint64_t start, uint64_t end,
			uint64_t (*map)(void *cookie, uint64_t pc), void *cookie,
			void (*stuck)(void *cookie, uint64_t pc));
/* Stop every other thread of the process while code is written: each one
 * that runs user code waits in a signal handler, after its pc was moved by
 * map() when it lay in (start, end); threads blocked in a system call are
 * left there (their pc and stack are checked from outside, and one that
 * would come back inside fails the stop with -EAGAIN) so that no call
 * fails with EINTR.
 * new_code: the bytes become other than the original (a jump): threads
 * that may be on their way through a trampoline landing inside them are
 * counted. Under qemu-user, every guest thread must answer;
 * the emulator's own threads are left.
 * 0 (then np_threads_resume() must follow) or -EAGAIN / -errno, with no
 * thread stopped. Engine lock held. */
int np_threads_stop(uint64_t start, uint64_t end, uint64_t (*map)(void *cookie, uint64_t pc),
		    void *cookie, bool new_code);
/* np_threads_stop, once none of the threads it stopped is on its way
 * through a trampoline landing inside (start, end) (new_code), nor in a
 * signal handler of its own that interrupted it there: tried again a
 * little later while some are, then -EAGAIN. 0: the threads are stopped,
 * np_threads_resume() must follow. */
int np_threads_stop_clear(uint64_t start, uint64_t end,
			  uint64_t (*map)(void *cookie, uint64_t pc), void *cookie, bool new_code);
void np_threads_resume(void);

/* Ask every thread to look at itself for a census of retired trampolines
 * (reclaim.c). 0, or -EAGAIN (a thread that blocks the signal) or -errno. */
int np_threads_census(void);
/* A stop request that came while the thread ran the engine's SIGTRAP
 * handler, at nesting level 'level', answered from where that handler
 * resumes it (uc). */
void np_patch_answer_owed(void *uc, unsigned level);
/* Block the stop signal until the SIGTRAP handler returns, where its
 * sa_mask did not (a system call there only). */
void np_patch_block_stop(void);

#endif

/* SPDX-License-Identifier: MIT */
/* The threads of this process as /proc/self/task shows them from outside
 * (tasks.c), for stopping them (stop.c) and for the engine's start-up
 * under an emulator (fork.c). */
#ifndef NP_CORE_TASKS_H
#define NP_CORE_TASKS_H

#include <stdbool.h>
#include <stdint.h>

/* The most threads one stop asks: np_tasks_list lists no more. */
#define NP_TASKS_MAX 4096
/* How many times (a millisecond apart) a running thread that blocks the
 * stop signal is looked at again before it is taken as it is. */
#define NP_TASK_SETTLE_TRIES 20

enum np_seen { NP_SEEN_GONE, NP_SEEN_RUNNING, NP_SEEN_BLOCKED, NP_SEEN_FOREIGN, NP_SEEN_GUEST };

/* What /proc/self/task/TID/syscall tells of a thread: "running" (on a
 * cpu, or ready for one: its pc is unknown), or blocked, with the system
 * call it is in ("nr args... sp pc", or "-1 sp pc" outside one) and its
 * user stack pointer and pc. */
struct np_sight {
	enum np_seen state;
	long nr;
	uint64_t arg[6], sp, pc;
};

/* Every other thread of the process (tids, up to NP_TASKS_MAX): their
 * count, or -errno. */
int np_tasks_list(int *tids, int self);
/* What the thread shows now; 'foreign': tell the emulator's pcs apart. */
struct np_sight np_task_look(int tid, bool foreign);
/* The same, once a running thread no longer blocks sig (a moment). */
struct np_sight np_task_settled_look(int tid, int sig);
/* Does it wait for a vfork child (vfork, clone or clone3 with CLONE_VFORK)? */
bool np_task_waits_for_vfork(const struct np_sight *s);
/* Does it block sig now (false when that cannot be read)? */
bool np_task_blocks(int tid, int sig);
/* Is it one of qemu-user's own threads, which never answer? */
bool np_task_emulator_thread(int tid);
/* How often it was switched out, UINT64_MAX when unknown. */
uint64_t np_task_switches(int tid);
/* Does the program run under an emulator (qemu-user), whose threads
 * /proc shows at the emulator's own pcs? Learnt once. */
bool np_emulated(void);

#endif

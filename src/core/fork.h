/* SPDX-License-Identifier: MIT */
/*
 * What the agent may ask the engine about the children of a process (see
 * fork.c): a copy of our memory made by fork runs fork's handlers, but one
 * made by a raw clone or clone3 system call, or by glibc's _Fork, runs
 * none, and may run probed code before anything else of ours.
 */
#ifndef NP_CORE_FORK_H
#define NP_CORE_FORK_H

#include <stdint.h>

/* A word of memory that the kernel empties in every child that copies
 * ours (no CLONE_VM), however it was made, and keeps in a child that
 * shares it (vfork, CLONE_VM): a hit path that keeps a nonzero value
 * there tells with one load that it runs in such a copy. Zero until
 * written; the agent's alone. NULL where no kernel empties it (qemu-user,
 * which accepts MADV_WIPEONFORK and does nothing; Linux before 4.14).
 * Known after np_engine_init. */
uint32_t *np_fork_wiped_word(void);

#endif

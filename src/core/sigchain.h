/* SPDX-License-Identifier: MIT */
/* The program's own signal dispositions, kept behind the engine's. */
#ifndef NP_CORE_SIGCHAIN_H
#define NP_CORE_SIGCHAIN_H

#include <signal.h>
#include <stdbool.h>

/* Signals that are not ours (sigchain.c). np_sig_chain delivers one to
 * the disposition 'act' as the kernel would have (SA_RESETHAND writes
 * SIG_DFL into 'home'); 'refaults': returning re-executes the instruction
 * that raised it. The program's SIGTRAP disposition is kept behind the
 * engine's handler: np_trap_chain_swap reads and sets it (as sigaction
 * would; -EAGAIN before the engine's handler is installed), np_trap_chain
 * delivers to it. */
void np_sig_chain(const struct sigaction *act, struct sigaction *home, int sig, siginfo_t *si,
		  void *uc, bool refaults);
void np_trap_chain_init(const struct sigaction *prev);
void np_trap_chain(int sig, siginfo_t *si, void *uc);

#endif

/* SPDX-License-Identifier: MIT */
/* Writing the program's code and making every core see the change
 * (code_write.c). */
#ifndef NP_CORE_CODE_WRITE_H
#define NP_CORE_CODE_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* The membarrier registrations, or the page the fallback uses. 0 or
 * -errno (engine start-up). */
int np_code_write_init(void);
/* The membarrier registrations alone, once: slow once the process has a
 * second thread, so the agent asks for them first (np_engine_preinit). */
void np_code_write_register(void);
/* Serialise instruction fetch on every core that runs one of our threads. */
void np_sync_cores(void);
/* A full memory barrier on every running thread of the process. */
void np_barrier_threads(void);
/* len bytes of code at addr written now, the host's cache maintenance
 * done for them. Everyone else writes through np_code_write (codemem.c),
 * which writes the trampolines staged for a batch first. 0 or -errno. */
int np_code_write_now(uint64_t addr, const void *src, size_t len);
/* len bytes of code read (execute-only pages too). 0 or -EFAULT. */
int np_code_read(uint64_t addr, void *dst, size_t len);
/* In a forked child: a descriptor of /proc/self/mem of its own (fork.c). */
void np_code_after_fork(void);

#endif

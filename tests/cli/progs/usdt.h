/* SPDX-License-Identifier: MIT */
/* The parts of the USDT test program (usdt.c) in other files. */
#ifndef NP_PROGS_USDT_H
#define NP_PROGS_USDT_H

/* usdt_x86_64.S: probe usdt_asm:forms; returns r */
long usdt_forms(long r);
/* usdt_sema.c: probe usdt_sema:guarded, behind its semaphore */
long usdt_guarded(long r);
long usdt_guarded_runs(void);
unsigned usdt_guarded_semaphore(void);
/* usdt_lib.c, a shared library: probe usdt_lib:lib_probe, behind its semaphore */
long usdt_lib_round(long r);
long usdt_lib_runs(void);
unsigned usdt_lib_semaphore(void);
#endif

/* SPDX-License-Identifier: MIT */
/*
 * The per-ISA part of inject.c, one header per ISA. Each gives:
 *   ISA_NAME, ISA_RED_ZONE   its name, and the bytes below sp the
 *                            interrupted function may still own;
 *   isa_regs                 the register file of PTRACE_GETREGSET
 *                            NT_PRSTATUS;
 *   isa_ext_regsets[]        the further register sets to save and restore;
 *   isa_pc, isa_sp, isa_result  read from isa_regs;
 *   isa_set_call(r, fn, args, n, top)  fn(args) with its return to pc 0
 *                            and sp at the 16-aligned top;
 *   isa_reissue(r, nr, arg0) the thread's system call nr issued again
 *                            when it resumes.
 * Its static functions are used by inject.c alone, which includes this.
 */
#ifndef NP_INJECT_ISA_H
#define NP_INJECT_ISA_H

#include <elf.h>
#include <stdint.h>
#include <sys/user.h>

#if defined(__x86_64__)
#include "isa_x86_64.h"
#elif defined(__aarch64__)
#include "isa_arm64.h"
#elif defined(__riscv) && __riscv_xlen == 64
#include "isa_riscv64.h"
#else
#error "inject.c: remote calls are not written for this ISA yet"
#endif

#endif

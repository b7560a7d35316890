/* SPDX-License-Identifier: MIT */
/*
 * Shared by regs_riscv64.c and regs_riscv64.S: the values the assembly
 * loads into the registers before a probe site, and the layout of the
 * buffer it dumps them to after the site.
 */
#ifndef NP_E2E_REGS_RISCV64_H
#define NP_E2E_REGS_RISCV64_H

/* x<n> holds PAT_BASE + n * PAT_STEP: x1 and x5..x31. x0 is zero, sp is
 * the stack, gp and tp are left as they are (the engine's C code and libc
 * need them: the thread pointer for TLS, gp for relaxed accesses) and
 * checked unchanged. */
#define PAT_BASE 0x8100000000000011
#define PAT_STEP 0x0001010101010101

/* struct regs_out offsets */
#define OUT_GPR 0     /* x0..x31; x2 is sp after the sites (the site's sp) */
#define OUT_FCSR 256  /* frm and fflags */
#define OUT_FPR 272   /* f0..f31, 64 bits each */
#define OUT_SIZE 528

/* The dump's own frame below the site sp, and the function's frame. */
#define DUMP_FRAME 256
#define SAVE_FRAME 224

#endif

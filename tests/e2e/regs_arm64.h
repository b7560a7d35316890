/* SPDX-License-Identifier: MIT */
/*
 * Shared by regs_arm64.c and regs_arm64.S: the values the assembly loads
 * into the registers before a probe site, and the layout of the buffer it
 * dumps them to after the site.
 */
#ifndef NP_E2E_REGS_ARM64_H
#define NP_E2E_REGS_ARM64_H

/* x<n> holds PAT_BASE + n * PAT_STEP (n = 0..30). */
#define PAT_BASE 0x8100000000000011
#define PAT_STEP 0x0001010101010101
/* FPSR cumulative exception flags IOC DZC OFC UFC IXC IDC, and QC */
#define FPSR_PATTERN 0x0800009f

/* struct regs_out offsets */
#define OUT_GPR 0    /* x0..x30 */
#define OUT_SP 248   /* sp at the site */
#define OUT_NZCV 256
#define OUT_FPSR 264
#define OUT_FPCR 272
#define OUT_VEC 288  /* q0..q31 */
#define OUT_SIZE 800

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Shared by regs.c and regs_x86_64.S: the values the assembly loads into
 * every general register before the probe site, and the layout of the
 * buffer it dumps them to after the site.
 */
#ifndef NP_E2E_REGS_H
#define NP_E2E_REGS_H

/* Patterns in the order rax rbx rcx rdx rsi rdi rbp r8 ... r15. */
#define PAT_RAX 0x8101010101010101
#define PAT_RBX 0x8202020202020202
#define PAT_RCX 0x8303030303030303
#define PAT_RDX 0x8404040404040404
#define PAT_RSI 0x8505050505050505
#define PAT_RDI 0x8606060606060606
#define PAT_RBP 0x8707070707070707
#define PAT_R8 0x8808080808080808
#define PAT_R9 0x8909090909090909
#define PAT_R10 0x8a0a0a0a0a0a0a0a
#define PAT_R11 0x8b0b0b0b0b0b0b0b
#define PAT_R12 0x8c0c0c0c0c0c0c0c
#define PAT_R13 0x8d0d0d0d0d0d0d0d
#define PAT_R14 0x8e0e0e0e0e0e0e0e
#define PAT_R15 0x8f0f0f0f0f0f0f0f
/* Red-zone slot k (1..16, at site_rsp - 8k) holds REDZONE_BASE + k - 1. */
#define REDZONE_BASE 0x5a5a000000000000

/* struct regs_out offsets */
#define OUT_GPR 0      /* 15 quads */
#define OUT_FLAGS 120
#define OUT_RSP 128    /* rsp at the site */
#define OUT_REDZONE 136 /* 16 quads: slot k at OUT_REDZONE + 8(k-1) */
#define OUT_VEC 264    /* 16 x 32 bytes (xmm: low 16 of each) */
#define OUT_SIZE 776

#endif

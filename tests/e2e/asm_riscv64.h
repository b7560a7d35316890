/* SPDX-License-Identifier: MIT */
/*
 * Macros for the riscv64 assembly test functions (included by .S files only).
 *
 * FUNC/ENDF give every function an ELF type and size, so the engine can find
 * its bounds in the symbol table, and also record (start, size) in the
 * np_funcs section so the C side can pass the bounds explicitly.
 *
 * I(insn) labels one instruction as a probe site: its address, how many
 * times one call of the enclosing test group executes it, and flags go to
 * the np_sites section. IN(n, insn) for an instruction run n times, I0 for
 * one never run, IJ for a function-entry instruction that must
 * get NP_STRATEGY_JUMP under AUTO.
 *
 * Local label 9 belongs to I(); instructions must not use it.
 */
#ifndef NP_E2E_ASM_RISCV64_H
#define NP_E2E_ASM_RISCV64_H

#define MAGIC 0x600dcafe
#define SITE_MUST_JUMP 1

#define FUNC(f)                                                              \
	.globl f;                                                            \
	.type f, @function;                                                  \
	f:
#define ENDF(f)                                                              \
	.L_fend_##f:                                                         \
	.size f, .L_fend_##f - f;                                            \
	.pushsection np_funcs, "aw";                                         \
	.balign 8;                                                           \
	.quad f, .L_fend_##f - f;                                            \
	.popsection

#define SITE(cnt, flg)                                                       \
	.pushsection np_sites, "aw";                                         \
	.balign 8;                                                           \
	.quad 9b;                                                            \
	.long cnt, flg;                                                      \
	.popsection
#define I(...) 9: __VA_ARGS__; SITE(1, 0)
#define IN(n, ...) 9: __VA_ARGS__; SITE(n, 0)
#define I0(...) 9: __VA_ARGS__; SITE(0, 0)
#define IJ(...) 9: __VA_ARGS__; SITE(1, SITE_MUST_JUMP)

/* A test group: an entry function called as uint64_t f(void) that returns
 * MAGIC, plus the helpers it calls, laid out contiguously up to GROUP_END.
 * Every site between the two belongs to the group. */
#define GROUP_BEGIN(f)                                                       \
	.pushsection .rodata.str1.1, "aMS", @progbits, 1;                    \
	.L_gname_##f: .asciz #f;                                             \
	.popsection;                                                         \
	.pushsection np_groups, "aw";                                        \
	.balign 8;                                                           \
	.quad f, .L_gend_##f, .L_gname_##f;                                  \
	.popsection;                                                         \
	.text;                                                               \
	.p2align 3
#define GROUP_END(f) .L_gend_##f:

#define NOTE_GNU_STACK .section .note.GNU-stack, "", @progbits

#endif

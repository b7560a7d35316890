/* SPDX-License-Identifier: MIT */
/*
 * The free-register analysis, shared by every ISA (the riscv64 kernel
 * optprobes' forward scan, taken further; docs/design.md): which general
 * registers may a patch or a relocated instruction clobber at a given
 * address of a function?
 *
 * Pure like the ISA code: it works on a function's bytes through the
 * np_isa hooks decode(), reg_use() and pair_target() and the convention
 * masks call_clobbered, call_always, entry_dead, ret_regs, scratch_ok and
 * millicode_link, so every ISA gets it by filling those. See freereg.c
 * for the rules.
 */
#ifndef NP_ARCH_FREEREG_H
#define NP_ARCH_FREEREG_H

#include "arch/arch.h"

enum np_freereg_flag {
	/* code starts at a function entry that is only reached by calls, so
	 * the calling convention applies there (entry_dead) */
	NP_FREEREG_ENTRY = 1u << 0,
};

struct np_freereg_insn;

/*
 * What one function's bytes cannot tell: how the rest of its module
 * treats registers across calls (src/arch/regsum.h computes it from every
 * function of the module). Without it (NULL) the analysis assumes the
 * least: any caller may rely on a caller-saved register the function does
 * not write itself, and a direct call may leave every register but
 * call_always as it was. Either way it is sound for -fipa-ra code.
 */
struct np_freereg_env {
	/* registers no caller of the function reads once it has returned:
	 * more than the function's own writes when the module shows that
	 * only the convention reaches it, or what its callees write */
	uint64_t ret_dead;
	/* the caller-saved registers a direct call to target surely leaves
	 * holding nothing the caller relies on (its callee's clobber set, as
	 * far as the module shows it); NULL: none but call_always */
	uint64_t (*call_kills)(const void *cookie, uint64_t target);
	const void *cookie;
};

struct np_freereg {
	const struct np_isa *isa;
	uint64_t base;                 /* pc of the first byte */
	size_t len;
	unsigned flags;
	const struct np_freereg_env *env; /* borrowed during the analysis only */
	uint64_t ret_dead;             /* registers dead at the function's returns */
	size_t n;                      /* decoded units, in address order */
	struct np_freereg_insn *insn;
};

/* Analyse [code, code + len) at pc, the whole body of one function from
 * its first instruction (a call to pc is a recursive call). env may be
 * NULL; it is not kept. 0, -EOPNOTSUPP (the ISA has no reg_use hook) or
 * -ENOMEM. Release with np_freereg_release(). */
int np_freereg_analyse(const struct np_isa *isa, const uint8_t *code, size_t len, uint64_t pc,
		       unsigned flags, const struct np_freereg_env *env, struct np_freereg *fr);
/* Registers (bit i: np_regs.gpr[i], within isa->scratch_ok) free at pc:
 * whatever value they hold there is never read. 0 when pc is not an
 * instruction boundary of the function. */
uint64_t np_freereg_at(const struct np_freereg *fr, uint64_t pc);
/* Registers free at every instruction of [from, to) (whole instructions),
 * as np_reloc.scratch wants them. */
uint64_t np_freereg_over(const struct np_freereg *fr, uint64_t from, uint64_t to);
void np_freereg_release(struct np_freereg *fr);

#endif

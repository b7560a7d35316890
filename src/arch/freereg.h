/* SPDX-License-Identifier: MIT */
/*
 * The free-register analysis, shared by every ISA (field guide,
 * principle 9): which general registers may a patch or a relocated
 * instruction clobber at a given address of a function?
 *
 * Pure like the ISA code: it works on a function's bytes through the
 * np_isa hooks decode() and reg_use() and the convention masks
 * call_clobbered, entry_dead and scratch_ok, so arm64 and x86-64 get it
 * by filling those. See freereg.c for the rules.
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

struct np_freereg {
	const struct np_isa *isa;
	uint64_t base;                 /* pc of the first byte */
	size_t len;
	unsigned flags;
	size_t n;                      /* decoded units, in address order */
	struct np_freereg_insn *insn;
};

/* Analyse [code, code + len) at pc. 0, -EOPNOTSUPP (the ISA has no
 * reg_use hook) or -ENOMEM. Release with np_freereg_release(). */
int np_freereg_analyse(const struct np_isa *isa, const uint8_t *code, size_t len, uint64_t pc,
		       unsigned flags, struct np_freereg *fr);
/* Registers (bit i: np_regs.gpr[i], within isa->scratch_ok) free at pc:
 * whatever value they hold there is never read. 0 when pc is not an
 * instruction boundary of the function. */
uint64_t np_freereg_at(const struct np_freereg *fr, uint64_t pc);
/* Registers free at every instruction of [from, to) (whole instructions),
 * as np_reloc.scratch wants them. */
uint64_t np_freereg_over(const struct np_freereg *fr, uint64_t from, uint64_t to);
void np_freereg_release(struct np_freereg *fr);

#endif

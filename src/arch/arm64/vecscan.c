/* SPDX-License-Identifier: MIT */
/*
 * Does a handler touch FP/SIMD (V0-V31, FPCR, FPSR), SVE or SME state?
 *
 * The trampoline saves the vector registers around a handler only when
 * the handler can change them, as on x86-64. We decode the handler along
 * every path, following direct branches and calls, and calls through a
 * PLT stub by reading its GOT slot as it is now:
 *
 *   adrp x16, PAGE ; ldr x17, [x16, #OFF] ; add x16, x16, #OFF ; br x17
 *
 * The answer is "yes" at any instruction of the SIMD&FP data-processing
 * group (op0 = x111), any load/store with V = 1, any SVE or SME encoding,
 * an access to FPCR/FPSR, an svc (a system call may discard the SVE
 * state beyond the low 128 bits), any other indirect branch, a word that
 * does not decode, or a function too large to follow. A lazily bound GOT
 * slot points at the dynamic linker's resolver, which saves the vector
 * registers itself: also "yes", the conservative answer.
 */
#include <errno.h>
#include <stdlib.h>

#include "arch/arm64/internal.h"
#include "arch/codewalk.h"

A64_INSN(simd_fp_dp, 0x0e000000, 0x0e000000) /* op0 x111 */
A64_INSN(ldst_vector, 0x0e000000, 0x0c000000) /* op0 x1x0 with V (bit 26) set */
A64_INSN(sve, 0x1e000000, 0x04000000)        /* op0 0010 */
A64_INSN(sme, 0x9e000000, 0x80000000)        /* op0 0000 with bit 31 */
A64_INSN(fpcr_fpsr, 0xffdfffc0, 0xd51b4400)  /* mrs/msr fpcr or fpsr */
A64_INSN(plt_adrp_x16, 0x9f00001f, 0x90000010)
A64_INSN(plt_ldr_x17, 0xffc003ff, 0xf9400211) /* ldr x17, [x16, #imm] */
A64_INSN(plt_br_x17, 0xffffffff, 0xd61f0220)

struct scan {
	const struct np_mem *mem;
	struct np_walk w;
};

static bool touches_state(uint32_t w)
{
	return a64_is_simd_fp_dp(w) || a64_is_ldst_vector(w) || a64_is_sve(w) || a64_is_sme(w) ||
	       a64_is_fpcr_fpsr(w) || a64_is_svc(w);
}

/* If the four words at pc are a PLT stub, where its GOT slot points. */
static int plt_target(const struct scan *s, uint64_t pc, uint64_t *to)
{
	uint8_t b[16];
	uint32_t w[4];
	uint64_t slot;

	if (s->mem->read(s->mem->cookie, pc, b, sizeof(b)))
		return -EFAULT;
	for (int i = 0; i < 4; i++)
		w[i] = a64_word(b + 4 * i);
	if (!a64_is_plt_adrp_x16(w[0]) || !a64_is_plt_ldr_x17(w[1]) || !a64_is_plt_br_x17(w[3]))
		return -ENOENT;
	slot = a64_pcrel_target(w[0], pc) + a64_bits(w[1], 10, 12) * 8;
	return s->mem->read(s->mem->cookie, slot, to, sizeof(*to));
}

/* 1: stop this path, 0: go on to the next instruction, -1: answer yes. */
static int step(struct scan *s, uint32_t w, const struct np_insn *in)
{
	uint64_t to;

	if (touches_state(w) || in->cls == NP_INSN_REJECTED)
		return -1;
	if (a64_is_plt_adrp_x16(w) && plt_target(s, in->pc, &to) == 0)
		return np_walk_push(&s->w, to) ? 1 : -1;
	if ((in->flags & NP_INSN_INDIRECT) && !(in->flags & NP_INSN_RET))
		return -1;
	if ((in->flags & NP_INSN_BRANCH) && !np_walk_push(&s->w, in->target))
		return -1;
	return (in->flags & (NP_INSN_RET | NP_INSN_NOFALL)) ? 1 : 0;
}

static int scan_path(struct scan *s, uint64_t pc)
{
	while (np_walk_mark(&s->w, pc)) {
		uint8_t code[4];
		struct np_insn in;
		int r;

		if (!np_walk_step(&s->w) || s->mem->read(s->mem->cookie, pc, code, 4) ||
		    a64_decode(code, 4, pc, &in))
			return -1;
		r = step(s, a64_word(code), &in);
		if (r)
			return r < 0 ? -1 : 0;
		pc += 4;
	}
	return 0;
}

int a64_vector_state_used(uint64_t fn, const struct np_mem *mem)
{
	/* 66 KiB: not for the stack of a thread the probe interrupted */
	struct scan *s = calloc(1, sizeof(*s));
	int used = 0;

	if (!s)
		return 1; /* cannot prove it: save the state */
	s->mem = mem;
	np_walk_push(&s->w, fn);
	for (uint64_t pc; !used && np_walk_pop(&s->w, &pc);)
		used = scan_path(s, pc) < 0;
	free(s);
	return used;
}

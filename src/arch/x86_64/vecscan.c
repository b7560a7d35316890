/* SPDX-License-Identifier: MIT */
/*
 * Does a handler touch vector, x87 or MXCSR state?
 *
 * Saving the program's extended state around every handler call (XSAVEC,
 * tens of nanoseconds) is only needed when the handler can change it. A
 * counting or timestamping handler never does; one that calls libc's
 * memset does (AVX2, then vzeroupper). So we decode the handler: every
 * path, following direct calls and jumps, and jumps through rip-relative
 * pointers (PLT slots) by reading the pointer as it is now. Any
 * instruction with a vector, x87, MMX, mask or tile operand, any state
 * save/restore or vzero*, any other indirect branch, any undecodable byte,
 * or a function too large to follow answers "yes". A lazily bound PLT slot
 * still points at the dynamic linker's resolver, which saves vector state
 * itself: also "yes", which is the conservative answer.
 */
#include "arch/x86_64/internal.h"
#include "arch/codewalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct scan {
	const struct np_mem *mem;
	struct np_walk w;
};

static bool vector_register(ZydisRegister r)
{
	switch (ZydisRegisterGetClass(r)) {
	case ZYDIS_REGCLASS_X87:
	case ZYDIS_REGCLASS_MMX:
	case ZYDIS_REGCLASS_XMM:
	case ZYDIS_REGCLASS_YMM:
	case ZYDIS_REGCLASS_ZMM:
	case ZYDIS_REGCLASS_TMM:
	case ZYDIS_REGCLASS_MASK:
		return true;
	default:
		return r == ZYDIS_REGISTER_MXCSR || r == ZYDIS_REGISTER_X87CONTROL ||
		       r == ZYDIS_REGISTER_X87STATUS || r == ZYDIS_REGISTER_X87TAG;
	}
}

static bool touches_state(const struct x86_insn *x)
{
	switch (x->zi.mnemonic) {
	case ZYDIS_MNEMONIC_VZEROUPPER:
	case ZYDIS_MNEMONIC_VZEROALL:
	case ZYDIS_MNEMONIC_FXRSTOR:
	case ZYDIS_MNEMONIC_FXRSTOR64:
	case ZYDIS_MNEMONIC_XRSTOR:
	case ZYDIS_MNEMONIC_XRSTOR64:
	case ZYDIS_MNEMONIC_XRSTORS:
	case ZYDIS_MNEMONIC_XRSTORS64:
	case ZYDIS_MNEMONIC_EMMS:
	case ZYDIS_MNEMONIC_FEMMS:
		return true;
	default:
		break;
	}
	for (unsigned i = 0; i < x->zi.operand_count; i++) {
		const ZydisDecodedOperand *op = &x->ops[i];
		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && vector_register(op->reg.value))
			return true;
		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && vector_register(op->mem.index))
			return true; /* VSIB gathers and scatters */
	}
	return false;
}

/* Where an indirect jump or call through a rip-relative slot goes now. */
static int follow_slot(const struct scan *s, const struct np_insn *in, uint64_t *to)
{
	if (!(in->flags & NP_INSN_PCREL) || !s->mem->read)
		return -ENOENT;
	return s->mem->read(s->mem->cookie, in->target, to, sizeof(*to));
}

/* 1: stop this path, 0: go on to the next instruction, -1: answer yes. */
static int step(struct scan *s, const struct x86_insn *x, const struct np_insn *in)
{
	if (touches_state(x) || in->cls == NP_INSN_REJECTED)
		return -1;
	if (in->flags & NP_INSN_INDIRECT) {
		uint64_t to;
		if (follow_slot(s, in, &to) || !np_walk_push(&s->w, to))
			return -1;
		return (in->flags & NP_INSN_CALL) ? 0 : 1;
	}
	if ((in->flags & NP_INSN_BRANCH) && !np_walk_push(&s->w, in->target))
		return -1;
	return (in->flags & (NP_INSN_RET | NP_INSN_NOFALL)) ? 1 : 0;
}

static int scan_path(struct scan *s, uint64_t pc)
{
	while (np_walk_mark(&s->w, pc)) {
		uint8_t code[15];
		struct x86_insn x;
		struct np_insn in;
		size_t avail = sizeof(code); /* less when a hole follows closely */
		while (avail && s->mem->read(s->mem->cookie, pc, code, avail))
			avail--;
		if (!np_walk_step(&s->w) || !avail)
			return -1;
		if (x86_zdecode(code, avail, &x))
			return -1;
		x86_classify(&x, pc, &in);
		int r = step(s, &x, &in);
		if (r)
			return r < 0 ? -1 : 0;
		pc += in.len;
	}
	return 0;
}

int x86_vector_state_used(uint64_t fn, const struct np_mem *mem)
{
	/* 66 KiB: not for the stack, and not thread-local either: the agent
	 * is dlopen'ed, where static TLS is a few hundred bytes. */
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

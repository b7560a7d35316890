/* SPDX-License-Identifier: MIT */
/*
 * Does a handler touch floating-point (or vector) state? When it provably
 * does not, a trampoline may skip saving the f registers and fcsr.
 *
 * Every path from fn is followed, through direct calls, jumps and both
 * sides of branches, until returns. Any F/D load, store or operation, any
 * CSR access (fcsr lives there), any opcode outside RV64GC (the V
 * extension among them), an indirect jump or call, or more code than the
 * bounded worklist holds, answers 1: the conservative answer.
 */
#include <errno.h>
#include <stdlib.h>

#include "arch/riscv64/internal.h"

#define RV_SCAN_MAX 1024 /* instructions followed before giving up */

struct scan {
	uint64_t todo[64];
	unsigned ntodo;
	uint64_t seen[RV_SCAN_MAX];
	unsigned nseen;
};

static bool touches_fp(uint32_t x)
{
	switch (rv_opcode(x)) {
	case RV_OP_LOAD_FP: case RV_OP_STORE_FP: case RV_OP_FP:
	case RV_OP_MADD: case RV_OP_MSUB: case RV_OP_NMSUB: case RV_OP_NMADD:
		return true;
	case RV_OP_SYSTEM:
		return rv_funct3(x) != 0;
	default:
		return false;
	}
}

static bool seen(struct scan *s, uint64_t pc)
{
	for (unsigned i = 0; i < s->nseen; i++)
		if (s->seen[i] == pc)
			return true;
	return false;
}

static int push(struct scan *s, uint64_t pc)
{
	if (s->ntodo == RV_ARRAY_SIZE(s->todo))
		return -ENOSPC;
	s->todo[s->ntodo++] = pc;
	return 0;
}

static int fetch(const struct np_mem *mem, uint64_t pc, uint8_t b[4], struct np_insn *ni)
{
	if (mem->read(mem->cookie, pc, b, 2))
		return -EFAULT;
	if ((b[0] & 3) == 3 && mem->read(mem->cookie, pc + 2, b + 2, 2))
		return -EFAULT;
	return rv_decode(b, 4, pc, ni);
}

/* 1 when the instruction at pc ends the scan with "uses state", 0 to go on. */
static int step(struct scan *s, const struct np_mem *mem, uint64_t pc)
{
	uint8_t b[4] = {0};
	struct np_insn ni;
	struct rv_insn in;

	if (seen(s, pc))
		return 0;
	if (s->nseen == RV_SCAN_MAX || fetch(mem, pc, b, &ni))
		return 1;
	s->seen[s->nseen++] = pc;
	rv_fetch(b, 4, &in);
	if (touches_fp(in.x) || (ni.flags & NP_INSN_INDIRECT))
		return 1;
	if (ni.flags & NP_INSN_RET)
		return 0;
	if ((ni.flags & NP_INSN_BRANCH) && push(s, ni.target))
		return 1;
	if (!(ni.flags & NP_INSN_NOFALL) && push(s, pc + ni.len))
		return 1;
	return 0;
}

int rv_vector_state_used(uint64_t fn, const struct np_mem *mem)
{
	/* 8.6 KiB: not for the stack of a thread the probe interrupted, and
	 * not thread-local either: in the agent, whose TLS is initial-exec,
	 * it would not fit the few hundred bytes of static TLS glibc keeps
	 * for libraries loaded later, and dlopen (the injected start) failed */
	struct scan *s = calloc(1, sizeof(*s));
	int used = 1; /* cannot prove it: save the state */

	if (s && !push(s, fn)) {
		used = 0;
		while (!used && s->ntodo)
			used = step(s, mem, s->todo[--s->ntodo]);
	}
	free(s);
	return used;
}

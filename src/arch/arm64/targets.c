/* SPDX-License-Identifier: MIT */
/*
 * Branch targets of a whole function, so that the core never displaces
 * an instruction some branch lands on.
 *
 * On arm64 the JUMP patch is one word, so it displaces exactly the
 * instruction probed and no other; this list matters to the core's
 * neighbour scan and to the count of indirect jumps it cannot prove.
 *
 * The function is read linearly, word by word. Direct branches report
 * their target. `adr` reports the address it forms (formed): that is how
 * gcc and clang form the base of a switch table (`adr x1, .Lbase; add x0,
 * x1, w0, sxtb #2; br x0`) and the address of a computed goto label, so
 * it is code some indirect jump may reach. Every `br` and `braa*` is
 * reported unresolved, computed (loaded_at 0): the table entries are
 * relative to a base only data flow can tie to them, and where a pointer
 * comes from would take pairing every adrp with its add, which a linear
 * scan cannot always do (the planner's rule for loaded pointers, x86-64's,
 * needs every address the function forms). Calls and returns come back
 * or leave, and are not counted. A run of words that do not decode (a
 * literal pool) counts as one unresolved jump, the conservative reading
 * of bytes we cannot see through.
 */
#include <errno.h>

#include "arch/arm64/internal.h"

static void unresolved_at(const struct np_branch_sink *sink, uint64_t from)
{
	if (sink->unresolved)
		sink->unresolved(sink->cookie, from, 0);
}

int a64_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		       const struct np_branch_sink *sink)
{
	int unresolved = 0;
	bool in_junk = false;

	(void)mem;
	for (size_t off = 0; off + 4 <= len; off += 4) {
		uint32_t w = a64_word(code + off);
		struct np_insn in;

		if (a64_decode(code + off, 4, pc + off, &in)) {
			if (!in_junk) {
				unresolved++;
				unresolved_at(sink, pc + off);
			}
			in_junk = true;
			continue;
		}
		in_junk = false;
		if (in.flags & NP_INSN_BRANCH)
			sink->target(sink->cookie, pc + off, in.target);
		else if (a64_is_adr(w) && sink->formed)
			sink->formed(sink->cookie, pc + off, in.target);
		if ((in.flags & NP_INSN_INDIRECT) && !(in.flags & NP_INSN_CALL)) {
			unresolved++;
			unresolved_at(sink, pc + off);
		}
	}
	return unresolved;
}

/* SPDX-License-Identifier: MIT */
/*
 * Branch targets of a whole function, so that the core never displaces
 * bytes a jump lands inside.
 *
 * RISC-V code is a sweep of 2- and 4-byte instructions, so a linear
 * decode finds every direct target. An indirect jump that is not a
 * return (`jr a5` after a table load, a tail call through a register)
 * may land anywhere; each one is counted as unresolved, and the core then
 * displaces no more than the first instruction. Words that are not
 * RV64GC (data, or another extension) are skipped by the length their
 * low bits give; each run of them counts as one unresolved jump, since
 * it may hide one.
 */
#include <errno.h>

#include "arch/riscv64/internal.h"

int rv_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		      void (*found)(void *cookie, uint64_t target), void *cookie)
{
	int unresolved = 0;
	bool in_bad = false;
	size_t off = 0;

	while (off + 2 <= len) {
		struct np_insn in;
		int err = rv_decode(code + off, len - off, pc + off, &in);

		if (err == -ENODATA)
			break;
		if (err) { /* the low bits still give the length */
			unresolved += !in_bad;
			in_bad = true;
			off += (code[off] & 3) == 3 && (code[off] & 0x1f) != 0x1f ? 4 : 2;
			continue;
		}
		in_bad = false;
		if (in.flags & NP_INSN_BRANCH)
			found(cookie, in.target);
		else if ((in.flags & NP_INSN_INDIRECT) && !(in.flags & NP_INSN_CALL))
			unresolved++;
		off += in.len;
	}
	return unresolved;
}

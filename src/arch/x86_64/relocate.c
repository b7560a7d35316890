/* SPDX-License-Identifier: MIT */
/*
 * Relocation: the displaced instructions, rewritten to run at dst_pc with
 * the meaning they had at src_pc.
 *
 * Only a few things on x86-64 depend on where an instruction sits:
 *
 *   - rip-relative memory operands: copied with disp32 recomputed
 *     (-ERANGE beyond +-2 GiB of the new position; the length never
 *     changes, so any immediate after the displacement stays put);
 *   - relative branches: re-emitted with rel32, or with an absolute
 *     `jmp *0(%rip)` when the target is out of rel32 reach. jrcxz and
 *     loop* only exist with rel8, so they become
 *         jrcxz 1f; jmp 2f; 1: jmp target; 2:
 *   - calls push the address of the next instruction. That must stay the
 *     ORIGINAL return address (unwinders, return probes and the program
 *     itself look at it), so a call becomes a real call to the next
 *     instruction but one, the ORIGINAL return address stored over the
 *     one it pushed, then a jmp: direct calls jump to the target,
 *     indirect ones turn `ff /2` into `ff /4` on the same operand. The
 *     real call keeps the CPU's return stack buffer in step with the
 *     stack: the callee's `ret` is mispredicted once (the buffer holds the
 *     trampoline's address), and every return after it is predicted. A
 *     push+jmp, which feeds the buffer nothing, left every return above
 *     the callee mispredicted too. An rsp-based operand is re-encoded with
 *     8 more in its displacement because of the pushed word; `call *%rsp`
 *     itself is refused.
 *
 * Everything else is copied byte for byte. None of the sequences uses a
 * scratch register or changes rflags. Instructions decode.c rejects make
 * the whole relocation fail with -EOPNOTSUPP.
 *
 * The relocated call leaves a CET shadow stack (user shadow stacks,
 * Linux 6.6+) holding the trampoline's address where the stack holds the
 * original one, so the callee's ret would fault: the runtime must not
 * relocate calls when it is enabled.
 */
#include <errno.h>
#include <string.h>

#include "arch/x86_64/internal.h"

#define MODRM_REG_MASK 0x38
#define MODRM_REG_JMP  (4 << 3) /* ff /4: jmp r/m64 (call is ff /2) */

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Copy 'b' (the instruction, possibly edited) with its rip-relative
 * displacement aimed at 'target' from the new position. */
static int out_riprel(struct x86_out *o, uint8_t *b, const struct x86_insn *x, uint64_t target)
{
	int64_t disp = (int64_t)(target - (x86_out_pc(o) + x->zi.length));

	if (x->zi.raw.disp.size != 32)
		return -EOPNOTSUPP;
	if (!x86_fits_i32(disp))
		return -ERANGE;
	put_le32(b + x->zi.raw.disp.offset, (uint32_t)disp);
	return x86_out_bytes(o, b, x->zi.length);
}

/* jrcxz/jecxz/loop*: keep prefixes and opcode, aim the rel8 at a jmp. */
static int reloc_rcx_branch(struct x86_out *o, const uint8_t *src, const struct x86_insn *x,
			    uint64_t target)
{
	uint8_t head[ZYDIS_MAX_INSTRUCTION_LENGTH], skip[2] = {0xeb, 0};
	size_t n = x->zi.raw.imm[0].offset, at;
	int err;

	memcpy(head, src, n);
	head[n++] = sizeof(skip); /* taken: over the short jmp to the far one */
	err = x86_out_bytes(o, head, n);
	if (!err)
		err = x86_out_bytes(o, skip, sizeof(skip));
	if (err)
		return err;
	at = o->len;
	err = x86_out_jmp(o, target, false);
	if (err)
		return err;
	o->buf[at - 1] = (uint8_t)(o->len - at); /* not taken: over the far jmp */
	return 0;
}

/* call *disp(%rsp...) after our call pushed a word: the same slot is 8 bytes
 * further. */
static int out_jmp_rsp_mem(struct x86_out *o, const struct x86_insn *x)
{
	ZydisEncoderRequest req;
	uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
	ZyanUSize n = sizeof(b);

	if (!ZYAN_SUCCESS(ZydisEncoderDecodedInstructionToEncoderRequest(
		    &x->zi, x->ops, x->zi.operand_count_visible, &req)))
		return -EOPNOTSUPP;
	req.mnemonic = ZYDIS_MNEMONIC_JMP;
	req.operands[0].mem.displacement += 8;
	if (!x86_fits_i32(req.operands[0].mem.displacement))
		return -ERANGE;
	if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstruction(&req, b, &n)))
		return -EOPNOTSUPP;
	return x86_out_bytes(o, b, n);
}

static int reloc_call_indirect(struct x86_out *o, const uint8_t *src, const struct x86_insn *x,
			       const struct np_insn *n)
{
	const ZydisDecodedOperand *op = &x->ops[0];
	uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
	bool rsp_mem = op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		       (op->mem.base == ZYDIS_REGISTER_RSP || op->mem.base == ZYDIS_REGISTER_ESP);
	int err;

	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && op->reg.value == ZYDIS_REGISTER_RSP)
		return -EOPNOTSUPP; /* our call would move the target itself */
	if (!(x->zi.attributes & ZYDIS_ATTRIB_HAS_MODRM))
		return -EOPNOTSUPP;
	err = x86_out_call_returning_to(o, n->pc + n->len);
	if (err)
		return err;
	if (rsp_mem)
		return out_jmp_rsp_mem(o, x);
	/* Same bytes, prefixes (notrack) included; only ModRM.reg changes. */
	memcpy(b, src, x->zi.length);
	b[x->zi.raw.modrm.offset] =
		(uint8_t)((b[x->zi.raw.modrm.offset] & ~MODRM_REG_MASK) | MODRM_REG_JMP);
	if (n->flags & NP_INSN_PCREL)
		return out_riprel(o, b, x, n->target);
	return x86_out_bytes(o, b, x->zi.length);
}

static int reloc_branch(struct x86_out *o, const uint8_t *src, const struct x86_insn *x,
			const struct np_insn *n)
{
	int err;

	if (n->flags & NP_INSN_CALL) {
		err = x86_out_call_returning_to(o, n->pc + n->len);
		return err ? err : x86_out_jmp(o, n->target, false);
	}
	if (!(n->flags & NP_INSN_COND))
		return x86_out_jmp(o, n->target, false);
	/* Every jcc is simulated, so its sim id names the condition. */
	if (X86_SIM_KIND(n->sim) == X86_SIM_JCC)
		return x86_out_jcc(o, X86_SIM_ARG(n->sim), n->target);
	return reloc_rcx_branch(o, src, x, n->target);
}

static int reloc_one(struct x86_out *o, const uint8_t *src, const struct x86_insn *x,
		     const struct np_insn *n)
{
	uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];

	if (n->cls == NP_INSN_REJECTED)
		return -EOPNOTSUPP;
	if (n->flags & NP_INSN_BRANCH)
		return reloc_branch(o, src, x, n);
	if ((n->flags & (NP_INSN_CALL | NP_INSN_INDIRECT)) == (NP_INSN_CALL | NP_INSN_INDIRECT))
		return reloc_call_indirect(o, src, x, n);
	if (n->flags & NP_INSN_PCREL) {
		memcpy(b, src, n->len);
		return out_riprel(o, b, x, n->target);
	}
	return x86_out_bytes(o, src, n->len);
}

int x86_relocate(const struct np_reloc *r)
{
	struct x86_out o = {.buf = r->dst, .cap = r->dst_cap, .pc = r->dst_pc};
	int err = 0;

	for (size_t off = 0; off < r->src_len;) {
		struct x86_insn x;
		struct np_insn n;

		/* A truncated last instruction is not a whole instruction. */
		if (x86_zdecode(r->src + off, r->src_len - off, &x))
			return -EILSEQ;
		x86_classify(&x, r->src_pc + off, &n);
		err = reloc_one(&o, r->src + off, &x, &n);
		if (err)
			return err;
		off += n.len;
	}
	if (r->resume_pc)
		err = x86_out_jmp(&o, r->resume_pc, false);
	return err ? err : (int)o.len;
}

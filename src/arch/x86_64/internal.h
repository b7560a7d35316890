/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the pure x86-64 ISA files.
 *
 * Zydis does the decoding; these files add what a probe engine needs on
 * top of it: a class and flags per instruction (decode.c), a rewrite that
 * keeps every pc-relative meaning when code moves (relocate.c), an
 * emulator for the instructions the trap path performs itself
 * (simulate.c), jump encodings (emit.c), the branch targets of a function
 * (targets.c), what an instruction does to the stack and frame pointers
 * (frame.c) and objdump-like text (format.c).
 *
 * The simulator sees only struct np_insn, never the bytes (at trap time
 * the first byte is already 0xcc), so decode.c packs everything a
 * simulator needs into the 16-bit sim id: a 4-bit kind and a 12-bit
 * argument (a register number, a condition code, an immediate), plus
 * np_insn.target for branch targets and rip-relative addresses.
 */
#ifndef NP_ARCH_X86_64_INTERNAL_H
#define NP_ARCH_X86_64_INTERNAL_H

#include <Zydis/Zydis.h>

#include "arch/arch.h"

#define X86_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* One decoded instruction as Zydis sees it: visible and hidden operands. */
struct x86_insn {
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

/* Decode one instruction in 64-bit mode: 0, -EILSEQ, -ENODATA. */
int x86_zdecode(const uint8_t *code, size_t avail, struct x86_insn *x);
/* Length and category only (no operands): several times faster, for
 * sweeps that look closer only at control flow. 0 or -EILSEQ. */
int x86_zdecode_quick(const uint8_t *code, size_t avail, ZydisDecodedInstruction *zi);
/* The np_isa insn_length hook: the length only, through Zydis'
 * instruction decoder, which calls no libc (its operand decoder does). */
int x86_insn_length(const uint8_t *code, size_t avail);
/* Class, flags, target and sim id of an already decoded instruction. */
void x86_classify(const struct x86_insn *x, uint64_t pc, struct np_insn *out);
/* Hardware number (rax 0 .. r15 15) of a 64-bit GPR, -1 for anything else. */
int x86_gpr64(ZydisRegister reg);
/* Does the instruction write 'reg' (any width of it), visibly or not? */
bool x86_writes(const struct x86_insn *x, ZydisRegister reg);

/* vecscan.c: does the code at fn touch vector state? (np_isa hook) */
int x86_vector_state_used(uint64_t fn, const struct np_mem *mem);

/* usdt.c: a USDT argument's operand in AT&T syntax (np_isa hook). */
int x86_usdt_operand(const char *text, size_t len, struct np_usdt_arg *out,
		     struct np_usdt_span *sym, const char **why);

/* Simulator kinds, the top 4 bits of np_insn.sim. */
enum x86_sim_kind {
	X86_SIM_NOP = 1,  /* every nop form and endbr64 */
	X86_SIM_PUSH,     /* arg: register */
	X86_SIM_POP,      /* arg: register */
	X86_SIM_RET,      /* arg: imm16 to release (0 for plain ret) */
	X86_SIM_JMP,      /* target */
	X86_SIM_CALL,     /* target */
	X86_SIM_JCC,      /* arg: condition code (low nibble of the opcode) */
	X86_SIM_LOOP,     /* arg: X86_LOOP_* variant | X86_LOOP_ECX; target */
	X86_SIM_LEA,      /* arg: register | X86_LEA_32; target = address */
	X86_SIM_MOV,      /* arg: dst | src << 4 (64-bit registers) */
	X86_SIM_JMP_REG,  /* arg: register */
	X86_SIM_CALL_REG, /* arg: register */
	X86_SIM_ADD_RSP,  /* arg: immediate (flags are computed) */
	X86_SIM_SUB_RSP,  /* arg: immediate (flags are computed) */
	X86_SIM_NKINDS,
};

#define X86_SIM(kind, arg)  ((uint16_t)((unsigned)(kind) << 12 | (unsigned)(arg)))
#define X86_SIM_KIND(id)    ((unsigned)(id) >> 12)
#define X86_SIM_ARG(id)     ((unsigned)(id) & 0xfffu)
#define X86_SIM_ARG_MAX     0xfffu
_Static_assert(X86_SIM_NKINDS <= 16, "sim kind must fit in 4 bits");

enum { X86_LOOP_JRCXZ = 0, X86_LOOP_LOOP = 1, X86_LOOP_LOOPE = 2, X86_LOOP_LOOPNE = 3 };
#define X86_LOOP_ECX 0x4u /* addr32 prefix: ecx is the counter */
#define X86_LEA_32   0x10u /* 32-bit destination, zero-extended */

/* rflags bits the simulators read or write. */
#define X86_CF (1u << 0)
#define X86_PF (1u << 2)
#define X86_AF (1u << 4)
#define X86_ZF (1u << 6)
#define X86_SF (1u << 7)
#define X86_OF (1u << 11)

/* Is the condition code 'cc' (0..15, Intel order) true under 'rflags'? */
bool x86_cond(unsigned cc, uint64_t rflags);

/* A growing output buffer that knows the pc its first byte runs at. */
struct x86_out {
	uint8_t *buf;
	size_t cap;
	size_t len;
	uint64_t pc;
};

static inline uint64_t x86_out_pc(const struct x86_out *o)
{
	return o->pc + o->len;
}

static inline bool x86_fits_i32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

int x86_out_bytes(struct x86_out *o, const void *p, size_t n);
int x86_out_u32(struct x86_out *o, uint32_t v);
/* jmp to 'to': rel8 (if allowed and in reach), rel32, or the 14-byte
 * absolute form `jmp *0(%rip); .quad to`, which touches no register. */
int x86_out_jmp(struct x86_out *o, uint64_t to, bool allow_rel8);
/* jcc rel32, or an inverted jcc rel8 over an absolute jmp. */
int x86_out_jcc(struct x86_out *o, unsigned cc, uint64_t to);
/* What a call does to the stack, with return address v instead of the
 * address after it, touching no register or flag: a real call (to the
 * next instruction but one), so that the CPU's return stack buffer gets
 * an entry and stays in step with the stack, then v stored over the
 * address it pushed (movq $simm32, or two movl). The return stack buffer
 * predicts the int3 skipped by the call: only speculation goes there. */
int x86_out_call_returning_to(struct x86_out *o, uint64_t v);

/* The np_isa hooks, one file each. */
int x86_decode(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out);
int x86_format(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap);
int x86_relocate(const struct np_reloc *r);
int x86_simulate(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem);
int x86_emit_jump(uint8_t *buf, uint64_t from, uint64_t to);
int x86_emit_hop(uint8_t *buf, uint64_t from, uint64_t to);
int x86_emit_trap(uint8_t *buf);
int x86_emit_jump_any(uint8_t *buf, size_t cap, uint64_t from, uint64_t to);
int x86_reg_use(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out);
int x86_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		       const struct np_branch_sink *sink);
int x86_frame_effect(const uint8_t *code, size_t avail, uint64_t pc, struct np_frame_effect *out);

#endif /* NP_ARCH_X86_64_INTERNAL_H */

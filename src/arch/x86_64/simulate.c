/* SPDX-License-Identifier: MIT */
/*
 * Emulation of the SIMULATED instructions on a register file.
 *
 * The trap path calls this with the breakpoint already written over the
 * instruction, so a simulator sees only what decode.c packed into the
 * np_insn: the kind and a 12-bit argument in sim, the branch target or
 * rip-relative address in target, and len. One simulator per kind, all
 * with the same signature; each updates pc itself. Memory goes through
 * np_mem so that a fault becomes -EFAULT instead of a crash, and on a
 * fault the register file is left as it was (every read or write happens
 * before any register is changed).
 */
#include <errno.h>

#include "arch/x86_64/internal.h"

#define RSP 4
#define RCX 1

typedef int (*x86_sim_fn)(const struct np_insn *in, unsigned arg, struct np_regs *r,
			  const struct np_mem *mem);

static uint64_t next_pc(const struct np_insn *in)
{
	return in->pc + in->len;
}

static int push64(struct np_regs *r, const struct np_mem *mem, uint64_t v)
{
	int err = mem->write(mem->cookie, r->gpr[RSP] - 8, &v, 8);

	if (err)
		return err;
	r->gpr[RSP] -= 8;
	return 0;
}

static int read64(const struct np_mem *mem, uint64_t addr, uint64_t *v)
{
	return mem->read(mem->cookie, addr, v, 8);
}

/*
 * Condition codes, Intel order: the even code tests, the odd one negates.
 *   0 o  OF      4 e  ZF        8 s  SF    12 l   SF!=OF
 *   2 b  CF      6 be CF|ZF    10 p  PF    14 le  ZF | SF!=OF
 */
bool x86_cond(unsigned cc, uint64_t f)
{
	bool cf = f & X86_CF, zf = f & X86_ZF, sf = f & X86_SF, of = f & X86_OF, pf = f & X86_PF;
	bool t;

	switch ((cc & 0xf) >> 1) {
	case 0: t = of; break;
	case 1: t = cf; break;
	case 2: t = zf; break;
	case 3: t = cf || zf; break;
	case 4: t = sf; break;
	case 5: t = pf; break;
	case 6: t = sf != of; break;
	default: t = zf || sf != of; break;
	}
	return t != (cc & 1);
}

static int sim_nop(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	r->pc = next_pc(in);
	return 0;
}

/* push %rsp stores the value before the decrement. */
static int sim_push(const struct np_insn *in, unsigned arg, struct np_regs *r,
		    const struct np_mem *mem)
{
	int err = push64(r, mem, r->gpr[arg]);

	if (!err)
		r->pc = next_pc(in);
	return err;
}

/* pop %rsp loads the value and the increment is lost. */
static int sim_pop(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	uint64_t v;
	int err = read64(mem, r->gpr[RSP], &v);

	if (err)
		return err;
	r->gpr[RSP] += 8;
	r->gpr[arg] = v;
	r->pc = next_pc(in);
	return 0;
}

/* ret $imm16 releases imm bytes of arguments after popping. */
static int sim_ret(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	uint64_t v;
	int err = read64(mem, r->gpr[RSP], &v);

	if (err)
		return err;
	r->gpr[RSP] += 8 + arg;
	r->pc = v;
	return 0;
}

static int sim_jmp(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	r->pc = in->target;
	return 0;
}

static int sim_call(const struct np_insn *in, unsigned arg, struct np_regs *r,
		    const struct np_mem *mem)
{
	int err = push64(r, mem, next_pc(in));

	if (!err)
		r->pc = in->target;
	return err;
}

static int sim_jcc(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	r->pc = x86_cond(arg, r->flags) ? in->target : next_pc(in);
	return 0;
}

/* jrcxz tests, loop* decrement then test; none touches rflags. With an
 * addr32 prefix the counter is ecx, and writing it clears the top half. */
static int sim_loop(const struct np_insn *in, unsigned arg, struct np_regs *r,
		    const struct np_mem *mem)
{
	bool ecx = arg & X86_LOOP_ECX, zf = r->flags & X86_ZF, taken;
	unsigned v = arg & 3;
	uint64_t c = r->gpr[RCX];

	if (v != X86_LOOP_JRCXZ) {
		c = ecx ? (uint32_t)(c - 1) : c - 1;
		r->gpr[RCX] = c;
	} else if (ecx) {
		c = (uint32_t)c;
	}
	if (v == X86_LOOP_JRCXZ)
		taken = c == 0;
	else if (v == X86_LOOP_LOOPE)
		taken = c != 0 && zf;
	else if (v == X86_LOOP_LOOPNE)
		taken = c != 0 && !zf;
	else
		taken = c != 0;
	r->pc = taken ? in->target : next_pc(in);
	return 0;
}

static int sim_lea(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	r->gpr[arg & 0xf] = (arg & X86_LEA_32) ? (uint32_t)in->target : in->target;
	r->pc = next_pc(in);
	return 0;
}

static int sim_mov(const struct np_insn *in, unsigned arg, struct np_regs *r,
		   const struct np_mem *mem)
{
	r->gpr[arg & 0xf] = r->gpr[arg >> 4];
	r->pc = next_pc(in);
	return 0;
}

static int sim_jmp_reg(const struct np_insn *in, unsigned arg, struct np_regs *r,
		       const struct np_mem *mem)
{
	r->pc = r->gpr[arg];
	return 0;
}

/* The target is read before the push: call *%rsp uses the old rsp. */
static int sim_call_reg(const struct np_insn *in, unsigned arg, struct np_regs *r,
			const struct np_mem *mem)
{
	uint64_t to = r->gpr[arg];
	int err = push64(r, mem, next_pc(in));

	if (!err)
		r->pc = to;
	return err;
}

/* The six arithmetic flags of a 64-bit a+b or a-b giving res. */
static uint64_t arith_flags(uint64_t old, uint64_t a, uint64_t b, uint64_t res, bool sub)
{
	uint64_t f = old & ~(uint64_t)(X86_CF | X86_PF | X86_AF | X86_ZF | X86_SF | X86_OF);
	uint64_t ovf = sub ? (a ^ b) & (a ^ res) : ~(a ^ b) & (a ^ res);

	if (sub ? a < b : res < a)
		f |= X86_CF;
	if (!__builtin_parity((unsigned)(res & 0xff)))
		f |= X86_PF; /* even number of ones in the low byte */
	if ((a ^ b ^ res) & 0x10)
		f |= X86_AF;
	if (res == 0)
		f |= X86_ZF;
	if (res >> 63)
		f |= X86_SF;
	if (ovf >> 63)
		f |= X86_OF;
	return f;
}

static int sim_add_rsp(const struct np_insn *in, unsigned arg, struct np_regs *r,
		       const struct np_mem *mem)
{
	uint64_t a = r->gpr[RSP], res = a + arg;

	r->flags = arith_flags(r->flags, a, arg, res, false);
	r->gpr[RSP] = res;
	r->pc = next_pc(in);
	return 0;
}

static int sim_sub_rsp(const struct np_insn *in, unsigned arg, struct np_regs *r,
		       const struct np_mem *mem)
{
	uint64_t a = r->gpr[RSP], res = a - arg;

	r->flags = arith_flags(r->flags, a, arg, res, true);
	r->gpr[RSP] = res;
	r->pc = next_pc(in);
	return 0;
}

static const x86_sim_fn x86_simulators[X86_SIM_NKINDS] = {
	[X86_SIM_NOP] = sim_nop,
	[X86_SIM_PUSH] = sim_push,
	[X86_SIM_POP] = sim_pop,
	[X86_SIM_RET] = sim_ret,
	[X86_SIM_JMP] = sim_jmp,
	[X86_SIM_CALL] = sim_call,
	[X86_SIM_JCC] = sim_jcc,
	[X86_SIM_LOOP] = sim_loop,
	[X86_SIM_LEA] = sim_lea,
	[X86_SIM_MOV] = sim_mov,
	[X86_SIM_JMP_REG] = sim_jmp_reg,
	[X86_SIM_CALL_REG] = sim_call_reg,
	[X86_SIM_ADD_RSP] = sim_add_rsp,
	[X86_SIM_SUB_RSP] = sim_sub_rsp,
};

int x86_simulate(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem)
{
	unsigned kind = X86_SIM_KIND(insn->sim);

	if (insn->cls != NP_INSN_SIMULATED || kind >= X86_SIM_NKINDS || !x86_simulators[kind])
		return -EOPNOTSUPP;
	return x86_simulators[kind](insn, X86_SIM_ARG(insn->sim), regs, mem);
}

/* SPDX-License-Identifier: MIT */
/* inject.c's arm64 part: the register file as PTRACE_GETREGSET
 * NT_PRSTATUS gives it, the further register sets to save, and how a
 * remote call is set up and an interrupted system call issued again
 * (isa.h says what each ISA's part provides). Included by isa.h only. */
#ifndef NP_INJECT_ISA_ARM64_H
#define NP_INJECT_ISA_ARM64_H

#define ISA_NAME     "arm64"
#define ISA_RED_ZONE 0 /* AAPCS64 on Linux: nothing lives below sp */
typedef struct user_regs_struct isa_regs;

/* The FP/SIMD registers, and the syscall number the kernel would restart
 * (restored with the rest when the injection is over). */
static const int isa_ext_regsets[] = {NT_PRFPREG, NT_ARM_SYSTEM_CALL};

static uint64_t isa_pc(const isa_regs *r)
{
	return r->pc;
}

static uint64_t isa_sp(const isa_regs *r)
{
	return r->sp;
}

static uint64_t isa_result(const isa_regs *r)
{
	return r->regs[0];
}

/*
 * fn(args) with sp at the 16-aligned top and x30 = 0: fn's `ret` lands on
 * pc 0 with sp == top, as on x86-64. The zero word the caller writes below
 * top is not needed here, and harmless.
 */
static void isa_set_call(isa_regs *r, uint64_t fn, const uint64_t *args, int n, uint64_t top)
{
	for (int i = 0; i < n; i++)
		r->regs[i] = args[i];
	r->pc = fn;
	r->sp = top;
	r->regs[30] = 0;
}

/* pc back on the `svc`, x0 its first argument again (the result replaced
 * it), x8 the number. The kernel forgot the call before the stop. */
static void isa_reissue(isa_regs *r, long nr, uint64_t arg0)
{
	r->pc -= 4;
	r->regs[0] = arg0;
	r->regs[8] = (uint64_t)nr;
}

#endif

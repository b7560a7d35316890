/* SPDX-License-Identifier: MIT */
/* inject.c's riscv64 part: the register file as PTRACE_GETREGSET
 * NT_PRSTATUS gives it, the further register sets to save, and how a
 * remote call is set up and an interrupted system call issued again
 * (isa.h says what each ISA's part provides). Included by isa.h only. */
#ifndef NP_INJECT_ISA_RISCV64_H
#define NP_INJECT_ISA_RISCV64_H

#define ISA_NAME     "riscv64"
#define ISA_RED_ZONE 0 /* LP64D: nothing lives below sp */
#include <asm/ptrace.h> /* glibc's sys/user.h has no register block here */
typedef struct user_regs_struct isa_regs;

/* The floating-point registers and fcsr. */
static const int isa_ext_regsets[] = {NT_PRFPREG};

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
	return r->a0;
}

/* fn(args) with sp at the 16-aligned top and ra = 0, as on arm64. (A
 * restarted system call is undone by the kernel on riscv when pc moves:
 * nothing more to save.) */
static void isa_set_call(isa_regs *r, uint64_t fn, const uint64_t *args, int n, uint64_t top)
{
	unsigned long *argr[] = {&r->a0, &r->a1, &r->a2, &r->a3, &r->a4, &r->a5};

	for (int i = 0; i < n && i < 6; i++)
		*argr[i] = args[i];
	r->pc = fn;
	r->sp = top;
	r->ra = 0;
}

/* pc back on the `ecall`, a0 its first argument again, a7 the number. */
static void isa_reissue(isa_regs *r, long nr, uint64_t arg0)
{
	r->pc -= 4;
	r->a0 = arg0;
	r->a7 = (uint64_t)nr;
}

#endif

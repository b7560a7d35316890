/* SPDX-License-Identifier: MIT */
/* inject.c's x86-64 part: the register file as PTRACE_GETREGSET
 * NT_PRSTATUS gives it, the further register sets to save, and how a
 * remote call is set up and an interrupted system call issued again
 * (isa.h says what each ISA's part provides). Included by isa.h only. */
#ifndef NP_INJECT_ISA_X86_64_H
#define NP_INJECT_ISA_X86_64_H

#define ISA_NAME     "x86-64"
#define ISA_RED_ZONE 128 /* below rsp, still owned by the interrupted function */
typedef struct user_regs_struct isa_regs;

/* XSAVE holds x87, SSE, AVX and later state; NT_PRFPREG covers CPUs without XSAVE. */
static const int isa_ext_regsets[] = {NT_PRFPREG, NT_X86_XSTATE};

static uint64_t isa_pc(const isa_regs *r)
{
	return r->rip;
}

static uint64_t isa_sp(const isa_regs *r)
{
	return r->rsp;
}

static uint64_t isa_result(const isa_regs *r)
{
	return r->rax;
}

/*
 * fn(args) on a stack whose top is 16-aligned with a zero word below it:
 * that word is the return address, so rsp % 16 == 8 at entry as after a
 * `call`, and `ret` lands on pc 0 with rsp == top.
 */
static void isa_set_call(isa_regs *r, uint64_t fn, const uint64_t *args, int n, uint64_t top)
{
	unsigned long long *argr[] = {&r->rdi, &r->rsi, &r->rdx, &r->rcx, &r->r8, &r->r9};

	for (int i = 0; i < n; i++)
		*argr[i] = args[i];
	r->rip = fn;
	r->rsp = top - 8;
	r->rax = 0;               /* no vector arguments, should fn be variadic */
	r->eflags &= ~0x400ull;   /* DF clear, as the ABI wants at a call */
	r->orig_rax = (uint64_t)-1; /* no syscall to restart at fn */
}

/*
 * Make the thread issue its system call nr again when it resumes: pc back
 * on the 2-byte `syscall`, rax the number (the arguments are still in
 * their registers), and no restart for the kernel to apply on top.
 */
static void isa_reissue(isa_regs *r, long nr, uint64_t arg0)
{
	(void)arg0;
	r->rip -= 2;
	r->rax = (uint64_t)nr;
	r->orig_rax = (uint64_t)-1;
}

#endif

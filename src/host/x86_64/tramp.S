/* SPDX-License-Identifier: MIT */
/*
 * x86-64 trampoline templates. The engine copies these byte ranges into a
 * per-region trampoline near the probed code and fills the 8-byte slots
 * that follow each `_imm` label. They build a struct np_ctx on the stack:
 *
 *   ctx+0   site          ctx+8  kind     ctx+12 redirect
 *   ctx+16  regs.gpr[0..15] (rax rcx rdx rbx rsp rbp rsi rdi r8..r15)
 *   ctx+144 regs.gpr[16..31] (unused on x86-64)
 *   ctx+272 regs.pc       ctx+280 regs.flags
 *
 * Two save flavours:
 *   full   anywhere in a function: skips the 128-byte red zone, restores
 *          rflags with popfq (slow, ~20 cycles, but exact);
 *   entry  at a function entry: the red zone is dead (the caller just made
 *          a call) and so are the flags (SysV ABI), so it skips both.
 * The vector state is saved separately (np_x86_xsave).
 */
	.text
	.p2align 4

/* Layouts the templates use, checked against the C structs in runtime.c. */
#define T_TOP 12			/* np_thread.shadow_top */
#define T_LIMIT 20			/* np_thread.shadow_limit */
#define T_RET_DATA 24			/* np_thread.ret_data */
#define T_SHADOW 1048608		/* np_thread.shadow */
#define F_RET 0				/* np_shadow_frame fields, 48 bytes each */
#define F_SLOT 8
#define F_SITE 16
#define F_GEN 24
#define F_FLAGS 28
#define F_DATA 32
#define F_EXPECT 40
#define S_GEN 40			/* np_site.gen */
#define CTX_ARMED 0x400			/* NP_CTX_ARMED in ctx.kind */

#define SLOT(name) .byte 0x48, 0xb8; .globl name; .hidden name; name: .quad 0

#define PUSH_GPRS \
	push %r15; push %r14; push %r13; push %r12; \
	push %r11; push %r10; push %r9; push %r8; \
	push %rdi; push %rsi; push %rbp; \
	lea -8(%rsp), %rsp; \
	push %rbx; push %rdx; push %rcx; push %rax; \
	lea -16(%rsp), %rsp

#define POP_GPRS \
	lea 16(%rsp), %rsp; \
	pop %rax; pop %rcx; pop %rdx; pop %rbx; \
	lea 8(%rsp), %rsp; \
	pop %rbp; pop %rsi; pop %rdi; \
	pop %r8; pop %r9; pop %r10; pop %r11; \
	pop %r12; pop %r13; pop %r14; pop %r15

#define IMM32(name) .globl name; .hidden name; name: .long 0
/* XRSTOR faults unless the reserved bytes of the XSAVE header (at 512) are
 * zero, and neither XSAVE nor XSAVEC writes them all. */
#define ZERO_XSAVE_HEADER \
	movq $0, 512(%rsp); movq $0, 520(%rsp); movq $0, 528(%rsp); movq $0, 536(%rsp); \
	movq $0, 544(%rsp); movq $0, 552(%rsp); movq $0, 560(%rsp); movq $0, 568(%rsp)

/* XSAVE the components in name_mask into a 64-byte aligned area of
 * name_size bytes below rsp (both slots filled at run time). */
#define XSAVE_ON_STACK(name) \
	.byte 0x48, 0x81, 0xec;		/* sub $size, %rsp */ \
	IMM32(name##_size); \
	and $-64, %rsp; \
	ZERO_XSAVE_HEADER; \
	.byte 0xb8;			/* mov $mask, %eax */ \
	IMM32(name##_mask); \
	xor %edx, %edx; \
	xsave64 (%rsp)

#define TEMPLATE(name) .globl name##_begin, name##_end; .hidden name##_begin, name##_end; name##_begin:
#define END(name) name##_end:

/* --- save ------------------------------------------------------------- */
TEMPLATE(np_x86_save_full)
	lea -128(%rsp), %rsp		/* red zone */
	pushfq
	lea -136(%rsp), %rsp		/* pc, gpr[16..31] */
	PUSH_GPRS
	lea 416(%rsp), %rax		/* 16 + 272 + 128: the site's rsp */
	mov %rax, 48(%rsp)
	SLOT(np_x86_save_full_pc_imm)
	mov %rax, 272(%rsp)
	cld				/* C handlers expect DF=0; at an entry it is */
END(np_x86_save_full)

TEMPLATE(np_x86_save_entry)
	lea -144(%rsp), %rsp		/* flags (dead here, not saved), pc, gpr[16..31] */
	PUSH_GPRS
	lea 288(%rsp), %rax		/* 16 + 272 */
	mov %rax, 48(%rsp)
	SLOT(np_x86_save_entry_pc_imm)
	mov %rax, 272(%rsp)
END(np_x86_save_entry)

/* Arguments only (NP_PROBE_ARGS_ONLY), as BPF trampolines do: the
 * caller-saved registers, which a C handler may clobber, plus rbx, which
 * holds ctx across the call. rbp and r12-r15 are left out of ctx: C code
 * preserves them. Stores are what a hit costs, so this is the fast path. */
TEMPLATE(np_x86_save_args)
	lea -176(%rsp), %rsp		/* flags, pc, gpr[16..31], r15..r12 */
	push %r11; push %r10; push %r9; push %r8
	push %rdi; push %rsi
	lea -16(%rsp), %rsp		/* rbp, rsp */
	push %rbx; push %rdx; push %rcx; push %rax
	lea -16(%rsp), %rsp
	lea 288(%rsp), %rax
	mov %rax, 48(%rsp)
	SLOT(np_x86_save_args_pc_imm)
	mov %rax, 272(%rsp)
END(np_x86_save_args)

TEMPLATE(np_x86_restore_args)
	mov %rbx, %rsp
	cmpl $0, 12(%rsp)
	je 1f
	/* the redirect loads every register from ctx: the callee-saved ones,
	 * left out above, still hold the program's values (C preserved them) */
	mov %rbp, 56(%rsp); mov %r12, 112(%rsp); mov %r13, 120(%rsp)
	mov %r14, 128(%rsp); mov %r15, 136(%rsp)
	SLOT(np_x86_restore_args_redirect_imm)
	jmp *%rax
1:	testl $CTX_ARMED, 8(%rsp)	/* for np_x86_ret_call: pop and lea keep ZF */
	lea 16(%rsp), %rsp
	pop %rax; pop %rcx; pop %rdx; pop %rbx
	lea 16(%rsp), %rsp
	pop %rsi; pop %rdi
	pop %r8; pop %r9; pop %r10; pop %r11
	lea 176(%rsp), %rsp
END(np_x86_restore_args)

/* ctx header, callee-saved rbx keeps ctx, 16-byte aligned call frame */
TEMPLATE(np_x86_save_tail)
	SLOT(np_x86_save_tail_site_imm)
	mov %rax, (%rsp)
	SLOT(np_x86_save_tail_kind_imm)	/* kind and capture mode; redirect 0 */
	mov %rax, 8(%rsp)
	mov %rsp, %rbx
	and $-16, %rsp
END(np_x86_save_tail)

/* --- vector state ---------------------------------------------------------
 * A handler may call libc, whose AVX2/AVX-512 string functions end with
 * vzeroupper: saving xmm alone would lose the program's ymm/zmm upper
 * halves. So the default saves the x87, SSE, AVX and AVX-512 state with
 * XSAVEC (or XSAVE, or FXSAVE on CPUs without it); AMX tiles and PKRU are
 * left out: a handler cannot use AMX without asking the kernel first, and
 * does not change protection keys. NP_PROBE_NO_FPU skips all of it. */
TEMPLATE(np_x86_xsave)
	XSAVE_ON_STACK(np_x86_xsave)
END(np_x86_xsave)

/* XSAVEC skips components in their initial state: the usual case for
 * AVX-512 in a program that does not use it. It writes the first 16 bytes
 * of the header but not the reserved rest, which XRSTOR wants zero. */
TEMPLATE(np_x86_xsavec)
	.byte 0x48, 0x81, 0xec
	IMM32(np_x86_xsavec_size)
	and $-64, %rsp
	ZERO_XSAVE_HEADER
	.byte 0xb8
	IMM32(np_x86_xsavec_mask)
	xor %edx, %edx
	xsavec64 (%rsp)
END(np_x86_xsavec)

TEMPLATE(np_x86_xrstor)
	.byte 0xb8
	IMM32(np_x86_xrstor_mask)
	xor %edx, %edx
	xrstor64 (%rsp)
END(np_x86_xrstor)

TEMPLATE(np_x86_fxsave)
	lea -512(%rsp), %rsp
	and $-64, %rsp
	fxsave64 (%rsp)
END(np_x86_fxsave)

TEMPLATE(np_x86_fxrstor)
	fxrstor64 (%rsp)
END(np_x86_fxrstor)

/* --- calling the handlers ---------------------------------------------------
 * The common case runs inline: the thread's block from TLS, the recursion
 * guard (in_site, the block's first word), the site's version, then one
 * direct call per handler with its per-thread counter bumped. Anything else
 * (no block yet, a nested hit, a trampoline older than the site's handler
 * set) calls np__dispatch, the general path in C. Setting in_site before
 * reading the version pairs with membarrier() on the detach side. */
#define TLS_LOAD(name) .byte 0x64, 0x48, 0x8b, 0x04, 0x25; .globl name; .hidden name; name: .long 0

TEMPLATE(np_x86_enter)
	TLS_LOAD(np_x86_enter_tls)	/* mov %fs:slot, %rax: this thread's block */
	test %rax, %rax
	jz 1f
	cmpq $0, (%rax)			/* already running a handler */
	jne 1f
	.byte 0x48, 0xb9		/* movabs $site, %rcx */
	.globl np_x86_enter_site_imm; .hidden np_x86_enter_site_imm
np_x86_enter_site_imm: .quad 0
	mov %rcx, (%rax)		/* in_site = site */
	.byte 0x81, 0x39		/* cmpl $version, (%rcx) */
	IMM32(np_x86_enter_version)
	je 2f
	movq $0, (%rax)
1:	mov %rbx, %rdi
	SLOT(np_x86_enter_slow_imm)
	call *%rax
	.byte 0xe9			/* jmp to the end of the handler calls */
	IMM32(np_x86_enter_done_rel)
2:
END(np_x86_enter)

TEMPLATE(np_x86_handler)
	TLS_LOAD(np_x86_handler_tls)
	.byte 0x48, 0xff, 0x80		/* incq hits[slot](%rax) */
	IMM32(np_x86_handler_hits)
	mov %rbx, %rdi
	.byte 0x48, 0xbe		/* movabs $data, %rsi */
	.globl np_x86_handler_data; .hidden np_x86_handler_data
np_x86_handler_data: .quad 0
	SLOT(np_x86_handler_fn)
	call *%rax
END(np_x86_handler)

/* Count a hit with no entry handler (a return probe only). */
TEMPLATE(np_x86_count)
	TLS_LOAD(np_x86_count_tls)
	.byte 0x48, 0xff, 0x80
	IMM32(np_x86_count_hits)
END(np_x86_count)

/* --- return probes, inline ---------------------------------------------------
 * A return probe at a JUMP site does not replace the return address in
 * place. The entry block pushes a shadow-stack frame (the caller's return
 * address, its slot) and marks ctx ARMED; after the restore, the trampoline
 * drops the caller's return address and *calls* the function's relocated
 * first instructions (np_x86_ret_call). The callee sees the stack it would
 * have seen, with the trampoline's return point where its return address
 * was; its `ret` is predicted by the return stack buffer, which the call
 * fed, and the return path leaves with a `ret` to the caller's address,
 * which consumes the caller's own prediction. Offsets of struct np_thread
 * and struct np_shadow_frame are checked against these in runtime.c. */

/* rcx = a frame index, rax = the block: rdx = the frame. */
#define FRAME_ADDR \
	imul $48, %rcx, %rdx; \
	lea T_SHADOW(%rax, %rdx), %rdx

/* Arm the return unless a handler redirected the call: push the frame,
 * mark ctx. Anything unusual goes to np__shadow_arm (shadow.c), which
 * arms the return in place, as the C path does: a full shadow stack, or
 * return probes turned off (shadow_limit 0), count a miss there; a frame
 * on top whose slot is below this call's, or at it without this call
 * having inherited its trampoline by a tail call, may be one that a
 * longjmp or a switch of stacks left, and C judges it. A frame above is
 * this call's caller's, or on another stack: pushed over. rbx = ctx; rax,
 * rcx, rdx, rsi, rdi, r8 are saved in ctx, and every caller-saved
 * register may be clobbered (handlers are C). */
TEMPLATE(np_x86_arm)
	cmpl $0, 12(%rbx)
	jne 2f
	TLS_LOAD(np_x86_arm_tls)	/* the block: the guard found it */
	mov T_TOP(%rax), %ecx
	cmp T_LIMIT(%rax), %ecx
	jae 1f
	FRAME_ADDR
	mov 48(%rbx), %rsi		/* entry rsp: the return address's slot */
	mov (%rsi), %rdi
	test %ecx, %ecx
	jz 3f
	cmp %rsi, F_SLOT-48(%rdx)	/* the frame on top */
	ja 3f
	jb 1f
	cmp %rdi, F_EXPECT-48(%rdx)	/* the same slot: a tail call from it? */
	jne 1f
3:	mov %rdi, F_RET(%rdx)
	mov %rsi, F_SLOT(%rdx)
	mov 0(%rbx), %rdi		/* ctx.site */
	mov %rdi, F_SITE(%rdx)
	mov S_GEN(%rdi), %r8d
	mov %r8d, F_GEN(%rdx)
	.byte 0xc7, 0x42, F_FLAGS	/* movl $flags, F_FLAGS(%rdx): NP_RET_FPU */
	IMM32(np_x86_arm_flags)
	.byte 0x48, 0xbf		/* movabs $return_point, %rdi */
	.globl np_x86_arm_expect; .hidden np_x86_arm_expect
np_x86_arm_expect: .quad 0
	mov %rdi, F_EXPECT(%rdx)
	inc %ecx
	mov %ecx, T_TOP(%rax)
	orl $CTX_ARMED, 8(%rbx)
	jmp 2f
1:	mov %rbx, %rdi
	SLOT(np_x86_arm_fn)
	call *%rax
2:
END(np_x86_arm)

/* After the restore (which leaves ZF clear when ctx was ARMED; flags are
 * dead at a function entry): not armed, run the function as it is;
 * armed, call it. Both rel32 reach the relocated instructions, past the
 * return path that follows this piece. */
TEMPLATE(np_x86_ret_call)
	.byte 0x0f, 0x84		/* jz body */
	IMM32(np_x86_ret_call_jz)
	lea 8(%rsp), %rsp		/* the caller's address is in the frame */
	.byte 0xe8			/* call body */
	IMM32(np_x86_ret_call_call)
END(np_x86_ret_call)

/* The return point: rsp is the entry rsp + 8, as the caller expects after
 * its call. Every register the function left is kept for the caller, not
 * only the ABI's return registers: GCC's -fipa-ra lets a caller keep
 * values in rcx, rsi, rdi, r8-r11 (and vector registers) across a call to
 * a function it knows does not write them. So ctx gets every general
 * register C code may clobber; r12-r15 stay out, C preserves them (rbp
 * goes in for handlers that read the frame pointer). The vector registers
 * are saved for handlers that may touch them; the C slow path has no
 * vector code (built -mgeneral-regs-only). ctx is built as the shared
 * return trampoline builds it; ctx.flags, at the entry rsp, is the word
 * the final `ret` takes. */
#define RET_SAVE_GPRS \
	lea -176(%rsp), %rsp;		/* flags, pc, gpr[16..31], r15..r12 */ \
	push %r11; push %r10; push %r9; push %r8; \
	push %rdi; push %rsi; push %rbp; \
	lea -8(%rsp), %rsp;		/* rsp */ \
	push %rbx; push %rdx; push %rcx; push %rax; \
	lea -16(%rsp), %rsp; \
	lea 288(%rsp), %rax; \
	mov %rax, 48(%rsp)

/* rsp = ctx: every register RET_SAVE_GPRS saved, from ctx (a handler may
 * have set some, rax for one), rsp left pointing at ctx. Every load is at
 * or above rsp: below it a signal frame may land. */
#define RET_LOAD_GPRS \
	mov 16(%rsp), %rax; mov 24(%rsp), %rcx; mov 32(%rsp), %rdx; \
	mov 40(%rsp), %rbx; mov 56(%rsp), %rbp; mov 64(%rsp), %rsi; \
	mov 72(%rsp), %rdi; mov 80(%rsp), %r8; mov 88(%rsp), %r9; \
	mov 96(%rsp), %r10; mov 104(%rsp), %r11

TEMPLATE(np_x86_ret_save)
	RET_SAVE_GPRS
	SLOT(np_x86_ret_save_site)
	mov %rax, (%rsp)
	movq $0x201, 8(%rsp)		/* NP_CTX_RETURN | NP_CTX_CAPTURE_RET */
	mov %rsp, %rbx
	and $-16, %rsp			/* a caller that broke the ABI's alignment */
END(np_x86_ret_save)

/* Pop this call's frame, inline when it is on top and nothing is unusual;
 * otherwise (frames a longjmp skipped above it, a nested hit, a trampoline
 * older than the site's handler set) np__ret_dispatch does it all. */
TEMPLATE(np_x86_ret_enter)
	TLS_LOAD(np_x86_ret_enter_tls)	/* the block that armed the call */
	cmpq $0, (%rax)			/* a handler is running */
	jne 1f
	mov T_TOP(%rax), %ecx
	test %ecx, %ecx
	jz 1f
	dec %ecx
	FRAME_ADDR
	lea 280(%rbx), %rsi		/* the slot this call's return address had */
	cmp %rsi, F_SLOT(%rdx)
	jne 1f
	.byte 0x48, 0xbe		/* movabs $site, %rsi */
	.globl np_x86_ret_enter_site; .hidden np_x86_ret_enter_site
np_x86_ret_enter_site: .quad 0
	mov %rsi, (%rax)		/* in_site = site, then the version */
	.byte 0x81, 0x3e		/* cmpl $version, (%rsi) */
	IMM32(np_x86_ret_enter_version)
	jne 0f
	mov %ecx, T_TOP(%rax)
	mov F_RET(%rdx), %rsi
	mov %rsi, 272(%rbx)		/* ctx.pc: where the call returns */
	mov %rsi, 280(%rbx)		/* the word our ret takes */
	mov F_DATA(%rdx), %rsi
	mov %rsi, T_RET_DATA(%rax)	/* np_ctx_call_data */
	movq $0, F_DATA(%rdx)
	jmp 2f
0:	movq $0, (%rax)
1:	mov %rbx, %rdi
	SLOT(np_x86_ret_enter_slow)
	call *%rax
	mov 272(%rbx), %rax
	mov %rax, 280(%rbx)
	.byte 0xe9			/* jmp past the handler calls */
	IMM32(np_x86_ret_enter_done_rel)
2:
END(np_x86_ret_enter)

TEMPLATE(np_x86_ret_handler)
	mov %rbx, %rdi
	.byte 0x48, 0xbe		/* movabs $data, %rsi */
	.globl np_x86_ret_handler_data; .hidden np_x86_ret_handler_data
np_x86_ret_handler_data: .quad 0
	SLOT(np_x86_ret_handler_fn)
	call *%rax
END(np_x86_ret_handler)

/* Every saved register from ctx, then a ret to the caller: the return
 * stack buffer predicts it. */
TEMPLATE(np_x86_ret_restore)
	mov %rbx, %rsp
	RET_LOAD_GPRS
	lea 280(%rsp), %rsp
	ret
END(np_x86_ret_restore)

TEMPLATE(np_x86_leave)
	TLS_LOAD(np_x86_leave_tls)
	movq $0, (%rax)			/* in_site = NULL */
END(np_x86_leave)

/* --- restore ------------------------------------------------------------- */
/* A handler that moved pc or sp (override_return, set_reg) sets redirect;
 * np_x86_redirect then loads every register from ctx. */
TEMPLATE(np_x86_restore_full)
	mov %rbx, %rsp
	cmpl $0, 12(%rsp)
	je 1f
	SLOT(np_x86_restore_full_redirect_imm)
	jmp *%rax
1:	POP_GPRS
	lea 136(%rsp), %rsp
	popfq
	lea 128(%rsp), %rsp
END(np_x86_restore_full)

TEMPLATE(np_x86_restore_entry)
	mov %rbx, %rsp
	cmpl $0, 12(%rsp)
	je 1f
	SLOT(np_x86_restore_entry_redirect_imm)
	jmp *%rax
1:	testl $CTX_ARMED, 8(%rsp)	/* for np_x86_ret_call */
	POP_GPRS
	lea 144(%rsp), %rsp
END(np_x86_restore_entry)

/* --- shared code, copied once (np_host_init) ------------------------------- */

/* rsp = ctx. Resume at regs.pc with every register, rsp included, from ctx.
 * No register is free to jump with, so the target is stored 136 bytes
 * below the rsp to resume, under its 128-byte red zone (live mid-function),
 * and `ret $128` takes it with rsp pointing at it, landing rsp where it
 * belongs. Until then the word is at or above rsp, where no signal frame is
 * built. (A per-thread slot was not safe: a signal between its store and
 * the jump, whose handler met a redirect or a return probe of its own,
 * overwrote it, and this thread jumped into the handler's code.) After
 * override_return the `ret` consumes the return stack buffer's entry of
 * the skipped call, so the caller's own returns stay predicted. The word
 * is above every ctx word loaded after it: the rsp to resume is the site's
 * (+8 after override_return), and ctx ends 128 bytes below it (full save)
 * or at it (entry saves), so the word is ctx.flags, the one above ctx, or
 * in gpr[16..31], unused on x86-64. */
TEMPLATE(np_x86_redirect)
	push 280(%rsp)			/* entry point with rflags */
	popfq
	.globl np_x86_redirect_noflags; .hidden np_x86_redirect_noflags
np_x86_redirect_noflags:		/* entry point where rflags are dead */
	mov 48(%rsp), %rax
	lea -136(%rax), %rax		/* lea and mov keep the flags just loaded */
	mov 272(%rsp), %rcx
	mov %rcx, (%rax)
	mov %rax, 48(%rsp)
	mov 16(%rsp), %rax
	mov 24(%rsp), %rcx
	mov 32(%rsp), %rdx
	mov 40(%rsp), %rbx
	mov 56(%rsp), %rbp
	mov 64(%rsp), %rsi
	mov 72(%rsp), %rdi
	mov 80(%rsp), %r8
	mov 88(%rsp), %r9
	mov 96(%rsp), %r10
	mov 104(%rsp), %r11
	mov 112(%rsp), %r12
	mov 120(%rsp), %r13
	mov 128(%rsp), %r14
	mov 136(%rsp), %r15
	mov 48(%rsp), %rsp
	ret $128
END(np_x86_redirect)

/* A probed function returns here instead of to its caller. As at the
 * inline return point (np_x86_ret_save), every register the function left
 * is kept; np__ret_dispatch puts the real return address in regs.pc. */
/* The return trampolines share everything but the vector save. */
#define RET_TRAMP_SAVE \
	RET_SAVE_GPRS; \
	movq $0, (%rsp); \
	movq $0x201, 8(%rsp);		/* NP_CTX_RETURN | NP_CTX_CAPTURE_RET */ \
	mov %rsp, %rbx; \
	and $-16, %rsp

/* Leave as the program's `ret` would have: the real return address goes
 * back into the slot that `ret` popped (ctx.flags, at the function's entry
 * rsp), and once rsp is the caller's again, an indirect jump goes through
 * it. The caller finds its stack as after a plain return. Between the last
 * two instructions that word is within the 128 bytes below rsp that the
 * kernel leaves alone when it builds a signal frame, so a signal there
 * cannot change where this call goes. A per-thread slot could: a signal
 * handler whose own probed call returned through here wrote its own
 * caller's address into it, and the interrupted return went there, on
 * the interrupted thread's stack (e2e-storms, "a_signal_before_each..."). */
#define RET_TRAMP_LEAVE \
	mov %rbx, %rsp; \
	mov 272(%rsp), %rax;		/* the real return address */ \
	mov %rax, 280(%rsp);		/* into its slot */ \
	RET_LOAD_GPRS; \
	lea 288(%rsp), %rsp;		/* the caller's rsp: the slot is at -8 */ \
	jmp *-8(%rsp)

/* For handlers proven not to touch the vector state (vecscan). */
TEMPLATE(np_x86_ret_tramp)
	RET_TRAMP_SAVE
	mov %rbx, %rdi
	SLOT(np_x86_ret_tramp_fn_imm)
	call *%rax
	RET_TRAMP_LEAVE
END(np_x86_ret_tramp)

/* The same, saving the whole extended state for handlers that may touch
 * vector registers (see np_x86_xsave). */
TEMPLATE(np_x86_ret_tramp_fpu)
	RET_TRAMP_SAVE
	XSAVE_ON_STACK(np_x86_ret_tramp_fpu)
	mov %rbx, %rdi
	SLOT(np_x86_ret_tramp_fpu_fn_imm)
	call *%rax
	.byte 0xb8
	IMM32(np_x86_ret_tramp_fpu_mask2)
	xor %edx, %edx
	xrstor64 (%rsp)
	RET_TRAMP_LEAVE
END(np_x86_ret_tramp_fpu)

/* The same with FXSAVE, on a CPU or kernel without XSAVE. */
TEMPLATE(np_x86_ret_tramp_fx)
	RET_TRAMP_SAVE
	lea -512(%rsp), %rsp
	and $-64, %rsp
	fxsave64 (%rsp)
	mov %rbx, %rdi
	SLOT(np_x86_ret_tramp_fx_fn_imm)
	call *%rax
	fxrstor64 (%rsp)
	RET_TRAMP_LEAVE
END(np_x86_ret_tramp_fx)

	.section .note.GNU-stack,"",@progbits

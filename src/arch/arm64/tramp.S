/* SPDX-License-Identifier: MIT */
/*
 * arm64 trampoline code. np_a64_site is a template: the engine copies it
 * into a region's trampoline near the probed word and fills the literals
 * that follow it (pc, site, kind, the C function, the redirect routine).
 * The copy is position independent: only pc-relative loads and branches
 * inside the template. The frame it builds (FRAME bytes below sp; Linux
 * gives arm64 user space no red zone, so nothing of the program's lives
 * below sp) is a struct np_ctx followed by the FP/SIMD state:
 *
 *   +0   site     +8 kind    +12 redirect
 *   +16  regs.gpr[0..30] = x0..x30     +264 regs.gpr[31] = sp
 *   +272 regs.pc  +280 regs.flags (NZCV)
 *   +288 q0..q31  +800 fpsr  +808 fpcr
 *
 * Every register goes back from ctx, so a handler's np_ctx_set_reg (and
 * the return probe's change of x30) takes effect. A handler that moves pc
 * sets redirect: then no register is free to branch with, so the redirect
 * routine loads the FP state, points sp at ctx and executes a breakpoint,
 * and the SIGTRAP handler (np_host_trap_own) loads the rest, pc and sp
 * included. A redirect is rare (override_return, a handler moving pc); the
 * common path has no trap.
 */
#define FRAME 816
#define CTX_FP 288

	.text

#define SAVE_GPRS \
	sub sp, sp, #FRAME; \
	stp x0, x1, [sp, #16]; \
	stp x2, x3, [sp, #32]; \
	stp x4, x5, [sp, #48]; \
	stp x6, x7, [sp, #64]; \
	stp x8, x9, [sp, #80]; \
	stp x10, x11, [sp, #96]; \
	stp x12, x13, [sp, #112]; \
	stp x14, x15, [sp, #128]; \
	stp x16, x17, [sp, #144]; \
	stp x18, x19, [sp, #160]; \
	stp x20, x21, [sp, #176]; \
	stp x22, x23, [sp, #192]; \
	stp x24, x25, [sp, #208]; \
	stp x26, x27, [sp, #224]; \
	stp x28, x29, [sp, #240]; \
	add x0, sp, #FRAME; \
	stp x30, x0, [sp, #256]

/* Handlers are C code that may use any vector register (memcpy does). */
#define SAVE_FP \
	add x0, sp, #CTX_FP; \
	stp q0, q1, [x0, #0]; stp q2, q3, [x0, #32]; \
	stp q4, q5, [x0, #64]; stp q6, q7, [x0, #96]; \
	stp q8, q9, [x0, #128]; stp q10, q11, [x0, #160]; \
	stp q12, q13, [x0, #192]; stp q14, q15, [x0, #224]; \
	stp q16, q17, [x0, #256]; stp q18, q19, [x0, #288]; \
	stp q20, q21, [x0, #320]; stp q22, q23, [x0, #352]; \
	stp q24, q25, [x0, #384]; stp q26, q27, [x0, #416]; \
	stp q28, q29, [x0, #448]; stp q30, q31, [x0, #480]; \
	mrs x1, fpsr; mrs x2, fpcr; \
	str x1, [x0, #512]; str x2, [x0, #520]

#define RESTORE_FP \
	add x0, sp, #CTX_FP; \
	ldp q0, q1, [x0, #0]; ldp q2, q3, [x0, #32]; \
	ldp q4, q5, [x0, #64]; ldp q6, q7, [x0, #96]; \
	ldp q8, q9, [x0, #128]; ldp q10, q11, [x0, #160]; \
	ldp q12, q13, [x0, #192]; ldp q14, q15, [x0, #224]; \
	ldp q16, q17, [x0, #256]; ldp q18, q19, [x0, #288]; \
	ldp q20, q21, [x0, #320]; ldp q22, q23, [x0, #352]; \
	ldp q24, q25, [x0, #384]; ldp q26, q27, [x0, #416]; \
	ldp q28, q29, [x0, #448]; ldp q30, q31, [x0, #480]; \
	ldr x1, [x0, #512]; ldr x2, [x0, #520]; \
	msr fpsr, x1; msr fpcr, x2

/* x0..x15, x18..x30 and NZCV from ctx (x16, x17 and sp by the caller) */
#define RESTORE_GPRS_BUT_IP \
	ldr x1, [sp, #280]; \
	msr nzcv, x1; \
	ldp x0, x1, [sp, #16]; \
	ldp x2, x3, [sp, #32]; \
	ldp x4, x5, [sp, #48]; \
	ldp x6, x7, [sp, #64]; \
	ldp x8, x9, [sp, #80]; \
	ldp x10, x11, [sp, #96]; \
	ldp x12, x13, [sp, #112]; \
	ldp x14, x15, [sp, #128]; \
	ldp x18, x19, [sp, #160]; \
	ldp x20, x21, [sp, #176]; \
	ldp x22, x23, [sp, #192]; \
	ldp x24, x25, [sp, #208]; \
	ldp x26, x27, [sp, #224]; \
	ldp x28, x29, [sp, #240]; \
	ldr x30, [sp, #256]

#define LITERAL(name) .globl name; .hidden name; name: .quad 0
#define TEMPLATE(name) .globl name##_begin, name##_end; .hidden name##_begin, name##_end; name##_begin:
#define END(name) name##_end:

/* --- a probed site (copied per site) --------------------------------------- */
TEMPLATE(np_a64_site)
	SAVE_GPRS
	mrs x1, nzcv
	ldr x0, np_a64_site_pc
	stp x0, x1, [sp, #272]
	ldr x0, np_a64_site_site
	ldr x1, np_a64_site_kind	/* kind, and redirect = 0 */
	stp x0, x1, [sp]
	SAVE_FP
	mov x0, sp
	ldr x16, np_a64_site_fn
	blr x16
	ldr w0, [sp, #12]
	cbnz w0, 1f
	RESTORE_FP
	RESTORE_GPRS_BUT_IP
	ldp x16, x17, [sp, #144]
	add sp, sp, #FRAME		/* sp is never changed without redirect */
	b 2f
1:	ldr x16, np_a64_site_redirect
	br x16
LITERAL(np_a64_site_pc)
LITERAL(np_a64_site_site)
LITERAL(np_a64_site_kind)
LITERAL(np_a64_site_fn)
LITERAL(np_a64_site_redirect)
2:
END(np_a64_site)

/* --- shared code, runs in place ------------------------------------------- */

/* sp = ctx. The breakpoint's immediate is not the engine's probe breakpoint
 * (0x6e70): np_host_trap_own knows it by its address. */
	.globl np_a64_redirect, np_a64_redirect_brk
	.hidden np_a64_redirect, np_a64_redirect_brk
	.type np_a64_redirect, %function
	.p2align 4
np_a64_redirect:
	hint #36			/* bti j: reached by br x16 */
	RESTORE_FP
np_a64_redirect_brk:
	brk #0x6e71
	.size np_a64_redirect, . - np_a64_redirect

/* A probed function returns here instead of to its caller (x30 was
 * replaced at its entry; it arrives by ret, which BTI does not check).
 * sp is what it was at the entry: np__ret_dispatch finds the frame by it
 * and puts the real return address in regs.pc. x16 and x17 are free: a
 * caller cannot expect them to survive a call (AAPCS64 IP0/IP1). The exit
 * is a ret too, so that a guarded caller needs no landing pad. */
	.globl np_a64_ret_tramp
	.hidden np_a64_ret_tramp
	.type np_a64_ret_tramp, %function
	.p2align 4
np_a64_ret_tramp:
	SAVE_GPRS
	mrs x1, nzcv
	stp xzr, x1, [sp, #272]
	mov x1, #1			/* NP_CTX_RETURN, redirect 0 */
	stp xzr, x1, [sp]
	SAVE_FP
	mov x0, sp
	bl np__ret_dispatch
	RESTORE_FP
	RESTORE_GPRS_BUT_IP
	ldr x17, [sp, #272]		/* the real return address */
	ldr x16, [sp, #264]
	mov sp, x16
	ret x17
	.size np_a64_ret_tramp, . - np_a64_ret_tramp

	.section .note.GNU-stack,"",@progbits

/* SPDX-License-Identifier: MIT */
/*
 * arm64 trampoline templates. As on x86-64 (src/host/x86_64/tramp.S), a
 * site block is assembled from pieces copied out of here (runtime.c picks
 * them): save, the inline hit path (thread block, recursion guard, version
 * check, one counter bump and direct call per handler), restore. The
 * engine fills the slots the pieces name with labels:
 *
 *   LIT(reg, name)   `ldr reg, <literal>`: the engine points it at an entry
 *                    of the block's literal pool (the block ends with a `b`
 *                    over the pool);
 *   TLS(reg, name)   reg = this thread's block pointer: tpidr_el0 plus the
 *                    initial-exec offset of np_tls_self, split into the
 *                    imm12 fields of an add and a scaled ldr (the form
 *                    local-exec TLS takes), so that a hit does no lookup;
 *   B(name)          a forward `b` whose target the engine sets.
 *
 * Every copy is position independent. The frame (FRAME bytes below sp;
 * Linux gives arm64 user space no red zone, so nothing of the program's
 * lives below sp) is a struct np_ctx followed by the FP/SIMD state:
 *
 *   +0   site     +8 kind    +12 redirect
 *   +16  regs.gpr[0..30] = x0..x30     +264 regs.gpr[31] = sp
 *   +272 regs.pc  +280 regs.flags (NZCV)
 *   +288 q0..q31  +800 fpsr  +808 fpcr
 *
 * sp is ctx for the whole block (the frame keeps sp 16-byte aligned), so no
 * register has to hold it. Two saves:
 *   full   every general register and NZCV (anywhere in a function);
 *   args   NP_PROBE_ARGS_ONLY at a function entry: the caller-saved
 *          registers x0-x18 and x30, as BPF trampolines do. x19-x29 are
 *          left out: the C code called preserves them (AAPCS64). NZCV is
 *          dead at an entry.
 * The FP/SIMD state is saved only when a handler may change it (the
 * engine decodes the handlers; vecscan.c). The engine's own C hit path is
 * built with -mgeneral-regs-only, so it never touches it.
 *
 * A handler that moves pc or sp sets redirect; then no register is free
 * to branch with, so the block jumps to the redirect routine, which loads
 * the FP state, points sp at ctx and executes a breakpoint, and the
 * SIGTRAP handler (np_host_trap_own) loads the rest, pc and sp included.
 * A redirect is rare (override_return, a handler moving pc); the common
 * path has no trap.
 */
#define FRAME 816
#define CTX_FP 288

	.text

#define LABEL(name) .globl name; .hidden name; name:
#define LIT(reg, name) LABEL(name) ldr reg, .
#define TLS(reg, name) \
	mrs reg, tpidr_el0; \
	LABEL(name) add reg, reg, #0, lsl #12; \
	ldr reg, [reg, #0]
#define B(name) LABEL(name) b .
#define TEMPLATE(name) .globl name##_begin, name##_end; .hidden name##_begin, name##_end; name##_begin:
#define END(name) name##_end:

#define STORE_X0_X17 \
	stp x0, x1, [sp, #16]; \
	stp x2, x3, [sp, #32]; \
	stp x4, x5, [sp, #48]; \
	stp x6, x7, [sp, #64]; \
	stp x8, x9, [sp, #80]; \
	stp x10, x11, [sp, #96]; \
	stp x12, x13, [sp, #112]; \
	stp x14, x15, [sp, #128]; \
	stp x16, x17, [sp, #144]

#define STORE_X18_X29 \
	stp x18, x19, [sp, #160]; \
	stp x20, x21, [sp, #176]; \
	stp x22, x23, [sp, #192]; \
	stp x24, x25, [sp, #208]; \
	stp x26, x27, [sp, #224]; \
	stp x28, x29, [sp, #240]

#define LOAD_X0_X15 \
	ldp x0, x1, [sp, #16]; \
	ldp x2, x3, [sp, #32]; \
	ldp x4, x5, [sp, #48]; \
	ldp x6, x7, [sp, #64]; \
	ldp x8, x9, [sp, #80]; \
	ldp x10, x11, [sp, #96]; \
	ldp x12, x13, [sp, #112]; \
	ldp x14, x15, [sp, #128]

#define LOAD_X18_X29 \
	ldp x18, x19, [sp, #160]; \
	ldp x20, x21, [sp, #176]; \
	ldp x22, x23, [sp, #192]; \
	ldp x24, x25, [sp, #208]; \
	ldp x26, x27, [sp, #224]; \
	ldp x28, x29, [sp, #240]

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

/* --- save ------------------------------------------------------------- */
TEMPLATE(np_a64_save_full)
	sub sp, sp, #FRAME
	STORE_X0_X17
	STORE_X18_X29
	add x0, sp, #FRAME
	stp x30, x0, [sp, #256]
	mrs x1, nzcv
	LIT(x0, np_a64_save_full_pc)
	stp x0, x1, [sp, #272]
	LIT(x0, np_a64_save_full_site)
	LIT(x1, np_a64_save_full_kind)	/* kind, and redirect = 0 */
	stp x0, x1, [sp]
END(np_a64_save_full)

TEMPLATE(np_a64_save_args)
	sub sp, sp, #FRAME
	STORE_X0_X17
	str x18, [sp, #160]
	add x0, sp, #FRAME
	stp x30, x0, [sp, #256]
	LIT(x0, np_a64_save_args_pc)
	stp x0, xzr, [sp, #272]		/* NZCV: dead at an entry */
	LIT(x0, np_a64_save_args_site)
	LIT(x1, np_a64_save_args_kind)
	stp x0, x1, [sp]
END(np_a64_save_args)

TEMPLATE(np_a64_fp_save)
	SAVE_FP
END(np_a64_fp_save)

TEMPLATE(np_a64_fp_restore)
	RESTORE_FP
END(np_a64_fp_restore)

/* --- calling the handlers ---------------------------------------------------
 * The common case runs inline: the thread's block from TLS, the recursion
 * guard (in_site, the block's first word), the site's version (its first
 * word) against the one this block was built for, then one direct call per
 * handler with its per-thread counter bumped. Anything else (no block yet,
 * a nested hit, a block older than the site's handler set) calls
 * np__dispatch, the general path in C, and skips the inline calls. Setting
 * in_site before reading the version pairs with membarrier() on the detach
 * side, as in thread.c. x0-x17 are free here: they are saved, and the C
 * code called may clobber them anyway. */
TEMPLATE(np_a64_enter)
	TLS(x9, np_a64_enter_tls)
	cbz x9, 1f
	ldr x10, [x9]			/* already running a handler */
	cbnz x10, 1f
	LIT(x10, np_a64_enter_site)
	str x10, [x9]			/* in_site = site */
	ldr w11, [x10]			/* site->version */
	LIT(x12, np_a64_enter_version)
	cmp w11, w12
	b.eq 2f
	stlr xzr, [x9]
1:	mov x0, sp
	LIT(x16, np_a64_enter_slow)
	blr x16
	B(np_a64_enter_done)		/* to the end of the handler calls */
2:
END(np_a64_enter)

TEMPLATE(np_a64_handler)
	TLS(x9, np_a64_handler_tls)
	LIT(x10, np_a64_handler_hits)	/* offset of the probe's counter */
	ldr x11, [x9, x10]
	add x11, x11, #1
	str x11, [x9, x10]
	mov x0, sp
	LIT(x1, np_a64_handler_data)
	LIT(x16, np_a64_handler_fn)
	blr x16
END(np_a64_handler)

/* Count a hit with no entry handler (a return probe only). */
TEMPLATE(np_a64_count)
	TLS(x9, np_a64_count_tls)
	LIT(x10, np_a64_count_hits)
	ldr x11, [x9, x10]
	add x11, x11, #1
	str x11, [x9, x10]
END(np_a64_count)

/* Arm the return probes unless a handler redirected the call. */
TEMPLATE(np_a64_arm)
	ldr w0, [sp, #12]
	cbnz w0, 1f
	mov x0, sp
	LIT(x16, np_a64_arm_fn)
	blr x16
1:
END(np_a64_arm)

/* in_site = NULL, after everything the handlers did (release). */
TEMPLATE(np_a64_leave)
	TLS(x9, np_a64_leave_tls)
	stlr xzr, [x9]
END(np_a64_leave)

/* --- restore ----------------------------------------------------------------
 * Every register that was saved goes back from ctx, so a handler's
 * np_ctx_set_reg (and the return probe's change of x30) takes effect. */
TEMPLATE(np_a64_restore_full)
	ldr w16, [sp, #12]
	cbnz w16, 1f
	ldr x1, [sp, #280]
	msr nzcv, x1
	LOAD_X0_X15
	LOAD_X18_X29
	ldr x30, [sp, #256]
	ldp x16, x17, [sp, #144]
	add sp, sp, #FRAME		/* sp is never changed without redirect */
	b 2f
1:	LIT(x16, np_a64_restore_full_redirect)
	br x16
2:
END(np_a64_restore_full)

TEMPLATE(np_a64_restore_args)
	ldr w16, [sp, #12]
	cbnz w16, 1f
	LOAD_X0_X15
	ldr x18, [sp, #160]
	ldr x30, [sp, #256]
	ldp x16, x17, [sp, #144]
	add sp, sp, #FRAME
	b 2f
1:	LIT(x16, np_a64_restore_args_redirect)
	br x16
2:
END(np_a64_restore_args)

/* --- shared code, runs in place ------------------------------------------- */

/* sp = ctx; reached by br x16 (hence bti j). Four entries: whether the
 * block saved the FP state, and whether it saved x19-x29 (args-only did
 * not: they still hold the program's values, which C code preserved). The
 * breakpoint's immediate is not the engine's probe breakpoint (0x6e70):
 * np_host_trap_own knows it by its address. */
	.globl np_a64_redirect_fp, np_a64_redirect, np_a64_redirect_args_fp
	.globl np_a64_redirect_args, np_a64_redirect_brk
	.hidden np_a64_redirect_fp, np_a64_redirect, np_a64_redirect_args_fp
	.hidden np_a64_redirect_args, np_a64_redirect_brk
	.type np_a64_redirect_fp, %function
	.p2align 4
np_a64_redirect_args_fp:
	hint #36			/* bti j */
	STORE_X18_X29
	b 1f
np_a64_redirect_fp:
	hint #36
1:	RESTORE_FP
	b np_a64_redirect_brk
np_a64_redirect_args:
	hint #36
	STORE_X18_X29
np_a64_redirect:
	hint #36			/* a nop when fallen into */
np_a64_redirect_brk:
	brk #0x6e71
	.size np_a64_redirect_fp, . - np_a64_redirect_fp

/* A probed function returns here instead of to its caller (x30 was
 * replaced at its entry; it arrives by ret, which BTI does not check).
 * sp is what it was at the entry: np__ret_dispatch finds the frame by it
 * and puts the real return address in regs.pc. x16 and x17 are free: a
 * caller cannot expect them to survive a call (AAPCS64 IP0/IP1). The exit
 * is a ret too, so that a guarded caller needs no landing pad. Two copies:
 * with the FP/SIMD state saved (a return handler may change it) or not. */
#define RET_TRAMP(name, save_fp, restore_fp) \
	.globl name; .hidden name; .type name, %function; .p2align 4; \
name: \
	sub sp, sp, #FRAME; \
	STORE_X0_X17; \
	STORE_X18_X29; \
	add x0, sp, #FRAME; \
	stp x30, x0, [sp, #256]; \
	mrs x1, nzcv; \
	stp xzr, x1, [sp, #272]; \
	mov x1, #1;			/* NP_CTX_RETURN, redirect 0 */ \
	stp xzr, x1, [sp]; \
	save_fp; \
	mov x0, sp; \
	bl np__ret_dispatch; \
	restore_fp; \
	ldr x1, [sp, #280]; \
	msr nzcv, x1; \
	LOAD_X0_X15; \
	LOAD_X18_X29; \
	ldr x30, [sp, #256]; \
	ldr x17, [sp, #272];		/* the real return address */ \
	ldr x16, [sp, #264]; \
	mov sp, x16; \
	ret x17; \
	.size name, . - name

#define NOTHING
RET_TRAMP(np_a64_ret_tramp, NOTHING, NOTHING)
RET_TRAMP(np_a64_ret_tramp_fpu, SAVE_FP, RESTORE_FP)

	.section .note.GNU-stack,"",@progbits

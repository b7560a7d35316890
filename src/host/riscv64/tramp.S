/* SPDX-License-Identifier: MIT */
/*
 * riscv64 trampoline code. np_rv_site is a template: the engine copies it
 * into a region's trampoline near the probed code, at an 8-byte aligned
 * offset, and fills the literals at its start (pc, site, kind, the C
 * function, the shared code), which its first instruction jumps over (an auipc-relative load reaches only what the assembler has already
 * placed, so they come before the code). The copy is position independent:
 * every reference inside it is an auipc-relative load of its own literals,
 * assembled with relaxation off (the linker must not turn them into
 * gp-relative loads of the original template) and without compressed
 * forms (so that the literal offsets are what the assembler computed).
 *
 * The frame (FRAME bytes below sp; the LP64D ABI has no red zone, nothing
 * of the program's lives below sp) is a struct np_ctx followed by the
 * floating-point state, saved only when a handler of the site may change
 * it (the _nofp copies below leave it out):
 *
 *   +0   site     +8 kind    +12 redirect
 *   +16  regs.gpr[0..31] = x0..x31 (gpr[2], sp, as it was at the site)
 *   +272 regs.pc  +280 regs.flags (unused: RISC-V has no flags)
 *   +288 f0..f31  +544 fcsr   +552 the block's return address
 *
 * Every register goes back from ctx, so a handler's np_ctx_set_reg (and
 * the return probe's change of ra) takes effect. A handler that moves pc
 * sets redirect: mid-function no register is known to be free to jump
 * with, so the redirect routine loads the FP state (when it was saved),
 * points sp at ctx and executes an ebreak, and the SIGTRAP handler
 * (np_host_trap_own) loads the rest, pc and sp included. A redirect is
 * rare (override_return, a handler moving pc); the common path has no
 * trap. The shared code jumps to the redirect routine that matches its
 * own save, so the block needs no literal for it.
 */
#define FRAME 560
#define CTX_FP 288
#define CTX_FCSR 544
#define GPR(n) (16 + 8 * (n))

#define SAVE_GPRS \
	addi sp, sp, -FRAME; \
	sd x1, GPR(1)(sp); sd x3, GPR(3)(sp); sd x4, GPR(4)(sp); \
	sd x5, GPR(5)(sp); sd x6, GPR(6)(sp); sd x7, GPR(7)(sp); \
	sd x8, GPR(8)(sp); sd x9, GPR(9)(sp); sd x10, GPR(10)(sp); \
	sd x11, GPR(11)(sp); sd x12, GPR(12)(sp); sd x13, GPR(13)(sp); \
	sd x14, GPR(14)(sp); sd x15, GPR(15)(sp); sd x16, GPR(16)(sp); \
	sd x17, GPR(17)(sp); sd x18, GPR(18)(sp); sd x19, GPR(19)(sp); \
	sd x20, GPR(20)(sp); sd x21, GPR(21)(sp); sd x22, GPR(22)(sp); \
	sd x23, GPR(23)(sp); sd x24, GPR(24)(sp); sd x25, GPR(25)(sp); \
	sd x26, GPR(26)(sp); sd x27, GPR(27)(sp); sd x28, GPR(28)(sp); \
	sd x29, GPR(29)(sp); sd x30, GPR(30)(sp); sd x31, GPR(31)(sp); \
	sd zero, GPR(0)(sp); \
	addi t0, sp, FRAME; \
	sd t0, GPR(2)(sp)

/* every register but sp (and ra, which the return path loads itself) */
#define RESTORE_GPRS_BUT_RA_SP \
	ld x3, GPR(3)(sp); ld x4, GPR(4)(sp); \
	ld x5, GPR(5)(sp); ld x6, GPR(6)(sp); ld x7, GPR(7)(sp); \
	ld x8, GPR(8)(sp); ld x9, GPR(9)(sp); ld x10, GPR(10)(sp); \
	ld x11, GPR(11)(sp); ld x12, GPR(12)(sp); ld x13, GPR(13)(sp); \
	ld x14, GPR(14)(sp); ld x15, GPR(15)(sp); ld x16, GPR(16)(sp); \
	ld x17, GPR(17)(sp); ld x18, GPR(18)(sp); ld x19, GPR(19)(sp); \
	ld x20, GPR(20)(sp); ld x21, GPR(21)(sp); ld x22, GPR(22)(sp); \
	ld x23, GPR(23)(sp); ld x24, GPR(24)(sp); ld x25, GPR(25)(sp); \
	ld x26, GPR(26)(sp); ld x27, GPR(27)(sp); ld x28, GPR(28)(sp); \
	ld x29, GPR(29)(sp); ld x30, GPR(30)(sp); ld x31, GPR(31)(sp)

/* Handlers are C code that may use any floating-point register. */
#define SAVE_FP \
	fsd f0, CTX_FP+0(sp); fsd f1, CTX_FP+8(sp); fsd f2, CTX_FP+16(sp); \
	fsd f3, CTX_FP+24(sp); fsd f4, CTX_FP+32(sp); fsd f5, CTX_FP+40(sp); \
	fsd f6, CTX_FP+48(sp); fsd f7, CTX_FP+56(sp); fsd f8, CTX_FP+64(sp); \
	fsd f9, CTX_FP+72(sp); fsd f10, CTX_FP+80(sp); fsd f11, CTX_FP+88(sp); \
	fsd f12, CTX_FP+96(sp); fsd f13, CTX_FP+104(sp); fsd f14, CTX_FP+112(sp); \
	fsd f15, CTX_FP+120(sp); fsd f16, CTX_FP+128(sp); fsd f17, CTX_FP+136(sp); \
	fsd f18, CTX_FP+144(sp); fsd f19, CTX_FP+152(sp); fsd f20, CTX_FP+160(sp); \
	fsd f21, CTX_FP+168(sp); fsd f22, CTX_FP+176(sp); fsd f23, CTX_FP+184(sp); \
	fsd f24, CTX_FP+192(sp); fsd f25, CTX_FP+200(sp); fsd f26, CTX_FP+208(sp); \
	fsd f27, CTX_FP+216(sp); fsd f28, CTX_FP+224(sp); fsd f29, CTX_FP+232(sp); \
	fsd f30, CTX_FP+240(sp); fsd f31, CTX_FP+248(sp); \
	frcsr t1; sd t1, CTX_FCSR(sp)

#define RESTORE_FP \
	ld t1, CTX_FCSR(sp); fscsr t1; \
	fld f0, CTX_FP+0(sp); fld f1, CTX_FP+8(sp); fld f2, CTX_FP+16(sp); \
	fld f3, CTX_FP+24(sp); fld f4, CTX_FP+32(sp); fld f5, CTX_FP+40(sp); \
	fld f6, CTX_FP+48(sp); fld f7, CTX_FP+56(sp); fld f8, CTX_FP+64(sp); \
	fld f9, CTX_FP+72(sp); fld f10, CTX_FP+80(sp); fld f11, CTX_FP+88(sp); \
	fld f12, CTX_FP+96(sp); fld f13, CTX_FP+104(sp); fld f14, CTX_FP+112(sp); \
	fld f15, CTX_FP+120(sp); fld f16, CTX_FP+128(sp); fld f17, CTX_FP+136(sp); \
	fld f18, CTX_FP+144(sp); fld f19, CTX_FP+152(sp); fld f20, CTX_FP+160(sp); \
	fld f21, CTX_FP+168(sp); fld f22, CTX_FP+176(sp); fld f23, CTX_FP+184(sp); \
	fld f24, CTX_FP+192(sp); fld f25, CTX_FP+200(sp); fld f26, CTX_FP+208(sp); \
	fld f27, CTX_FP+216(sp); fld f28, CTX_FP+224(sp); fld f29, CTX_FP+232(sp); \
	fld f30, CTX_FP+240(sp); fld f31, CTX_FP+248(sp)

#define LIT_PC 8
#define LIT_SITE 16
#define LIT_KIND 24
#define LIT_FN 32
#define LIT_COMMON 40
#define BLOCK_RA 552 /* the frame's last word: where the block continues */
#define LITERAL(name) .globl name; .hidden name; name: .quad 0

	.text

/* --- a probed site (copied per site) --------------------------------------- */
/* Small, because it is copied for every site and a jal reaches only 1 MiB
 * of trampolines: it saves t0 and ra, points t0 at its own literals and
 * calls np_rv_site_rest (through its address: the library may be far),
 * which does the rest and comes back here; then ra and t0 are reloaded
 * from ctx (a return probe changes ra) and sp is popped. Two pieces of a
 * site block (host/pieces.h), always copied together: np_rv_save (up to
 * the call) and np_rv_restore. */
	.option push
	.option norelax
	.option norvc
	.p2align 3
	.globl np_rv_site_begin, np_rv_site_end
	.hidden np_rv_site_begin, np_rv_site_end
	.globl np_rv_save_begin, np_rv_save_end, np_rv_restore_begin, np_rv_restore_end
	.hidden np_rv_save_begin, np_rv_save_end, np_rv_restore_begin, np_rv_restore_end
np_rv_site_begin:
np_rv_save_begin:
	j .Lsite_entry			/* over the literals */
	.p2align 3
LITERAL(np_rv_site_pc)
LITERAL(np_rv_site_site)
LITERAL(np_rv_site_kind)
LITERAL(np_rv_site_fn)
LITERAL(np_rv_site_rest_fn)
.Lsite_entry:
	addi sp, sp, -FRAME
	sd t0, GPR(5)(sp)
	sd ra, GPR(1)(sp)
.Lsite_base:
	auipc t0, %pcrel_hi(np_rv_site_begin)	/* the copy's own literals */
	addi t0, t0, %pcrel_lo(.Lsite_base)
	ld ra, LIT_COMMON(t0)
	jalr ra, 0(ra)
np_rv_save_end:
np_rv_restore_begin:
	ld ra, GPR(1)(sp)
	ld t0, GPR(5)(sp)
	addi sp, sp, FRAME		/* sp is never changed without redirect */
np_rv_restore_end:
np_rv_site_end:
	.option pop

/* The rest of a site block, shared: sp = the frame, x1 and x5 saved in it,
 * t0 = the block's literals, ra = where to go back in the block. Every
 * other register is saved, np__dispatch runs, everything but ra and sp is
 * loaded back from ctx; a redirect leaves through the redirect routine.
 * Two copies, chosen per site by the block's LIT_COMMON literal
 * (runtime.c): with the FP state (f0-f31, fcsr) saved around the handlers,
 * and without, for a site whose every handler is proven not to touch it
 * (vecscan.c) or promised not to (NP_PROBE_NO_FPU); the engine's own C
 * code has no floating point (src/meson.build). ra goes to BLOCK_RA
 * first in both: stack_scan.c looks for the way back there. */
.macro SITE_REST name, fp
	.globl \name
	.hidden \name
	.type \name, %function
	.p2align 3
\name:
	sd ra, BLOCK_RA(sp)
	sd x3, GPR(3)(sp); sd x4, GPR(4)(sp); sd x6, GPR(6)(sp); sd x7, GPR(7)(sp)
	sd x8, GPR(8)(sp); sd x9, GPR(9)(sp); sd x10, GPR(10)(sp)
	sd x11, GPR(11)(sp); sd x12, GPR(12)(sp); sd x13, GPR(13)(sp)
	sd x14, GPR(14)(sp); sd x15, GPR(15)(sp); sd x16, GPR(16)(sp)
	sd x17, GPR(17)(sp); sd x18, GPR(18)(sp); sd x19, GPR(19)(sp)
	sd x20, GPR(20)(sp); sd x21, GPR(21)(sp); sd x22, GPR(22)(sp)
	sd x23, GPR(23)(sp); sd x24, GPR(24)(sp); sd x25, GPR(25)(sp)
	sd x26, GPR(26)(sp); sd x27, GPR(27)(sp); sd x28, GPR(28)(sp)
	sd x29, GPR(29)(sp); sd x30, GPR(30)(sp); sd x31, GPR(31)(sp)
	sd zero, GPR(0)(sp)
	addi t1, sp, FRAME
	sd t1, GPR(2)(sp)
	ld t1, LIT_PC(t0)
	sd t1, 272(sp)
	sd zero, 280(sp)
	ld t1, LIT_SITE(t0)
	sd t1, 0(sp)
	ld t1, LIT_KIND(t0)		/* kind, and redirect = 0 */
	sd t1, 8(sp)
	ld t2, LIT_FN(t0)
	.if \fp
	SAVE_FP
	.endif
	mv a0, sp
	jalr ra, 0(t2)
	lw a0, 12(sp)
	bnez a0, 1f
	.if \fp
	RESTORE_FP
	.endif
	RESTORE_GPRS_BUT_RA_SP
	ld ra, BLOCK_RA(sp)
	ret
1:
	.if \fp
	j np_rv_redirect
	.else
	j np_rv_redirect_nofp
	.endif
	.size \name, . - \name
.endm

	SITE_REST np_rv_site_rest, 1
	SITE_REST np_rv_site_rest_nofp, 0

/* --- shared code, runs in place ------------------------------------------- */

/* sp = ctx. Two entries and one ebreak: np_rv_redirect loads the FP state
 * the site block saved (its handlers may have changed the registers);
 * np_rv_redirect_nofp is for a block that saved none, whose handlers left
 * the registers as the program had them, so there is nothing to load (ctx
 * holds no FP state then). Sharing the ebreak keeps one address for
 * np_host_trap_own to know. It is not the engine's probe breakpoint
 * (c.ebreak). */
	.globl np_rv_redirect, np_rv_redirect_nofp, np_rv_redirect_brk
	.hidden np_rv_redirect, np_rv_redirect_nofp, np_rv_redirect_brk
	.type np_rv_redirect, %function
	.p2align 3
np_rv_redirect:
	RESTORE_FP
np_rv_redirect_nofp:
	.option push
	.option norvc
np_rv_redirect_brk:
	ebreak
	.option pop
	.size np_rv_redirect, . - np_rv_redirect

/* A probed function returns here instead of to its caller (ra was replaced
 * at its entry). sp is what it was at the entry: np__ret_dispatch finds the
 * frame by it and puts the real return address in regs.pc. The way out is
 * a plain `ret` with ra loaded with that address: at the return site ra
 * holds the return address, as it would have, and no other register is
 * touched. Two copies, as for the site blocks: with the FP state saved
 * (a return handler may change it) or not (np_host_ret_trampoline). */
.macro RET_TRAMP name, fp
	.globl \name
	.hidden \name
	.type \name, %function
	.p2align 3
\name:
	SAVE_GPRS
	sd zero, 272(sp)
	sd zero, 280(sp)
	sd zero, 0(sp)
	li t0, 1			/* NP_CTX_RETURN, redirect 0 */
	sd t0, 8(sp)
	.if \fp
	SAVE_FP
	.endif
	mv a0, sp
	call np__ret_dispatch
	.if \fp
	RESTORE_FP
	.endif
	RESTORE_GPRS_BUT_RA_SP
	ld ra, 272(sp)			/* the real return address */
	addi sp, sp, FRAME
	ret
	.size \name, . - \name
.endm

	RET_TRAMP np_rv_ret_tramp, 1
	RET_TRAMP np_rv_ret_tramp_nofp, 0

	.section .note.GNU-stack,"",@progbits

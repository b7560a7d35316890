/* SPDX-License-Identifier: MIT */
/*
 * The arm64 contract: sizes, hooks and the AAPCS64 calling convention.
 * Registers are x0..x30 at their own numbers and sp at 31, which is also
 * the index into np_regs.gpr; np_regs.flags holds PSTATE (NZCV in bits
 * 31..28).
 */
#include "arch/arm64/internal.h"

#include <errno.h>
#include <stdio.h>

/* x0..x7 */
static const uint8_t a64_arg_regs[] = {0, 1, 2, 3, 4, 5, 6, 7};

#define X(n) (1ull << (n))
#define A64_TEMPS (0x3ffull << 8 & ~X(8)) /* x9..x17 */

static const char *const a64_reg_names[NP_NGPR] = {
	"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
	"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
	"x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",
};

const struct np_isa np_isa_arm64 = {
	.name = "arm64",
	.jump_len = 4,               /* b imm26; emit_jump_via for more */
	.trap_len = 4,               /* brk #0x6e70 */
	.trap_pc_after = 0,          /* brk reports its own address */
	.max_insn = 4,
	.insn_align = 4,
	.watch_exec_len = 4,
	.jump_reach = (1u << 27) - 4, /* +-128 MiB, less the last word */
	.jump_name = "b",
	.jump_via_name = "adrp+add+br",
	.decode = a64_decode,
	.format = a64_format,
	.relocate = a64_relocate,
	.simulate = a64_simulate,
	.emit_jump = a64_emit_jump,
	.emit_trap = a64_emit_trap,
	.emit_jump_any = a64_emit_jump_any,
	.branch_targets = a64_branch_targets,
	.frame_effect = a64_frame_effect,
	.vector_state_used = a64_vector_state_used,
	.nargs_reg = sizeof(a64_arg_regs),
	.arg_regs = a64_arg_regs,
	.ret_reg = 0,  /* x0 */
	.sp_reg = 31,  /* sp */
	.fp_reg = 29,  /* x29 */
	.red_zone = 0, /* AAPCS64 on Linux: nothing lives below sp */
	.reg_names = a64_reg_names,
	.landing_pad = a64_landing_pad,
	.reg_use = a64_reg_use,
	.relocate_via = a64_relocate_via,
	.emit_jump_via = a64_emit_jump_via,
	.patch_needs_stop = a64_patch_needs_stop,
	.watch_shape = np_watch_shape_doubleword,
	/* AAPCS64: x0..x17 and the link register are the caller's to lose.
	 * Not x18, the platform register (a shadow call stack keeps it). */
	.call_clobbered = 0x3ffffull | X(30),
	/* IP0, IP1: a veneer or PLT stub may run between any bl and its
	 * callee, so GCC marks every call as clobbering them (-fipa-ra
	 * included) and no callee may read them at its entry. */
	.call_always = X(16) | X(17),
	.ret_regs = X(0) | X(1), /* a result of up to 16 bytes; larger ones go
				  * through memory at x8 */
	/* x9..x15 (temporaries) and x16, x17 (IP0, IP1: a veneer or a PLT
	 * stub may have clobbered them on the way in). Not x0..x7
	 * (arguments), x8 (the indirect result's address), x18. */
	.entry_dead = A64_TEMPS,
	/* never x18 (platform), x29 (the frame chain unwinders and profilers
	 * walk at any moment), x30 (a leaf's return address), sp */
	.scratch_ok = 0x1fffffffull & ~X(18),
	.usdt_operand = a64_usdt_operand,
};

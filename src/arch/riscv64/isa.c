/* SPDX-License-Identifier: MIT */
/*
 * The riscv64 contract: sizes, hooks and the LP64D calling convention.
 * Registers are x0..x31, the index into np_regs.gpr.
 */
#include "arch/riscv64/internal.h"

#include <errno.h>
#include <stdio.h>

#define X(n) (1ull << (n))

/* a0..a7 */
static const uint8_t rv_arg_regs[] = {10, 11, 12, 13, 14, 15, 16, 17};

static const char *const rv_names[NP_NGPR] = {
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
	"a1", "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
	"s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

#define RV_TEMPS (X(5) | X(6) | X(7) | X(28) | X(29) | X(30) | X(31)) /* t0..t6 */
#define RV_ARGS  (0xffull << 10)                                     /* a0..a7 */

const struct np_isa np_isa_riscv64 = {
	.name = "riscv64",
	.jump_len = 4,             /* jal x0: the short JUMP; emit_jump_via for more */
	.trap_len = 2,             /* c.ebreak */
	.max_insn = 4,
	.insn_align = 2,
	.watch_exec_len = 2,
	.jump_reach = 1ull << 20,  /* jal: +-1 MiB */
	.jump_name = "jal",
	.jump_via_name = "auipc+jalr",
	.decode = rv_decode,
	.format = rv_format,
	.relocate = rv_relocate,
	.simulate = rv_simulate,
	.emit_jump = rv_emit_jump,
	.emit_trap = rv_emit_trap,
	.emit_jump_any = rv_emit_jump_any,
	.branch_targets = rv_branch_targets,
	.frame_effect = rv_frame_effect,
	.vector_state_used = rv_vector_state_used,
	.nargs_reg = sizeof(rv_arg_regs),
	.arg_regs = rv_arg_regs,
	.ret_reg = 10, /* a0 */
	.sp_reg = 2,   /* sp */
	.fp_reg = 8,   /* s0 */
	.red_zone = 0, /* LP64D: nothing lives below sp */
	.reg_names = rv_names,
	.reg_use = rv_reg_use,
	.relocate_via = rv_relocate_via,
	.emit_jump_via = rv_emit_jump_via,
	.patch_needs_stop = rv_patch_needs_stop,
	.watch_shape = np_watch_shape_doubleword,
	.call_clobbered = X(1) | RV_TEMPS | RV_ARGS,
	/* Nothing beyond the link: `call` and its relaxed jal write ra only
	 * (the stubs of the PLT write t1 and t3, but a call through the PLT
	 * keeps the convention). */
	.call_always = 0,
	.ret_regs = X(10) | X(11), /* a0, a1 */
	.pair_target = rv_pair_target,
	/* t1, t3..t6. Not t0: millicode (__riscv_save_N) links through it;
	 * not t2: GCC's static chain for nested functions. */
	.entry_dead = RV_TEMPS & ~(X(5) | X(7)),
	/* never zero, sp, gp (linker relaxation reads it anywhere), tp */
	/* a call linking through anything but ra keeps no convention: t0
	 * (millicode) and whatever hand-written code uses */
	.millicode_link = 0xffffffffull & ~(X(0) | X(1)),
	.scratch_ok = ~(X(0) | X(2) | X(3) | X(4)) & 0xffffffffull,
	.usdt_operand = rv_usdt_operand,
};

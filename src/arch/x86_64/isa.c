/* SPDX-License-Identifier: MIT */
/*
 * The x86-64 contract: sizes, hooks and the System V calling convention.
 * Registers are numbered as the hardware encodes them, which is also the
 * index into np_regs.gpr.
 */
#include "arch/x86_64/internal.h"

#include <errno.h>
#include <stdio.h>

/* rdi, rsi, rdx, rcx, r8, r9 */
static const uint8_t x86_arg_regs[] = {7, 6, 2, 1, 8, 9};

static const char *const x86_reg_names[NP_NGPR] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};

#define R(n) (1ull << (n))

/* DR7's LEN field: 1, 2, 4 or 8 bytes, naturally aligned (SDM 17.2.5). */
static int x86_watch_shape(uint64_t addr, size_t len, char *why, size_t cap)
{
	if (len != 1 && len != 2 && len != 4 && len != 8) {
		snprintf(why, cap, "length %zu: x86-64 debug registers watch 1, 2, 4 or 8 bytes", len);
		return -EINVAL;
	}
	if (addr % len) {
		snprintf(why, cap, "0x%llx is not %zu-byte aligned: an x86-64 debug register "
			 "watches %zu bytes at an address that is a multiple of %zu",
			 (unsigned long long)addr, len, len, len);
		return -EINVAL;
	}
	return 0;
}

const struct np_isa np_isa_x86_64 = {
	.name = "x86_64",
	.jump_len = 5,            /* e9 rel32 */
	.trap_len = 1,            /* cc */
	.trap_pc_after = 1,       /* int3 reports the pc after it */
	.max_insn = 15,
	.insn_align = 1,
	.breakpoint_first = true,
	.watch_exec_len = 8,
	.jump_reach = 0x7fff0000, /* rel32, less a margin for the jump's own length */
	.jump_name = "jmp rel32",
	.decode = x86_decode,
	.format = x86_format,
	.relocate = x86_relocate,
	.simulate = x86_simulate,
	.emit_jump = x86_emit_jump,
	.emit_trap = x86_emit_trap,
	.hop_len = 2, /* eb rel8 */
	.hop_name = "jmp rel8 + hop",
	.emit_hop = x86_emit_hop,
	.emit_jump_any = x86_emit_jump_any,
	.branch_targets = x86_branch_targets,
	.frame_effect = x86_frame_effect,
	.vector_state_used = x86_vector_state_used,
	.nargs_reg = sizeof(x86_arg_regs),
	.arg_regs = x86_arg_regs,
	.ret_reg = 0, /* rax */
	.sp_reg = 4,  /* rsp */
	.fp_reg = 5,  /* rbp */
	.red_zone = 128,
	.reg_names = x86_reg_names,
	.reg_use = x86_reg_use,
	/* rax rcx rdx rsi rdi r8-r11 */
	.call_clobbered = R(0) | R(1) | R(2) | R(6) | R(7) | R(8) | R(9) | R(10) | R(11),
	.call_always = 0,
	.ret_regs = R(0) | R(2), /* rax, rdx */
	/* caller-saved, not arguments: rax, r10, r11, less rax (%al counts the
	 * vector arguments of a variadic call) and r10 (the static chain) */
	.entry_dead = R(11),
	.scratch_ok = 0xffffull & ~R(4), /* never rsp */
	.watch_pc_after = true, /* a data breakpoint is a trap (SDM 17.3.1.2) */
	.insn_length = x86_insn_length,
	.watch_shape = x86_watch_shape,
	.usdt_operand = x86_usdt_operand,
};

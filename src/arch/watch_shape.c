/* SPDX-License-Identifier: MIT */
/*
 * The watchpoint shapes: the check the engine and the command share
 * (np_watch_shape_check), and the shape arm64 and riscv64 share
 * (np_isa.watch_shape): 1 to 8 bytes inside one aligned doubleword.
 *
 * arm64: DBGWCR's byte select, which the kernel shifts without checking.
 * riscv64: the rule the engine has always applied there, arm64's. What
 * the hardware's debug triggers can match beyond it, and what the
 * kernel's perf breakpoints make of them, the kernel answers at
 * perf_event_open (EINVAL); qemu-user, where the riscv64 suites run, has
 * no hardware breakpoints.
 */
#include "arch/arch.h"

#include <errno.h>
#include <stdio.h>

int np_watch_shape_check(const struct np_isa *isa, uint64_t addr, size_t len, bool exec,
			 char *why, size_t cap)
{
	if (exec && addr % isa->insn_align) {
		snprintf(why, cap, "0x%llx is not an instruction address (%u-byte aligned)",
			 (unsigned long long)addr, isa->insn_align);
		return -EINVAL;
	}
	if (exec)
		return 0;
	if (!isa->watch_shape) {
		snprintf(why, cap, "%s has no data watchpoints", isa->name);
		return -EOPNOTSUPP;
	}
	return isa->watch_shape(addr, len, why, cap);
}

int np_watch_shape_doubleword(uint64_t addr, size_t len, char *why, size_t cap)
{
	if (len < 1 || len > 8) {
		snprintf(why, cap, "length %zu: a watchpoint covers 1 to 8 bytes", len);
		return -EINVAL;
	}
	if ((addr & 7) + len > 8) {
		snprintf(why, cap, "0x%llx + %zu crosses an 8-byte boundary: a watchpoint covers "
			 "bytes of one aligned 8-byte word", (unsigned long long)addr, len);
		return -EINVAL;
	}
	return 0;
}

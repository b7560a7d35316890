/* SPDX-License-Identifier: MIT */
/*
 * core/stack_scan.c, np_patch_on_way_back: before a jump goes in over bytes
 * where a retired trampoline jumps back, every stopped thread is asked
 * whether it may still be on that way. Its return address into the
 * trampoline may be in the pc, on the stack, or only in a register: riscv's
 * shared save code gets the block's address in ra and stores it with its
 * first instruction, and a thread stopped before that one (qemu-riscv64
 * stops threads between translated blocks, and a block starts there) came
 * back into the middle of a jump (e2e-torture, t_short+4).
 */
#include <nanoprobe/nanoprobe.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/arch.h"
#include "core/codemem.h"
#include "core/stack_scan.h"
#include "host/host.h"
#include "test.h"

#define LAND 0x10004ull /* where the trampoline jumps back: any number */
#define STACK (16 * 1024)

static uint64_t tramp;
static uint64_t *stack;

/* A trampoline of 64 bytes in trampoline memory, landing at LAND, and a
 * zeroed stack the look above sp ends with. */
static void setup(void)
{
	if (!tramp) {
		tramp = np_codemem_alloc((uint64_t)(uintptr_t)&setup, 64, 0);
		CHECK(tramp != 0);
		np_codemem_note_tramp(tramp, 64, LAND);
		stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			     0);
		CHECK(stack != MAP_FAILED);
	}
	memset(stack, 0, STACK);
}

static struct np_regs stopped_at(uint64_t pc)
{
	struct np_regs regs;
	memset(&regs, 0, sizeof(regs));
	regs.pc = pc;
	regs.gpr[np_host_isa->sp_reg] = (uint64_t)(uintptr_t)stack;
	return regs;
}

#define CODE 0x20000ull /* a pc elsewhere, in no trampoline */

TEST(a_return_address_held_only_in_a_register_counts)
{
	setup();
	for (int reg = 0; reg < NP_NGPR; reg++) {
		if (reg == np_host_isa->sp_reg)
			continue;
		struct np_regs regs = stopped_at(CODE);
		regs.gpr[reg] = tramp + 40;
		CHECK(np_patch_on_way_back(&regs, LAND - 4, LAND + 4));
	}
}

TEST(a_return_address_on_the_stack_counts)
{
	setup();
	stack[552 / 8] = tramp + 40; /* riscv's BLOCK_RA */
	struct np_regs regs = stopped_at(CODE);
	CHECK(np_patch_on_way_back(&regs, LAND - 4, LAND + 4));
}

TEST(a_pc_in_the_trampoline_counts)
{
	setup();
	struct np_regs regs = stopped_at(tramp + 8);
	CHECK(np_patch_on_way_back(&regs, LAND - 4, LAND + 4));
}

TEST(a_trampoline_landing_on_the_edge_or_outside_does_not_count)
{
	setup();
	stack[552 / 8] = tramp + 40;
	struct np_regs regs = stopped_at(tramp + 8);
	regs.gpr[1] = tramp + 40;
	CHECK(!np_patch_on_way_back(&regs, LAND, LAND + 4)); /* lands on the first byte */
	CHECK(!np_patch_on_way_back(&regs, LAND - 4, LAND));
	CHECK(!np_patch_on_way_back(&regs, LAND + 8, LAND + 16));
}

TEST(a_thread_with_no_word_in_trampoline_memory_does_not_count)
{
	setup();
	stack[552 / 8] = CODE + 2;
	struct np_regs regs = stopped_at(CODE);
	for (int reg = 0; reg < NP_NGPR; reg++)
		if (reg != np_host_isa->sp_reg)
			regs.gpr[reg] = CODE + 4 * (uint64_t)reg;
	CHECK(!np_patch_on_way_back(&regs, LAND - 4, LAND + 4));
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * core/symbols.c and fde.c: the bounds of a function no symbol names.
 * An ifunc's implementation in a stripped library (glibc 2.43's riscv64
 * memset) is an entry reached by calls, known from the IRELATIVE slot
 * that holds it, with its FDE's range; another unnamed function with an
 * FDE is known as nothing (it could be a .cold part entered by a jump).
 */
#include "core/code_write.h"
#include "core/maps.h"
#include "core/modules.h"
#include "ifunc_lib.h"
#include "test.h"

static uint64_t addr_of(void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void setup(void)
{
	np_maps_call_begin();
	np_fault_guard_refresh(); /* np_code_read's in-process path */
}

TEST(the_implementation_an_irelative_slot_holds_is_a_called_entry)
{
	setup();
	CHECK_EQ(ifunc_lib_call(41), 42); /* through the slot */
	uint64_t impl = addr_of(ifunc_lib_picked());
	struct np_func_bounds fb;
	CHECK_EQ(np_symbol_bounds(impl, &fb), 0);
	CHECK(fb.known && fb.called);
	CHECK_EQ(fb.start, impl);
	/* x + 1 and a return: a few instructions, not the rest of .text */
	CHECK(fb.end > impl && fb.end - impl <= 64);
	CHECK(fb.end <= fb.limit);
	/* its last byte belongs to the same function */
	struct np_func_bounds inner;
	CHECK_EQ(np_symbol_bounds(fb.end - 1, &inner), 0);
	CHECK(inner.known && inner.called && inner.start == impl && inner.end == fb.end);
	struct np_entry e;
	CHECK(np_entry_find(impl, 0, 0, &e));
}

/* The program's own slot, bound to the library's exported ifunc: after a
 * first call (a lazy JUMP_SLOT is bound then), and its address taken
 * (GLOB_DAT, or riscv's 64-bit word). */
TEST(the_implementation_a_programs_slot_is_bound_to_is_a_called_entry)
{
	setup();
	int (*volatile sub)(int) = ifunc_lib_sub;
	CHECK_EQ(ifunc_lib_sub(43), 42);
	CHECK_EQ(sub(1), 0);
	uint64_t impl = addr_of(ifunc_lib_sub_picked());
	struct np_func_bounds fb;
	CHECK_EQ(np_symbol_bounds(impl, &fb), 0);
	CHECK(fb.known && fb.called && fb.start == impl);
	CHECK(fb.end > impl && fb.end - impl <= 64);
}

/* Code elsewhere jumps into it past its entry, with registers of its
 * own: its bounds and entry are known, the calling convention is not
 * trusted there (no register is free by the convention alone). */
TEST(an_implementation_another_function_jumps_into_is_not_trusted_with_the_convention)
{
	setup();
	CHECK_EQ(ifunc_lib_call3(39), 42);
	uint64_t impl = addr_of(ifunc_lib_add3_picked());
	struct np_func_bounds fb;
	CHECK_EQ(np_symbol_bounds(impl, &fb), 0);
	CHECK(fb.known && fb.start == impl && fb.end > impl);
	CHECK(!fb.called);
	struct np_entry e;
	CHECK(np_entry_find(impl, 0, 0, &e));
}

TEST(the_fde_range_is_the_functions)
{
	setup();
	uint64_t impl = addr_of(ifunc_lib_picked());
	struct np_fde_range fde;
	CHECK(np_fde_around(impl, &fde));
	CHECK_EQ(fde.start, impl);
	CHECK(fde.end > impl && (fde.next == 0 || fde.next >= fde.end));
	struct np_fde_range after;
	if (fde.next) { /* the next one starts where it says */
		CHECK(np_fde_around(fde.next, &after));
		CHECK_EQ(after.start, fde.next);
	}
}

TEST(an_fde_that_no_slot_holds_is_not_an_entry)
{
	setup();
	uint64_t other = addr_of(ifunc_lib_unpicked());
	struct np_fde_range fde;
	CHECK(np_fde_around(other, &fde) && fde.start == other); /* unwind info: yes */
	struct np_func_bounds fb;
	CHECK(np_symbol_bounds(other, &fb) != 0);
	CHECK(!fb.known && !fb.called);
	struct np_entry e;
	CHECK(!np_entry_find(other, 0, 0, &e));
}

TEST_MAIN()

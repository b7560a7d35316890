/* SPDX-License-Identifier: MIT */
/*
 * Does a handler touch FP/SIMD state? Handlers are laid out in a fake
 * memory and followed through branches, calls and PLT stubs.
 */
#include "a64_test.h"

#define FN   0x400000ull
#define HELP 0x400100ull
#define PLT  0x400200ull
#define GOT  0x400400ull

static struct fake_mem m;

static void put(uint64_t at, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fake_put32(&m, at + 4 * i, w[i]);
}

static int used(void)
{
	struct np_mem mem = fake_mem_ops(&m);

	return ISA->vector_state_used(FN, &mem);
}

static const uint32_t integer_only[] = {
	0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! */
	0x91000400, /* add x0, x0, #1 */
	0xb4000040, /* cbz x0, .+8 */
	0xf9000020, /* str x0, [x1] */
	0xa8c17bfd, /* ldp x29, x30, [sp], #16 */
	0xd65f03c0, /* ret */
};

TEST(an_integer_only_handler_does_not_touch_vector_state)
{
	fake_mem_init(&m, FN);
	put(FN, integer_only, 6);
	CHECK_EQ(used(), 0);
}

TEST(fp_arithmetic_on_one_path_is_found)
{
	const uint32_t fn[] = {0xb4000040, 0xd65f03c0, 0x1e601000, 0xd65f03c0};
	/* cbz x0, .+8; ret; fmov d0, #2.0; ret */

	fake_mem_init(&m, FN);
	put(FN, fn, 4);
	CHECK_EQ(used(), 1);
}

TEST(a_simd_store_in_a_called_helper_is_found)
{
	const uint32_t fn[] = {0x94000040, 0xd65f03c0}; /* bl HELP; ret */
	const uint32_t help[] = {0x3d800000, 0xd65f03c0}; /* str q0, [x0]; ret */

	fake_mem_init(&m, FN);
	put(FN, fn, 2);
	put(HELP, help, 2);
	CHECK_EQ(used(), 1);
}

/* bl PLT; ret, with the PLT stub reading its target from GOT */
static void plt_setup(const uint32_t *callee, size_t n)
{
	const uint32_t fn[] = {0x94000080, 0xd65f03c0};
	const uint32_t stub[] = {
		0x90000010, /* adrp x16, 0x400000 */
		0xf9420211, /* ldr x17, [x16, #0x400] */
		0x91100210, /* add x16, x16, #0x400 */
		0xd61f0220, /* br x17 */
	};

	fake_mem_init(&m, FN);
	put(FN, fn, 2);
	put(PLT, stub, 4);
	fake_put64(&m, GOT, HELP);
	put(HELP, callee, n);
}

TEST(a_call_through_a_plt_stub_follows_the_got_slot)
{
	const uint32_t vec[] = {0x4ea11c20, 0xd65f03c0}; /* mov v0.16b, v1.16b; ret */

	plt_setup(integer_only, 6);
	CHECK_EQ(used(), 0);
	plt_setup(vec, 2);
	CHECK_EQ(used(), 1);
}

TEST(an_unresolved_indirect_call_or_a_syscall_answers_yes)
{
	const uint32_t blr[] = {0xd63f0020, 0xd65f03c0}; /* blr x1; ret */
	const uint32_t svc[] = {0xd4000001, 0xd65f03c0}; /* svc #0; ret */

	fake_mem_init(&m, FN);
	put(FN, blr, 2);
	CHECK_EQ(used(), 1);
	put(FN, svc, 2);
	CHECK_EQ(used(), 1);
}

TEST(reading_fpcr_answers_yes)
{
	const uint32_t fn[] = {0xd53b4400, 0xd65f03c0}; /* mrs x0, fpcr; ret */

	fake_mem_init(&m, FN);
	put(FN, fn, 2);
	CHECK_EQ(used(), 1);
}

TEST(code_that_cannot_be_read_answers_yes)
{
	struct np_mem mem;

	fake_mem_init(&m, FN + 0x100000);
	mem = fake_mem_ops(&m);
	CHECK_EQ(ISA->vector_state_used(FN, &mem), 1);
}

TEST_MAIN()

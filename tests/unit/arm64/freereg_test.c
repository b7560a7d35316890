/* SPDX-License-Identifier: MIT */
/*
 * The shared free-register analysis (src/arch/freereg.c) on arm64 code:
 * what -fipa-ra lets a caller keep across a bl, and IP0/IP1 (x16, x17),
 * which every call may lose to a veneer. Each function is a list of words
 * with objdump's text, analysed at PC.
 */
#include "a64_test.h"
#include "arch/freereg.h"

#define X(n) (1ull << (n))

#define ADD_X0_X1  0x8b010000u /* add x0, x0, x1 */
#define RET        0xd65f03c0u /* ret */
#define BL_FAR     0x94000400u /* bl .+0x1000 */
#define BLR_X8     0xd63f0100u /* blr x8 */
#define MOV_X9_1   0xd2800029u /* mov x9, #0x1 */
#define ADD_X0_X9  0x8b090000u /* add x0, x0, x9 */
#define B_FAR      0x14000400u /* b .+0x1000 (a tail call) */
#define BL_SELF    0x94000000u /* bl . (at PC: a recursive call) */

static uint64_t free_at(const uint32_t *w, unsigned n, unsigned flags,
			const struct np_freereg_env *env, unsigned index)
{
	uint8_t code[64];
	struct np_freereg fr;
	uint64_t r;

	for (unsigned i = 0; i < n; i++)
		a64_le(code + 4 * i, w[i]);
	CHECK_EQ(np_freereg_analyse(ISA, code, 4 * n, PC, flags, env, &fr), 0);
	r = np_freereg_at(&fr, PC + 4 * index);
	np_freereg_release(&fr);
	return r;
}

#define FREE(flags, env, index, ...)                                                           \
	free_at((const uint32_t[]){__VA_ARGS__},                                               \
		sizeof((const uint32_t[]){__VA_ARGS__}) / 4, flags, env, index)

/* Only the convention reaches the function, and calls keep it. */
static uint64_t abi_kills(const void *cookie, uint64_t target)
{
	(void)cookie;
	(void)target;
	return ISA->call_clobbered;
}
static const struct np_freereg_env abi_only = {0x3fffcull | X(30), abi_kills, NULL};

TEST(x16_and_x17_are_free_at_an_entry_even_with_callers_in_the_module)
{
	/* a local caller may keep x9..x15 across a bl to a function that
	 * does not write them, never x16, x17: a veneer may run in between */
	CHECK_EQ(FREE(NP_FREEREG_ENTRY, NULL, 0, ADD_X0_X1, RET), X(16) | X(17));
	CHECK_EQ(FREE(NP_FREEREG_ENTRY, NULL, 0, ADD_X0_X1, B_FAR), X(16) | X(17));
	/* reached through the convention alone: x9..x17 */
	CHECK_EQ(FREE(NP_FREEREG_ENTRY, &abi_only, 0, ADD_X0_X1, B_FAR), 0x3fe00ull);
}

TEST(at_an_entry_a_temporary_the_function_writes_is_no_caller_s)
{
	/* mov x9, #1 ; add x0, x0, x9 ; ret */
	CHECK(FREE(NP_FREEREG_ENTRY, NULL, 0, MOV_X9_1, ADD_X0_X9, RET) & X(9));
	CHECK(FREE(NP_FREEREG_ENTRY, NULL, 2, MOV_X9_1, ADD_X0_X9, RET) & X(9));
	CHECK(!(FREE(NP_FREEREG_ENTRY, NULL, 2, MOV_X9_1, ADD_X0_X9, RET) & X(10)));
	CHECK(!(FREE(0, NULL, 2, MOV_X9_1, ADD_X0_X9, RET) & X(0))); /* the result */
	CHECK(!(FREE(0, NULL, 2, MOV_X9_1, ADD_X0_X9, RET) & X(1)));
}

TEST(a_bl_may_leave_every_register_but_x16_and_x17)
{
	uint64_t before = FREE(0, NULL, 0, BL_FAR, RET);

	CHECK_EQ(before & (X(9) | X(15) | X(8)), 0);
	CHECK_EQ(before, X(16) | X(17)); /* x30 too, but never a scratch */
	/* through the PLT (the module says so): every caller-saved one */
	CHECK(FREE(0, &abi_only, 0, BL_FAR, RET) & X(9));
}

TEST(a_blr_and_a_recursive_bl_keep_the_convention)
{
	CHECK(FREE(0, NULL, 0, BLR_X8, RET) & X(9));
	CHECK(!(FREE(0, NULL, 0, BLR_X8, RET) & X(8))); /* the target */
	CHECK(FREE(0, NULL, 0, BL_SELF, RET) & X(9));
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * Relocation of every pc-relative form. Each case goes through
 * a64_roundtrip(), which decodes the output and checks that every branch
 * target and pc-relative address of the original is reached, in order;
 * the cases then check the words of the form.
 */
#include <errno.h>

#include "a64_test.h"

#define SRC 0x7f0000401000ull
#define MIB (1ull << 20)
#define GIB (1ull << 30)

#define NOP     0xd503201fu
#define BR_X16  0xd61f0200u
#define LDR_X16 0x58000050u /* ldr x16, .+8 */

static bool is_b(uint32_t w) { return (w & 0xfc000000u) == 0x14000000u; }
static bool is_adrp(uint32_t w, unsigned rd) { return (w & 0x9f00001fu) == (0x90000000u | rd); }
static bool is_add_imm(uint32_t w, unsigned rd) /* add Xd, Xd, #imm */
{
	return (w & 0xffc003ffu) == (0x91000000u | rd << 5 | rd);
}

static int relocate(const uint32_t *src, size_t n, uint64_t dst_pc, uint64_t resume, size_t cap)
{
	uint8_t in[64], out[256];
	struct np_reloc r = {in, 4 * n, SRC, out, cap, dst_pc, resume};

	for (size_t i = 0; i < n; i++)
		a64_le(in + 4 * i, src[i]);
	return ISA->relocate(&r);
}

/* ---- b, bl ---- */

TEST(b_moved_64_mib_is_re_encoded_with_its_target)
{
	const uint32_t src = 0x14000004; /* b .+0x10 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 8);
	CHECK(is_b(out[0]));
	CHECK(is_b(out[1])); /* the jump back */
}

TEST(b_beyond_128_mib_becomes_the_x16_veneer)
{
	const uint32_t src = 0x14000004;
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + GIB, 0, out, 16), 16);
	CHECK_EQ(out[0], LDR_X16);
	CHECK_EQ(out[1], BR_X16);
	CHECK_EQ(out[2] | (uint64_t)out[3] << 32, SRC + 0x10);
}

TEST(bl_keeps_the_original_return_address_in_x30)
{
	const uint32_t src = 0x94000100; /* bl .+0x400 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, 0, out, 16), 12);
	CHECK(is_adrp(out[0], 30));
	CHECK(is_add_imm(out[1], 30));
	CHECK(is_b(out[2]));
}

TEST(bl_within_1_mib_sets_x30_with_one_adr)
{
	const uint32_t src = 0x94000100;
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 4096, SRC + 4, out, 16), 12);
	CHECK_EQ(out[0] & 0x9f00001fu, 0x1000001eu); /* adr x30 */
	CHECK(is_b(out[1]));
	CHECK(is_b(out[2]));
}

/* ---- conditional branches ---- */

TEST(b_cond_within_1_mib_keeps_its_condition)
{
	const uint32_t src = 0x5400008b; /* b.lt .+0x10 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 512 * 1024, SRC + 4, out, 16), 8);
	CHECK_EQ(out[0] & 0xff00001fu, 0x5400000bu);
}

TEST(b_cond_out_of_reach_becomes_the_inverse_over_a_b)
{
	const uint32_t src = 0x5400008b; /* b.lt */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 12);
	CHECK_EQ(out[0], 0x5400004au); /* b.ge .+8 */
	CHECK(is_b(out[1]));
	CHECK(is_b(out[2]));
}

TEST(b_cond_beyond_128_mib_skips_the_whole_veneer)
{
	const uint32_t src = 0x54000080; /* b.eq */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + GIB, 0, out, 16), 20);
	CHECK_EQ(out[0], 0x540000a1u); /* b.ne .+20 */
	CHECK_EQ(out[1], LDR_X16);
}

TEST(bc_cond_out_of_reach_is_inverted_as_a_plain_b_cond)
{
	const uint32_t src = 0x54000090; /* bc.eq */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 12);
	CHECK_EQ(out[0], 0x54000041u); /* b.ne .+8 */
}

TEST(b_al_becomes_b)
{
	const uint32_t src = 0x5400008e; /* b.al */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 8);
	CHECK(is_b(out[0]));
}

TEST(cbz_out_of_reach_becomes_cbnz_over_a_b)
{
	const uint32_t src = 0xb4000080; /* cbz x0, .+0x10 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 12);
	CHECK_EQ(out[0], 0xb5000040u); /* cbnz x0, .+8 */
}

TEST(tbz_within_32_kib_is_re_encoded_beyond_it_inverted)
{
	const uint32_t src = 0x36180080; /* tbz w0, #3, .+0x10 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 16 * 1024, SRC + 4, out, 16), 8);
	CHECK_EQ(out[0] & 0xfff8001fu, 0x36180000u);
	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * 1024, SRC + 4, out, 16), 12);
	CHECK_EQ(out[0], 0x37180040u); /* tbnz w0, #3, .+8 */
}

/* ---- pc-relative data ---- */

TEST(adr_becomes_adrp_and_add_of_the_same_address)
{
	const uint32_t src = 0x70000000; /* adr x0, .+3 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 12);
	CHECK(is_adrp(out[0], 0));
	CHECK(is_add_imm(out[1], 0));
}

TEST(adrp_moved_one_gib_is_one_adrp)
{
	const uint32_t src = 0xb0000001; /* adrp x1, +1 page */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC - GIB, 0, out, 16), 4);
	CHECK(is_adrp(out[0], 1));
}

TEST(adrp_beyond_4_gib_loads_the_address_from_a_literal)
{
	const uint32_t src = 0xb0000001;
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 8 * GIB, 0, out, 16), 16);
	CHECK_EQ(out[0], 0x58000041u); /* ldr x1, .+8 */
	CHECK_EQ(out[1], 0x14000003u); /* b .+12 */
	CHECK_EQ(out[2] | (uint64_t)out[3] << 32, SRC + 0x1000);
}

TEST(adr_into_xzr_is_a_nop)
{
	const uint32_t src = 0x1000009f; /* adr xzr, .+0x10 */
	uint32_t out[4];

	CHECK_EQ(relocate(&src, 1, SRC + 64 * MIB, 0, sizeof(out)), 4);
}

TEST(ldr_literal_out_of_reach_loads_through_its_own_register)
{
	static const struct {
		uint32_t src, load;
	} forms[] = {
		{0x58000083, 0xf9400063}, /* ldr x3 -> ldr x3, [x3] */
		{0x18000083, 0xb9400063}, /* ldr w3 -> ldr w3, [x3] */
		{0x98000083, 0xb9800063}, /* ldrsw x3 -> ldrsw x3, [x3] */
	};
	uint32_t out[16];

	for (size_t i = 0; i < 3; i++) {
		CHECK_EQ(a64_roundtrip(&forms[i].src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 16);
		CHECK(is_adrp(out[0], 3));
		CHECK(is_add_imm(out[1], 3));
		CHECK_EQ(out[2], forms[i].load);
	}
}

TEST(ldr_literal_within_1_mib_is_re_encoded)
{
	const uint32_t src = 0x58000083;
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC - 4096, SRC + 4, out, 16), 8);
	CHECK_EQ(out[0] & 0xff00001fu, 0x58000003u);
}

TEST(simd_literal_out_of_reach_goes_through_x16_saved_on_the_stack)
{
	const uint32_t src = 0x9c000085; /* ldr q5, .+0x10 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, SRC + 4, out, 16), 24);
	CHECK_EQ(out[0], 0xf81f0ff0u); /* str x16, [sp, #-16]! */
	CHECK(is_adrp(out[1], 16));
	CHECK(is_add_imm(out[2], 16));
	CHECK_EQ(out[3], 0x3dc00205u); /* ldr q5, [x16] */
	CHECK_EQ(out[4], 0xf84107f0u); /* ldr x16, [sp], #16 */
}

TEST(prfm_literal_out_of_reach_becomes_a_nop)
{
	const uint32_t src = 0xd8000080;
	uint32_t out[16];

	CHECK_EQ(relocate(&src, 1, SRC + 64 * MIB, 0, sizeof(out)), 4);
	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 4096, 0, out, 16), 4);
	CHECK_EQ(out[0] & 0xff00001fu, 0xd8000000u);
}

/* ---- calls through registers ---- */

TEST(blr_becomes_br_x16_with_the_original_link)
{
	const uint32_t src = 0xd63f0100; /* blr x8 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, 0, out, 16), 16);
	CHECK_EQ(out[0], 0xaa0803f0u); /* mov x16, x8 */
	CHECK(is_adrp(out[1], 30));
	CHECK_EQ(out[3], BR_X16);
}

TEST(blr_x30_reads_x30_before_the_link_overwrites_it)
{
	const uint32_t src = 0xd63f03c0; /* blr x30 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, 0, out, 16), 16);
	CHECK_EQ(out[0], 0xaa1e03f0u); /* mov x16, x30 */
}

TEST(blraa_authenticates_through_x16_and_x17)
{
	const uint32_t src = 0xd73f0820; /* blraa x1, x0 */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(&src, 1, SRC, SRC + 64 * MIB, 0, out, 16), 20);
	CHECK_EQ(out[0], 0xaa0003f1u); /* mov x17, x0 */
	CHECK_EQ(out[1], 0xaa0103f0u); /* mov x16, x1 */
	CHECK_EQ(out[4], 0xd71f0a11u); /* braa x16, x17 */
}

TEST(blraa_with_swapped_scratch_registers_is_refused)
{
	const uint32_t src = 0xd73f0a30; /* blraa x17, x16 */

	CHECK_EQ(relocate(&src, 1, SRC + 64 * MIB, 0, 64), -EOPNOTSUPP);
}

/* ---- the rest ---- */

TEST(other_instructions_are_copied_word_for_word)
{
	const uint32_t src[] = {0xa9bf7bfd, 0x910003fd, 0xd53bd040}; /* stp; mov; mrs */
	uint32_t out[16];

	CHECK_EQ(a64_roundtrip(src, 3, SRC, SRC + GIB / 8, SRC + 12, out, 16), 16);
	CHECK(memcmp(out, src, sizeof(src)) == 0);
}

TEST(jump_back_out_of_reach_is_erange)
{
	const uint32_t src = 0x910003fd;

	CHECK_EQ(relocate(&src, 1, SRC + GIB, SRC + 4, 64), -ERANGE);
}

TEST(rejected_instruction_is_eopnotsupp)
{
	const uint32_t src = 0xd4000001; /* svc #0 */

	CHECK_EQ(relocate(&src, 1, SRC + 4096, SRC + 4, 64), -EOPNOTSUPP);
}

TEST(a_full_buffer_is_enospc)
{
	const uint32_t src = 0x58000083;

	CHECK_EQ(relocate(&src, 1, SRC + 64 * MIB, SRC + 4, 8), -ENOSPC);
}

/* 100 MiB: b still reaches, imm19 forms do not; 3 GiB: adrp reaches; 16 GiB:
 * only literals and veneers do. */
TEST(every_vector_that_runs_relocates_near_and_far_with_its_targets)
{
	for (size_t i = 0; i < a64_nvectors; i++) {
		const struct a64_vec *v = &a64_vectors[i];

		if (v->cls == NP_INSN_REJECTED)
			continue;
		if ((v->w & 0xff000000u) == 0xd8000000u) { /* prfm: a nop once out of reach */
			CHECK_EQ(relocate(&v->w, 1, SRC + 100 * MIB, SRC + 4, 64), 8);
			continue;
		}
		CHECK(a64_roundtrip(&v->w, 1, SRC, SRC + 100 * MIB, SRC + 4, NULL, 0) > 0);
		CHECK(a64_roundtrip(&v->w, 1, SRC, SRC - 3 * GIB, 0, NULL, 0) > 0);
		CHECK(a64_roundtrip(&v->w, 1, SRC, SRC + 16 * GIB, 0, NULL, 0) > 0);
	}
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * Relocation. Every case goes through rv_roundtrip(), which re-decodes
 * the output and checks that each branch target and auipc address is the
 * original one and that the jump back reaches resume_pc; the cases then
 * check the form chosen.
 */
#include <errno.h>

#include "rv_test.h"

#define SRC 0x3ff7a00000ull /* where shared libraries land under Linux */
#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define T1  (1ull << 6)     /* x6 */
#define T3  (1ull << 28)

static int relocate(const uint8_t *src, size_t n, uint64_t dst_pc, uint64_t resume,
		    uint64_t scratch, uint8_t *out, size_t cap)
{
	struct np_reloc r = {src, n, SRC, out, cap, dst_pc, resume};
	struct np_reloc_scratch s = {scratch, scratch};

	return ISA->relocate_via(&r, &s);
}

/* ---- position-independent instructions ---- */

TEST(plain_instructions_are_copied_in_their_own_length)
{
	/* c.addi16sp sp,-64 ; sd ra,24(sp) ; c.mv a0,a1 */
	const uint8_t src[] = {0x39, 0x71, 0x23, 0x3c, 0x11, 0x00, 0x2e, 0x85};
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, sizeof(src), SRC, SRC + 4 * KIB, SRC + 8, 0, out, sizeof(out)),
		 8 + 4);
	CHECK(memcmp(out, src, 8) == 0);
	CHECK_EQ(rv_le32(out + 8) & 0xfff, 0x06f); /* jal zero: the jump back */
}

TEST(jump_back_beyond_jal_reach_goes_through_a_scratch_register)
{
	const uint8_t src[] = {0x2e, 0x85}; /* mv a0,a1 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 2, SRC, SRC + GIB, SRC + 2, T1, out, sizeof(out)), 2 + 8);
	CHECK_EQ(rv_le32(out + 2) & 0xfff, 0x317);  /* auipc t1 */
	CHECK_EQ(rv_le32(out + 6) & 0xfffff, 0x30067); /* jalr zero,lo(t1) */
}

TEST(cannot_jump_back_beyond_jal_reach_without_a_scratch_register)
{
	const uint8_t src[] = {0x2e, 0x85};
	uint8_t out[64];

	CHECK_EQ(relocate(src, 2, SRC + GIB, SRC + 2, 0, out, sizeof(out)), -ERANGE);
}

/* ---- auipc ---- */

TEST(auipc_becomes_auipc_addi_forming_the_original_address)
{
	const uint8_t src[] = {0x17, 0x55, 0x34, 0x12}; /* auipc a0,0x12345 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 4, SRC, SRC - GIB, 0, 0, out, sizeof(out)), 8);
	CHECK_EQ(rv_le32(out) & 0xfff, 0x517);     /* auipc a0 */
	CHECK_EQ(rv_le32(out + 4) & 0xfffff, 0x50513); /* addi a0,a0 */
}

TEST(cannot_relocate_auipc_beyond_two_gib)
{
	const uint8_t src[] = {0x17, 0x55, 0x34, 0x12};
	uint8_t out[64];

	CHECK_EQ(relocate(src, 4, SRC + 3 * GIB, 0, T1, out, sizeof(out)), -ERANGE);
}

/* ---- jal ---- */

TEST(jal_within_one_mib_stays_a_jal)
{
	const uint8_t src[] = {0xef, 0x00, 0x00, 0x10}; /* jal .+0x100 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 4, SRC, SRC + 64 * KIB, 0, 0, out, sizeof(out)), 4);
	CHECK_EQ(rv_le32(out) & 0xfff, 0x0ef);
}

TEST(far_call_sets_the_original_return_address_then_jumps_through_scratch)
{
	const uint8_t src[] = {0xef, 0x00, 0x00, 0x10}; /* jal .+0x100 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 4, SRC, SRC + GIB, 0, T1, out, sizeof(out)), 16);
	CHECK_EQ(rv_le32(out) & 0xfff, 0x097);      /* auipc ra */
	CHECK_EQ(rv_le32(out + 4) & 0xfffff, 0x08093); /* addi ra,ra: = SRC + 4 */
	CHECK_EQ(rv_le32(out + 8) & 0xfff, 0x317);  /* auipc t1 */
	CHECK_EQ(rv_le32(out + 12) & 0xfffff, 0x30067); /* jalr zero,lo(t1) */
}

TEST(cannot_relocate_far_jal_without_a_scratch_register)
{
	const uint8_t src[] = {0x6f, 0x00, 0x00, 0x10}; /* j .+0x100 */
	uint8_t out[64];

	CHECK_EQ(relocate(src, 4, SRC + GIB, 0, 0, out, sizeof(out)), -ERANGE);
}

TEST(compressed_j_far_goes_through_scratch)
{
	const uint8_t src[] = {0xfd, 0xaf}; /* c.j .+0x7fe */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 2, SRC, SRC + 2 * MIB, 0, T3, out, sizeof(out)), 8);
	CHECK_EQ(rv_le32(out) & 0xfff, 0xe17); /* auipc t3 */
}

/* ---- jalr ---- */

TEST(jr_is_copied)
{
	const uint8_t src[] = {0x82, 0x87}; /* c.jr a5 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 2, SRC, SRC + GIB, 0, 0, out, sizeof(out)), 2);
	CHECK(memcmp(out, src, 2) == 0);
}

TEST(compressed_jalr_links_to_the_original_pc_plus_two)
{
	const uint8_t src[] = {0x82, 0x97}; /* c.jalr a5 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 2, SRC, SRC + GIB, 0, 0, out, sizeof(out)), 12);
	CHECK_EQ(rv_le32(out) & 0xfff, 0x097);        /* auipc ra */
	CHECK_EQ(rv_le32(out + 8), 0x00078067);       /* jr a5 */
}

TEST(jalr_through_its_own_link_register_needs_a_scratch)
{
	const uint8_t src[] = {0xe7, 0x80, 0x80, 0x00}; /* jalr ra,8(ra) */
	uint8_t out[64];

	CHECK_EQ(relocate(src, 4, SRC + 4 * KIB, 0, 0, out, sizeof(out)), -ERANGE);
	CHECK_EQ(rv_roundtrip(src, 4, SRC, SRC + 4 * KIB, 0, T1, out, sizeof(out)), 16);
	CHECK_EQ(rv_le32(out), 0x00808313);      /* addi t1,ra,8 */
	CHECK_EQ(rv_le32(out + 12), 0x00030067); /* jr t1 */
}

/* ---- conditional branches ---- */

TEST(branch_within_four_kib_is_retargeted)
{
	const uint8_t src[] = {0x63, 0x00, 0xb5, 0x04}; /* beq a0,a1,.+0x40 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 4, SRC, SRC + 1 * KIB, 0, 0, out, sizeof(out)), 4);
}

TEST(far_branch_is_inverted_over_a_jal)
{
	const uint8_t src[] = {0x63, 0x00, 0xb5, 0x04}; /* beq a0,a1,.+0x40 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 4, SRC, SRC + 64 * KIB, SRC + 4, 0, out, sizeof(out)), 12);
	CHECK_EQ(rv_le32(out), 0x00b51463); /* bne a0,a1,.+8 */
}

TEST(compressed_beqz_beyond_jal_reach_is_inverted_over_auipc_jalr)
{
	const uint8_t src[] = {0x21, 0xc1}; /* c.beqz a0,.+0x40 */
	uint8_t out[64];

	CHECK_EQ(rv_roundtrip(src, 2, SRC, SRC + GIB, SRC + 2, T1, out, sizeof(out)), 12 + 8);
	CHECK_EQ(rv_le32(out), 0x00051663); /* bnez a0,.+12 */
}

TEST(cannot_relocate_far_branch_without_scratch)
{
	const uint8_t src[] = {0x21, 0xc1};
	uint8_t out[64];

	CHECK_EQ(relocate(src, 2, SRC + GIB, 0, 0, out, sizeof(out)), -ERANGE);
}

/* ---- refusals ---- */

TEST(rejected_instructions_are_not_relocated)
{
	const uint8_t ecall[] = {0x73, 0, 0, 0};
	const uint8_t lr[] = {0x2f, 0xa5, 0x05, 0x10};
	uint8_t out[64];

	CHECK_EQ(relocate(ecall, 4, SRC + KIB, 0, 0, out, sizeof(out)), -EOPNOTSUPP);
	CHECK_EQ(relocate(lr, 4, SRC + KIB, 0, 0, out, sizeof(out)), -EOPNOTSUPP);
}

TEST(partial_instruction_is_eilseq)
{
	const uint8_t src[] = {0x13, 0x05, 0x50}; /* 3 of li a0,5 */
	uint8_t out[64];

	CHECK_EQ(relocate(src, 3, SRC + KIB, 0, 0, out, sizeof(out)), -EILSEQ);
}

TEST(output_too_small_is_enospc)
{
	const uint8_t src[] = {0x17, 0x55, 0x34, 0x12}; /* auipc: 8 bytes out */
	uint8_t out[8];

	CHECK_EQ(relocate(src, 4, SRC + KIB, 0, 0, out, 7), -ENOSPC);
	CHECK_EQ(relocate(src, 4, SRC + KIB, 0, 0, out, 8), 8);
}

TEST(every_vector_relocates_or_says_why)
{
	for (size_t i = 0; i < rv_nvectors; i++) {
		uint8_t b[4];
		size_t n = rv_vec_bytes(&rv_vectors[i], b);
		int r = rv_roundtrip(b, n, PC, PC + GIB, PC + n, T1, NULL, 0);

		if (rv_vectors[i].cls == NP_INSN_REJECTED)
			CHECK_EQ(r, -EOPNOTSUPP);
		else
			CHECK(r > 0);
	}
}

TEST_MAIN()

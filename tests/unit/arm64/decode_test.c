/* SPDX-License-Identifier: MIT */
/*
 * Decoding and classification: every vector's class, flags and target,
 * the reasons users see, the words that are not instructions, and the
 * look-ahead that refuses probes inside load/store-exclusive sequences.
 */
#include <errno.h>

#include "a64_test.h"

static int decode(const uint32_t *w, size_t n, uint64_t pc, struct np_insn *in)
{
	uint8_t b[256];

	for (size_t i = 0; i < n; i++)
		a64_le(b + 4 * i, w[i]);
	return ISA->decode(b, 4 * n, pc, in);
}

TEST(every_vector_has_its_class_flags_and_target)
{
	for (size_t i = 0; i < a64_nvectors; i++) {
		const struct a64_vec *v = &a64_vectors[i];
		struct np_insn in;

		CHECK_EQ(decode(&v->w, 1, PC, &in), 0);
		if (in.cls != v->cls || in.flags != v->flags || in.target != v->target)
			fprintf(stderr, "vector %zu: %s\n", i, v->text);
		CHECK_EQ(in.cls, v->cls);
		CHECK_EQ(in.flags, v->flags);
		CHECK_EQ(in.target, v->target);
		CHECK_EQ(in.len, 4);
		CHECK_EQ(in.pc, PC);
		/* a simulator is bound exactly when the class says so */
		CHECK_EQ(in.sim != 0, v->cls == NP_INSN_SIMULATED);
		if (v->cls == NP_INSN_REJECTED)
			CHECK(in.reason != NULL && strlen(in.reason) > 10);
	}
}

/* each one `.inst ... ; undefined` for aarch64-linux-gnu-objdump */
TEST(unallocated_groups_and_the_missing_literal_load_are_eilseq)
{
	const uint32_t bad[] = {0x02000000, 0x06000000, 0xe3ffffff, 0xdc000000, 0xdcffffff,
				0x55000000, 0x57ffffff, 0x76000000, 0xf4000000, 0xf7ffffff,
				0xd6000000, 0xd7ffffff, 0xd65f0001, 0xd61f0800, 0xd6df03e0};
	struct np_insn in;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(decode(&bad[i], 1, PC, &in), -EILSEQ);
}

TEST(a_partial_word_is_enodata_and_a_misaligned_pc_eilseq)
{
	const uint8_t b[3] = {0x1f, 0x20, 0x03};
	const uint32_t nop = 0xd503201f;
	struct np_insn in;

	CHECK_EQ(ISA->decode(b, sizeof(b), PC, &in), -ENODATA);
	CHECK_EQ(decode(&nop, 1, PC + 2, &in), -EILSEQ);
}

TEST(svc_is_refused_with_a_reason_naming_it)
{
	const uint32_t svc = 0xd4000001;
	struct np_insn in;

	CHECK_EQ(decode(&svc, 1, PC, &in), 0);
	CHECK(strstr(in.reason, "svc") != NULL);
}

TEST(landing_pads_are_refused_so_indirect_branches_still_find_them)
{
	const uint32_t pads[] = {0xd503245f, 0xd503233f, 0xd503237f, 0xd50324df};
	struct np_insn in;

	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ(decode(&pads[i], 1, PC, &in), 0);
		CHECK_EQ(in.cls, NP_INSN_REJECTED);
		CHECK(strstr(in.reason, "landing pad") != NULL);
	}
}

/* What an entry probe moves past, and what each pad leaves in x30. */
TEST(landing_pad_kinds_say_which_key_signed_the_return_address)
{
	static const struct {
		uint32_t w;
		unsigned kind;
	} v[] = {
		{0xd503241f, NP_PAD_BTI},   /* bti */
		{0xd503245f, NP_PAD_BTI},   /* bti c */
		{0xd503249f, NP_PAD_BTI},   /* bti j */
		{0xd50324df, NP_PAD_BTI},   /* bti jc */
		{0xd503233f, NP_PAD_PAC_A}, /* paciasp */
		{0xd503237f, NP_PAD_PAC_B}, /* pacibsp */
		{0xd50323bf, NP_PAD_NONE},  /* autiasp */
		{0xd503201f, NP_PAD_NONE},  /* nop */
		{0xd503219f, NP_PAD_NONE},  /* pacia1716: no landing pad */
		{0xa9bf7bfd, NP_PAD_NONE},  /* stp x29, x30, [sp, #-16]! */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		CHECK_EQ(np_isa_arm64.landing_pad((const uint8_t *)&v[i].w, 4), v[i].kind);
	CHECK_EQ(np_isa_arm64.landing_pad((const uint8_t *)&v[0].w, 3), NP_PAD_NONE);
}

/*
 *   0 1:  ldaxr w1, [x0]
 *   4     cmp   w1, w2
 *   8     b.ne  2f
 *   c     stlxr w3, w4, [x0]
 *  10     cbnz  w3, 1b
 *  14 2:  ret
 */
static const uint32_t cas_loop[] = {0x885ffc01, 0x6b02003f, 0x54000061,
				    0x8803fc04, 0x35ffff83, 0xd65f03c0};

TEST(instructions_inside_an_exclusive_sequence_are_refused)
{
	struct np_insn in;

	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ(decode(cas_loop + i, 6 - i, PC + 4 * i, &in), 0);
		CHECK_EQ(in.cls, NP_INSN_REJECTED);
		CHECK(strstr(in.reason, "exclusive") != NULL);
	}
}

TEST(instructions_after_the_store_exclusive_are_probed)
{
	struct np_insn in;

	CHECK_EQ(decode(cas_loop + 4, 2, PC + 16, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED); /* cbnz */
	CHECK_EQ(decode(cas_loop + 5, 1, PC + 20, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED); /* ret */
}

TEST(an_instruction_before_the_load_exclusive_is_probed)
{
	const uint32_t code[] = {0xaa0103e0, 0x885ffc01, 0x8803fc04}; /* mov; ldaxr; stlxr */
	struct np_insn in;

	CHECK_EQ(decode(code, 3, PC, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_OUT_OF_LINE);
}

TEST(the_lookahead_stops_at_a_return)
{
	const uint32_t code[] = {0xaa0103e0, 0xd65f03c0, 0x8803fc04}; /* mov; ret; stlxr */
	struct np_insn in;

	CHECK_EQ(decode(code, 3, PC, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_OUT_OF_LINE);
}

TEST(bc_cond_is_a_conditional_branch_like_b_cond)
{
	const uint32_t bc = 0x54000090; /* bc.eq .+0x10 */
	struct np_insn in;

	CHECK_EQ(decode(&bc, 1, PC, &in), 0);
	CHECK_EQ(in.flags, NP_INSN_BRANCH | NP_INSN_COND);
	CHECK_EQ(in.target, PC + 0x10);
}

TEST(adrp_target_is_the_page_of_pc_plus_the_offset)
{
	const uint32_t adrp = 0xb0000001; /* adrp x1, +1 page */
	struct np_insn in;

	CHECK_EQ(decode(&adrp, 1, 0x7f0000401ffcull, &in), 0);
	CHECK_EQ(in.target, 0x7f0000402000ull);
}

TEST_MAIN()

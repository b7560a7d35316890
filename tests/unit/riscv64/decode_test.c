/* SPDX-License-Identifier: MIT */
/*
 * Decoding and classification: every vector's class, flags, target and
 * length, and the properties the tables must keep.
 */
#include <errno.h>

#include "arch/riscv64/internal.h"
#include "arch/riscv64/opcodes.h"
#include "rv_test.h"

TEST(every_vector_decodes_to_its_class_flags_and_target)
{
	for (size_t i = 0; i < rv_nvectors; i++) {
		const struct rv_vec *v = &rv_vectors[i];
		uint8_t b[4];
		struct np_insn in;
		size_t n = rv_vec_bytes(v, b);

		CHECK_EQ(ISA->decode(b, n, PC, &in), 0);
		if (in.cls != v->cls || in.flags != v->flags || in.target != v->target)
			fprintf(stderr, "vector %zu: %s\n", i, v->text);
		CHECK_EQ(in.cls, v->cls);
		CHECK_EQ(in.flags, v->flags);
		CHECK_EQ(in.target, v->target);
		CHECK_EQ(in.len, v->len);
		CHECK_EQ(in.pc, PC);
		if (in.cls == NP_INSN_REJECTED)
			CHECK(in.reason && *in.reason);
		if (in.cls == NP_INSN_SIMULATED)
			CHECK(in.sim != 0);
	}
}

TEST(every_opcode_line_matches_only_bits_inside_its_mask)
{
	for (size_t i = 0; i < rv_nopcodes; i++) {
		if ((rv_opcodes[i].match & ~rv_opcodes[i].mask) != 0)
			fprintf(stderr, "line %zu: %s\n", i, rv_opcodes[i].name);
		CHECK_EQ(rv_opcodes[i].match & ~rv_opcodes[i].mask, 0);
		CHECK_EQ(rv_opcodes[i].match & 3, 3); /* 32-bit forms only */
	}
}

TEST(compressed_forms_expand_to_the_same_meaning_as_their_32_bit_forms)
{
	/* c.j .+0x7fe (0xaffd) and jal zero,.+0x7fe */
	CHECK_EQ(rv_expand(0xaffd), rv_enc_j(0, 0x7fe));
	/* c.beqz a0,.+0x40 and beq a0,zero,.+0x40 */
	CHECK_EQ(rv_expand(0xc121), rv_enc_b(0, 10, 0, 0x40));
	/* c.jalr a5 and jalr ra,0(a5) */
	CHECK_EQ(rv_expand(0x9782), 0x000780e7);
	/* c.ldsp ra,8(sp) and ld ra,8(sp) */
	CHECK_EQ(rv_expand(0x60a2), 0x00813083);
	/* c.sdsp ra,8(sp) and sd ra,8(sp) */
	CHECK_EQ(rv_expand(0xe406), 0x00113423);
	/* c.addi16sp sp,-64 and addi sp,sp,-64 */
	CHECK_EQ(rv_expand(0x7139), 0xfc010113);
}

TEST(reserved_compressed_encodings_are_eilseq)
{
	const uint8_t q0_reserved[] = {0x00, 0x80}; /* funct3 100 of quadrant 0 */
	const uint8_t addi16sp_zero[] = {0x01, 0x61}; /* c.addi16sp sp,0 */
	const uint8_t lui_zero[] = {0x81, 0x65};      /* c.lui a1,0 */
	const uint8_t ldsp_x0[] = {0x02, 0x60};       /* c.ldsp zero,0(sp) */
	const uint8_t jr_x0[] = {0x02, 0x80};         /* c.jr zero */
	const uint8_t c_addi4spn_0[] = {0x04, 0x00};  /* c.addi4spn a1,sp,0 */
	struct np_insn in;

	CHECK_EQ(ISA->decode(q0_reserved, 2, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(addi16sp_zero, 2, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(lui_zero, 2, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(ldsp_x0, 2, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(jr_x0, 2, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(c_addi4spn_0, 2, PC, &in), -EILSEQ);
}

TEST(words_outside_rv64gc_are_eilseq)
{
	const uint8_t vadd[] = {0x57, 0x00, 0x00, 0x02};   /* vadd.vv v0,v0,v0 (V) */
	const uint8_t long48[] = {0x1f, 0x00, 0, 0, 0, 0}; /* a 48-bit encoding */
	const uint8_t bad_op[] = {0x33, 0x05, 0xb5, 0x10}; /* OP with funct7 0x08 */
	struct np_insn in;

	CHECK_EQ(ISA->decode(vadd, 4, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(long48, 6, PC, &in), -EILSEQ);
	CHECK_EQ(ISA->decode(bad_op, 4, PC, &in), -EILSEQ);
}

TEST(short_input_is_enodata)
{
	const uint8_t word[] = {0x13, 0x05, 0x50, 0x00}; /* li a0,5 */
	struct np_insn in;

	CHECK_EQ(ISA->decode(word, 3, PC, &in), -ENODATA);
	CHECK_EQ(ISA->decode(word, 1, PC, &in), -ENODATA);
	CHECK_EQ(ISA->decode(word, 0, PC, &in), -ENODATA);
}

TEST(jalr_with_an_offset_runs_out_of_line_and_says_why)
{
	const uint8_t b[] = {0xe7, 0x00, 0x88, 0x00}; /* jalr 8(a6) */
	struct np_insn in;

	CHECK_EQ(ISA->decode(b, 4, PC, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_OUT_OF_LINE);
	CHECK(strstr(in.reason, "offset") != NULL);
}

TEST(rejection_reasons_name_the_instruction)
{
	const uint8_t ecall[] = {0x73, 0, 0, 0};
	const uint8_t lr[] = {0x2f, 0xa5, 0x05, 0x10};
	const uint8_t fencei[] = {0x0f, 0x10, 0, 0};
	struct np_insn in;

	CHECK_EQ(ISA->decode(ecall, 4, PC, &in), 0);
	CHECK(strncmp(in.reason, "ecall", 5) == 0);
	CHECK_EQ(ISA->decode(lr, 4, PC, &in), 0);
	CHECK(strncmp(in.reason, "lr", 2) == 0);
	CHECK_EQ(ISA->decode(fencei, 4, PC, &in), 0);
	CHECK(strncmp(in.reason, "fence.i", 7) == 0);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/* Decoding and classification: the vector table, then the edge cases. */
#include <errno.h>

#include "arch/x86_64/internal.h"
#include "x86_test.h"

static int decode(const uint8_t *b, size_t n, struct np_insn *in)
{
	return ISA->decode(b, n, PC, in);
}

static void check_vector(size_t i)
{
	const struct x86_vec *v = &x86_vectors[i];
	struct np_insn in;
	int failed = np_test_failed;

	np_test_failed = 0;
	CHECK_EQ(decode(v->b, v->len, &in), 0);
	CHECK_EQ(in.pc, PC);
	CHECK_EQ(in.len, v->len);
	CHECK_EQ(in.cls, v->cls);
	CHECK_EQ(in.flags, v->flags);
	CHECK_EQ(in.target, v->target);
	if (np_test_failed)
		fprintf(stderr, "  ... in vector %zu: %s\n", i, v->text);
	np_test_failed |= failed;
}

TEST(every_vector_decodes_to_its_length_class_flags_and_target)
{
	for (size_t i = 0; i < x86_nvectors; i++)
		check_vector(i);
}

TEST(every_rejection_carries_a_reason)
{
	for (size_t i = 0; i < x86_nvectors; i++) {
		struct np_insn in;

		CHECK_EQ(decode(x86_vectors[i].b, x86_vectors[i].len, &in), 0);
		if (in.cls == NP_INSN_REJECTED && !in.reason)
			fprintf(stderr, "  no reason for %s\n", x86_vectors[i].text);
		CHECK(in.cls != NP_INSN_REJECTED || in.reason);
	}
}

TEST(simulated_instructions_carry_a_sim_id_and_others_none)
{
	for (size_t i = 0; i < x86_nvectors; i++) {
		struct np_insn in;

		CHECK_EQ(decode(x86_vectors[i].b, x86_vectors[i].len, &in), 0);
		CHECK_EQ(in.sim != 0, in.cls == NP_INSN_SIMULATED);
	}
}

TEST(decoding_ignores_bytes_after_the_instruction)
{
	const uint8_t b[] = {0x55, 0xcc, 0xcc, 0xcc}; /* push %rbp; int3 ... */
	struct np_insn in;

	CHECK_EQ(decode(b, sizeof(b), &in), 0);
	CHECK_EQ(in.len, 1);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED);
}

static const char *reason_of(const uint8_t *b, size_t n)
{
	struct np_insn in;

	CHECK_EQ(decode(b, n, &in), 0);
	CHECK_EQ(in.cls, NP_INSN_REJECTED);
	return in.reason;
}

TEST(int3_is_rejected_as_a_breakpoint_already_present)
{
	const uint8_t b[] = {0xcc};

	CHECK_STR(reason_of(b, 1), "breakpoint already present");
}

TEST(ud2_is_rejected_because_it_would_fault_at_another_pc)
{
	const uint8_t b[] = {0x0f, 0x0b};

	CHECK_STR(reason_of(b, 2), "undefined instruction: would fault at a different pc");
}

TEST(transactional_instructions_are_rejected)
{
	const uint8_t xbegin[] = {0xc7, 0xf8, 0, 0, 0, 0}, xend[] = {0x0f, 0x01, 0xd5};

	CHECK(strstr(reason_of(xbegin, 6), "transactional region"));
	CHECK(strstr(reason_of(xend, 3), "transactional region"));
}

TEST(far_branches_are_rejected)
{
	const uint8_t lret[] = {0xcb}, ljmp[] = {0xff, 0x2d, 0, 0, 0, 0};

	CHECK_STR(reason_of(lret, 1), "far branch: changes the code segment");
	CHECK_STR(reason_of(ljmp, 6), "far branch: changes the code segment");
}

TEST(privileged_instructions_are_rejected)
{
	const uint8_t swapgs[] = {0x0f, 0x01, 0xf8}, hlt[] = {0xf4};

	CHECK_STR(reason_of(swapgs, 3), "privileged instruction: faults in user mode");
	CHECK(strstr(reason_of(hlt, 1), "privileged"));
}

/* Intel ignores 0x66 on near branches, AMD takes a rel16: the length
 * itself depends on the vendor (objdump decodes 66 e9 as 4 bytes). */
TEST(operand_size_prefix_on_a_branch_is_rejected)
{
	const uint8_t jmp[] = {0x66, 0xe9, 0, 0, 0, 0}, call[] = {0x66, 0xe8, 0, 0, 0, 0};
	const uint8_t ret[] = {0x66, 0xc3};

	CHECK(strstr(reason_of(jmp, 6), "operand-size prefix"));
	CHECK(strstr(reason_of(call, 6), "operand-size prefix"));
	CHECK(strstr(reason_of(ret, 2), "operand-size prefix"));
}

TEST(eip_relative_operand_is_rejected)
{
	const uint8_t b[] = {0x67, 0x48, 0x8d, 0x05, 0, 0, 0, 0}; /* lea 0x0(%eip),%rax */

	CHECK(strstr(reason_of(b, sizeof(b)), "eip-relative"));
}

TEST(invalid_encodings_are_eilseq)
{
	static const struct {
		uint8_t b[4];
		size_t n;
	} bad[] = {
		{{0x06}, 1},                   /* push %es: invalid in 64-bit mode */
		{{0xce}, 1},                   /* into: invalid in 64-bit mode */
		{{0x0f, 0x04}, 2},             /* unassigned */
		{{0xc4, 0xe2, 0x78, 0xff}, 4}, /* unassigned VEX opcode */
	};
	struct np_insn in;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(decode(bad[i].b, bad[i].n, &in), -EILSEQ);
}

TEST(longer_than_15_bytes_is_eilseq)
{
	uint8_t b[16];
	struct np_insn in;

	memset(b, 0x66, 15); /* 15 prefixes, then the nop: 16 bytes */
	b[15] = 0x90;
	CHECK_EQ(decode(b, sizeof(b), &in), -EILSEQ);
}

TEST(truncated_instruction_is_enodata)
{
	const uint8_t call[] = {0xe8, 0x00, 0x00}, esc[] = {0x0f};
	struct np_insn in;

	CHECK_EQ(decode(call, sizeof(call), &in), -ENODATA);
	CHECK_EQ(decode(esc, sizeof(esc), &in), -ENODATA);
	CHECK_EQ(decode(call, 0, &in), -ENODATA);
}

TEST(endbr64_is_simulated_as_a_nop_but_is_not_padding)
{
	const uint8_t b[] = {0xf3, 0x0f, 0x1e, 0xfa};
	struct np_insn in;

	CHECK_EQ(decode(b, sizeof(b), &in), 0);
	CHECK_EQ(in.cls, NP_INSN_SIMULATED);
	CHECK_EQ(X86_SIM_KIND(in.sim), X86_SIM_NOP);
	CHECK(!(in.flags & NP_INSN_PADDING));
}

TEST(stack_adjustments_beyond_the_sim_field_run_out_of_line_with_a_note)
{
	const uint8_t sub[] = {0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00}; /* sub $0x1000,%rsp */
	const uint8_t ret[] = {0xc2, 0x00, 0x10};                         /* ret $0x1000 */
	struct np_insn in;

	CHECK_EQ(decode(sub, sizeof(sub), &in), 0);
	CHECK_EQ(in.cls, NP_INSN_OUT_OF_LINE);
	CHECK(in.reason != NULL);
	CHECK_EQ(decode(ret, sizeof(ret), &in), 0);
	CHECK_EQ(in.cls, NP_INSN_OUT_OF_LINE);
	CHECK(in.reason != NULL);
}

TEST(sim_ids_name_register_condition_and_immediate)
{
	static const struct {
		uint8_t b[8];
		size_t n;
		unsigned kind, arg;
	} v[] = {
		{{0x41, 0x54}, 2, X86_SIM_PUSH, 12},               /* push %r12 */
		{{0x5d}, 1, X86_SIM_POP, 5},                       /* pop %rbp */
		{{0xc2, 0x18, 0x00}, 3, X86_SIM_RET, 0x18},        /* ret $0x18 */
		{{0x0f, 0x8e, 0, 0, 0, 0}, 6, X86_SIM_JCC, 0xe},   /* jle */
		{{0x67, 0xe0, 0x00}, 3, X86_SIM_LOOP,              /* loopnel */
		 X86_LOOP_LOOPNE | X86_LOOP_ECX},
		{{0x8d, 0x3d, 0, 0, 0, 0}, 6, X86_SIM_LEA, 7 | X86_LEA_32}, /* lea x(%rip),%edi */
		{{0x48, 0x89, 0xe5}, 3, X86_SIM_MOV, 5 | 4 << 4},  /* mov %rsp,%rbp */
		{{0x41, 0xff, 0xd3}, 3, X86_SIM_CALL_REG, 11},     /* call *%r11 */
		{{0x48, 0x83, 0xc4, 0x28}, 4, X86_SIM_ADD_RSP, 0x28}, /* add $0x28,%rsp */
	};
	struct np_insn in;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CHECK_EQ(decode(v[i].b, v[i].n, &in), 0);
		CHECK_EQ(X86_SIM_KIND(in.sim), v[i].kind);
		CHECK_EQ(X86_SIM_ARG(in.sim), v[i].arg);
	}
}

TEST_MAIN()

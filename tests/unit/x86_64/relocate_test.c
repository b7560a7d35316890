/* SPDX-License-Identifier: MIT */
/*
 * Relocation. Every case goes through x86_roundtrip(), which re-decodes
 * the output and checks that each branch target and rip-relative address
 * is the original one; the cases then check the bytes of the form.
 */
#include <errno.h>

#include "x86_test.h"

#define SRC 0x7f0000401000ull /* a PIE-like address: its top half is not 0 */
#define GIB (1ull << 30)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int relocate(const uint8_t *src, size_t n, uint64_t dst_pc, uint64_t resume, uint8_t *out,
		    size_t cap)
{
	struct np_reloc r = {src, n, SRC, out, cap, dst_pc, resume};

	return ISA->relocate(&r);
}

/* ---- rip-relative operands ---- */

TEST(rip_relative_load_moved_up_one_gib_keeps_its_target)
{
	const uint8_t src[] = {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00}; /* mov 0x100(%rip),%rax */
	uint8_t out[64];
	uint64_t dst = SRC + GIB;

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, dst, SRC + 7, out, sizeof(out)), 7 + 5);
	CHECK(memcmp(out, src, 3) == 0);
	CHECK_EQ(le32(out + 3), (uint32_t)(SRC + 7 + 0x100 - (dst + 7)));
	CHECK_EQ(out[7], 0xe9); /* jmp back */
}

TEST(rip_relative_load_moved_down_one_gib_keeps_its_target)
{
	const uint8_t src[] = {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00};

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC - GIB, SRC + 7, NULL, 0), 12);
}

TEST(cannot_relocate_rip_operand_out_of_range)
{
	const uint8_t src[] = {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00};
	uint8_t out[64];

	CHECK_EQ(relocate(src, sizeof(src), SRC + 3 * GIB, SRC + 7, out, sizeof(out)), -ERANGE);
	CHECK_EQ(relocate(src, sizeof(src), SRC - 3 * GIB, SRC + 7, out, sizeof(out)), -ERANGE);
}

TEST(rip_relative_store_keeps_the_immediate_after_the_displacement)
{
	/* movl $0x1,-0x10(%rip): disp32, then imm32 */
	const uint8_t src[] = {0xc7, 0x05, 0xf0, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + GIB, SRC + 10, out, sizeof(out)), 15);
	CHECK_EQ(le32(out + 6), 1);
}

/* ---- direct branches ---- */

TEST(jcc_rel8_becomes_jcc_rel32)
{
	const uint8_t src[] = {0x74, 0x10}; /* je .+0x12 */
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + GIB, SRC + 2, out, sizeof(out)), 11);
	CHECK_EQ(out[0], 0x0f);
	CHECK_EQ(out[1], 0x84);
}

TEST(jcc_out_of_reach_becomes_inverted_jcc_over_an_absolute_jmp)
{
	const uint8_t src[] = {0x74, 0x10};
	const uint8_t head[] = {0x75, 0x0e, 0xff, 0x25, 0, 0, 0, 0}; /* jne +14; jmp *0(%rip) */
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + 8 * GIB, SRC + 2, out, sizeof(out)),
		 16 + 14);
	CHECK(memcmp(out, head, sizeof(head)) == 0);
	CHECK_EQ(le64(out + 8), SRC + 0x12);
}

TEST(jmp_rel8_becomes_jmp_rel32)
{
	const uint8_t src[] = {0xeb, 0x10};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC - GIB, SRC + 2, out, sizeof(out)), 10);
	CHECK_EQ(out[0], 0xe9);
}

TEST(jmp_out_of_reach_becomes_the_14_byte_absolute_form)
{
	const uint8_t src[] = {0xe9, 0x00, 0x01, 0x00, 0x00};
	const uint8_t abs[] = {0xff, 0x25, 0, 0, 0, 0};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, 0x10000, 0, out, sizeof(out)), 14);
	CHECK(memcmp(out, abs, sizeof(abs)) == 0);
	CHECK_EQ(le64(out + 6), SRC + 5 + 0x100);
}

/* jrcxz 1f; jmp 2f; 1: jmp target; 2: */
TEST(jrcxz_becomes_jrcxz_over_a_short_jmp_to_a_long_one)
{
	const uint8_t src[] = {0xe3, 0x10};
	const uint8_t head[] = {0xe3, 0x02, 0xeb, 0x05, 0xe9};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + GIB, SRC + 2, out, sizeof(out)),
		 4 + 5 + 5);
	CHECK(memcmp(out, head, sizeof(head)) == 0);
}

TEST(loop_keeps_its_addr32_prefix_and_reaches_far_targets)
{
	const uint8_t src[] = {0x67, 0xe2, 0xf0}; /* loopl .-0x0e */
	const uint8_t head[] = {0x67, 0xe2, 0x02, 0xeb, 0x0e, 0xff, 0x25};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + 8 * GIB, SRC + 3, out, sizeof(out)),
		 5 + 14 + 14);
	CHECK(memcmp(out, head, sizeof(head)) == 0);
}

/* ---- calls keep the original return address ---- */

/* call 1f; int3; 1: (a real call: the return stack buffer stays in step) */
static const uint8_t real_call[6] = {0xe8, 0x01, 0x00, 0x00, 0x00, 0xcc};

TEST(call_rel32_calls_then_stores_the_original_return_address_then_jumps)
{
	const uint8_t src[] = {0xe8, 0x00, 0x01, 0x00, 0x00}; /* call .+0x105 */
	const uint8_t lo[] = {0xc7, 0x04, 0x24};             /* movl $lo,(%rsp) */
	const uint8_t hi[] = {0xc7, 0x44, 0x24, 0x04};       /* movl $hi,4(%rsp) */
	uint8_t out[64];
	uint64_t ret = SRC + 5;

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + GIB, ret, out, sizeof(out)),
		 6 + 7 + 8 + 5 + 5);
	CHECK(memcmp(out, real_call, sizeof(real_call)) == 0);
	CHECK(memcmp(out + 6, lo, sizeof(lo)) == 0);
	CHECK_EQ(le32(out + 9), (uint32_t)ret);
	CHECK(memcmp(out + 13, hi, sizeof(hi)) == 0);
	CHECK_EQ(le32(out + 17), (uint32_t)(ret >> 32));
	CHECK_EQ(out[21], 0xe9);
}

TEST(call_from_a_low_address_needs_one_sign_extended_store)
{
	const uint8_t src[] = {0xe8, 0x00, 0x01, 0x00, 0x00};
	const uint8_t movq[] = {0x48, 0xc7, 0x04, 0x24}; /* movq $simm32,(%rsp) */
	struct np_reloc r = {src, sizeof(src), 0x401000, NULL, 0, 0x40000000, 0};
	uint8_t out[64];

	r.dst = out;
	r.dst_cap = sizeof(out);
	CHECK_EQ(ISA->relocate(&r), 6 + 8 + 5);
	CHECK(memcmp(out, real_call, sizeof(real_call)) == 0);
	CHECK(memcmp(out + 6, movq, sizeof(movq)) == 0);
	CHECK_EQ(le32(out + 10), 0x401005); /* sign-extends to the whole address */
	CHECK_EQ(out[14], 0xe9);
}

TEST(call_through_register_becomes_call_store_and_jmp_through_it)
{
	const uint8_t rax[] = {0xff, 0xd0}, r11[] = {0x41, 0xff, 0xd3}, nt[] = {0x3e, 0xff, 0xd0};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(rax, sizeof(rax), SRC, SRC + GIB, 0, out, sizeof(out)), 21 + 2);
	CHECK(memcmp(out, real_call, sizeof(real_call)) == 0);
	CHECK(out[21] == 0xff && out[22] == 0xe0); /* jmp *%rax */
	CHECK_EQ(le32(out + 9), (uint32_t)(SRC + 2));
	CHECK_EQ(x86_roundtrip(r11, sizeof(r11), SRC, SRC + GIB, 0, out, sizeof(out)), 21 + 3);
	CHECK(out[21] == 0x41 && out[22] == 0xff && out[23] == 0xe3); /* jmp *%r11 */
	CHECK_EQ(x86_roundtrip(nt, sizeof(nt), SRC, SRC + GIB, 0, out, sizeof(out)), 21 + 3);
	CHECK(out[21] == 0x3e && out[23] == 0xe0); /* notrack stays */
}

TEST(call_through_an_rsp_slot_reads_it_eight_bytes_further)
{
	const uint8_t disp8[] = {0xff, 0x54, 0x24, 0x08}; /* call *0x8(%rsp) */
	const uint8_t nodisp[] = {0xff, 0x14, 0x24};      /* call *(%rsp) */
	const uint8_t jmp10[] = {0xff, 0x64, 0x24, 0x10}, jmp08[] = {0xff, 0x64, 0x24, 0x08};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(disp8, sizeof(disp8), SRC, SRC + GIB, 0, out, sizeof(out)), 25);
	CHECK(memcmp(out + 21, jmp10, sizeof(jmp10)) == 0);
	CHECK_EQ(x86_roundtrip(nodisp, sizeof(nodisp), SRC, SRC + GIB, 0, out, sizeof(out)), 25);
	CHECK(memcmp(out + 21, jmp08, sizeof(jmp08)) == 0);
}

TEST(call_through_a_rip_slot_becomes_jmp_through_the_same_slot)
{
	const uint8_t src[] = {0xff, 0x15, 0x00, 0x10, 0x00, 0x00}; /* call *0x1000(%rip) */
	uint8_t out[64];
	uint64_t dst = SRC - GIB;

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, dst, SRC + 6, out, sizeof(out)), 21 + 6 + 5);
	CHECK(out[21] == 0xff && out[22] == 0x25);
	CHECK_EQ(le32(out + 23), (uint32_t)(SRC + 6 + 0x1000 - (dst + 27)));
	CHECK_EQ(le32(out + 9), (uint32_t)(SRC + 6));
}

TEST(cannot_relocate_call_through_rsp_itself)
{
	const uint8_t src[] = {0xff, 0xd4}; /* call *%rsp */
	uint8_t out[64];

	CHECK_EQ(relocate(src, sizeof(src), SRC + GIB, 0, out, sizeof(out)), -EOPNOTSUPP);
}

/* ---- sequences, jump back, errors ---- */

TEST(prologue_is_copied_verbatim_then_jumps_back)
{
	/* push %rbp; mov %rsp,%rbp; sub $0x10,%rsp */
	const uint8_t src[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, sizeof(src), SRC, SRC + GIB, SRC + 8, out, sizeof(out)), 13);
	CHECK(memcmp(out, src, sizeof(src)) == 0);
	CHECK_EQ(out[8], 0xe9);
	CHECK_EQ(le32(out + 9), (uint32_t)(SRC + 8 - (SRC + GIB + 13)));
}

TEST(no_jump_back_when_resume_pc_is_zero)
{
	const uint8_t src[] = {0x55};
	uint8_t out[64];

	CHECK_EQ(relocate(src, 1, SRC + GIB, 0, out, sizeof(out)), 1);
}

TEST(jump_back_out_of_reach_uses_the_absolute_form)
{
	const uint8_t src[] = {0x55};
	uint8_t out[64];

	CHECK_EQ(x86_roundtrip(src, 1, SRC, 0x10000, SRC + 1, out, sizeof(out)), 1 + 14);
	CHECK(out[1] == 0xff && out[2] == 0x25);
	CHECK_EQ(le64(out + 7), SRC + 1);
}

TEST(rejected_instruction_makes_relocation_fail)
{
	const uint8_t src[] = {0x55, 0xcc}; /* push %rbp; int3 */
	uint8_t out[64];

	CHECK_EQ(relocate(src, sizeof(src), SRC + GIB, SRC + 2, out, sizeof(out)), -EOPNOTSUPP);
}

TEST(truncated_source_is_eilseq)
{
	const uint8_t src[] = {0x55, 0x48, 0x8b}; /* push %rbp; half a mov */
	uint8_t out[64];

	CHECK_EQ(relocate(src, sizeof(src), SRC + GIB, 0, out, sizeof(out)), -EILSEQ);
}

/* Every vector, near (+1 GiB) and far (+8 GiB): rejected ones fail with
 * -EOPNOTSUPP, rip-relative data is out of reach far away, everything
 * else round-trips; and one byte less of room is always -ENOSPC. */
static void check_vector_relocation(const struct x86_vec *v)
{
	uint8_t out[64];
	struct np_reloc r = {v->b, v->len, PC, out, 0, PC + GIB, PC + v->len};
	int near = x86_roundtrip(v->b, v->len, PC, PC + GIB, PC + v->len, NULL, 0);
	int far = x86_roundtrip(v->b, v->len, PC, PC + 8 * GIB, PC + v->len, NULL, 0);

	if (v->cls == NP_INSN_REJECTED) {
		CHECK_EQ(near, -EOPNOTSUPP);
		return;
	}
	CHECK(near > 0);
	if (v->flags & NP_INSN_PCREL)
		CHECK_EQ(far, -ERANGE);
	else
		CHECK(far > 0);
	r.dst_cap = near > 0 ? (size_t)near - 1 : 0;
	CHECK_EQ(ISA->relocate(&r), -ENOSPC);
}

TEST(every_vector_relocates_near_and_far_or_says_why_not)
{
	for (size_t i = 0; i < x86_nvectors; i++) {
		int before = np_test_failed;

		np_test_failed = 0;
		check_vector_relocation(&x86_vectors[i]);
		if (np_test_failed)
			fprintf(stderr, "  ... in vector %zu: %s\n", i, x86_vectors[i].text);
		np_test_failed |= before;
	}
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * The registers each word reads and writes (regs.c), the long JUMP form
 * (emit_jump_via) and relocation through scratch registers
 * (relocate_via). Each word's text is objdump's (binutils 2.40, at
 * 0x401000); the last test checks the table against objdump whenever
 * aarch64-linux-gnu-as and -objdump are installed.
 */
#include <errno.h>
#include <stdio.h>

#include "a64_test.h"

#define X(n)   (1ull << (n))
#define ALL    0x7fffffffull /* every x register: a form regs.c does not know */
#define MIB    (1ull << 20)
#define GIB    (1ull << 30)

struct use_vec {
	uint32_t w;
	const char *text;
	uint64_t read, written;
};

static const struct use_vec uses[] = {
	{0x8b020029, "add\tx9, x1, x2", X(1) | X(2), X(9)},
	{0x91000529, "add\tx9, x9, #0x1", X(9), X(9)},
	{0xd28000aa, "mov\tx10, #0x5", 0, X(10)},
	{0xf2a0002a, "movk\tx10, #0x1, lsl #16", X(10), X(10)},
	{0xaa0303eb, "mov\tx11, x3", X(3), X(11)},
	{0xf940040c, "ldr\tx12, [x0, #8]", X(0), X(12)},
	{0xf840840c, "ldr\tx12, [x0], #8", X(0), X(0) | X(12)},
	{0xf822782d, "str\tx13, [x1, x2, lsl #3]", X(1) | X(2) | X(13), 0},
	{0xa9413fee, "ldp\tx14, x15, [sp, #16]", 0, X(14) | X(15)},
	{0xa9bf7bfd, "stp\tx29, x30, [sp, #-16]!", X(29) | X(30), 0},
	{0x58000210, "ldr\tx16, 0x401040", 0, X(16)},
	{0xfd400060, "ldr\td0, [x3]", X(3), 0},
	{0xb4000204, "cbz\tx4, 0x401040", X(4), 0},
	{0x37180205, "tbnz\tw5, #3, 0x401040", X(5), 0},
	{0x94000010, "bl\t0x401040", 0, X(30)},
	{0xd63f00c0, "blr\tx6", X(6), X(30)},
	{0xd61f0220, "br\tx17", X(17), 0},
	{0xd65f03c0, "ret", X(30), 0},
	{0x9a890107, "csel\tx7, x8, x9, eq", X(8) | X(9), X(7)},
	{0xfa421020, "ccmp\tx1, x2, #0x0, ne", X(1) | X(2), 0},
	{0xf100103f, "cmp\tx1, #0x4", X(1), 0},
	{0x9b051883, "madd\tx3, x4, x5, x6", X(4) | X(5) | X(6), X(3)},
	{0xd53bd049, "mrs\tx9, tpidr_el0", 0, X(9)},
	{0xd51bd049, "msr\ttpidr_el0, x9", X(9), 0},
	{0x9e66002a, "fmov\tx10, d1", 0, X(10)},
	{0x9e670141, "fmov\td1, x10", X(10), 0},
	{0x9e620160, "scvtf\td0, x11", X(11), 0},
	{0x9e78000c, "fcvtzs\tx12, d0", 0, X(12)},
	{0x0e0c3c0d, "mov\tw13, v0.s[1]", 0, X(13)},
	{0x4e040dc0, "dup\tv0.4s, w14", X(14), 0},
	{0x1e622820, "fadd\td0, d1, d2", 0, 0},
	{0xf8210062, "ldadd\tx1, x2, [x3]", X(1) | X(3), X(2)},
	{0x4cdf7000, "ld1\t{v0.16b}, [x0], #16", X(0), X(0)},
	{0x90000010, "adrp\tx16, 0x401000", 0, X(16)},
	{0xd3431841, "ubfx\tx1, x2, #3, #4", X(2), X(1)},
	{0xb37d0c41, "bfi\tx1, x2, #3, #4", X(1) | X(2), X(1)},
	{0xdac00c41, "rev\tx1, x2", X(2), X(1)},
	{0xdac11041, "autia\tx1, x2", X(1) | X(2), X(1)},
	{0x38401c41, "ldrb\tw1, [x2, #1]!", X(2), X(1) | X(2)},
	{0xf9800000, "prfm\tpldl1keep, [x0]", X(0), 0},
	{0xb9800041, "ldrsw\tx1, [x2]", X(2), X(1)},
	{0xd10083ff, "sub\tsp, sp, #0x20", 0, 0},
	{0xd503201f, "nop", 0, 0},
	/* forms regs.c leaves to "reads everything, writes nothing" */
	{0xc85f7c41, "ldxr\tx1, [x2]", ALL, 0},
	{0xd503233f, "paciasp", ALL, 0},
	{0xd4000001, "svc\t#0x0", ALL, 0},
};

#define NUSES (sizeof(uses) / sizeof(uses[0]))

TEST(every_word_reads_and_writes_the_registers_it_names)
{
	for (size_t i = 0; i < NUSES; i++) {
		uint8_t b[4];
		struct np_reg_use u;

		a64_le(b, uses[i].w);
		CHECK_EQ(ISA->reg_use(b, 4, PC, &u), 0);
		if (u.read != uses[i].read || u.written != uses[i].written)
			fprintf(stderr, "%s: read 0x%llx written 0x%llx\n", uses[i].text,
				(unsigned long long)u.read, (unsigned long long)u.written);
		CHECK_EQ(u.read, uses[i].read);
		CHECK_EQ(u.written, uses[i].written);
	}
}

TEST(reg_use_of_an_unallocated_word_fails_as_decode_does)
{
	uint8_t b[4];
	struct np_reg_use u;

	a64_le(b, 0x55000000); /* unallocated in the branch group */
	CHECK_EQ(ISA->reg_use(b, 4, PC, &u), -EILSEQ);
	CHECK_EQ(ISA->reg_use(b, 3, PC, &u), -ENODATA);
}

TEST(the_convention_masks_follow_aapcs64)
{
	CHECK_EQ(ISA->entry_dead, 0x3fe00ull); /* x9..x17 */
	CHECK_EQ(ISA->entry_dead & (X(8) | X(18)), 0);
	CHECK_EQ(ISA->scratch_ok & (X(18) | X(29) | X(30) | X(31)), 0);
	CHECK_EQ(ISA->call_clobbered & X(18), 0);
	CHECK_EQ(ISA->call_clobbered & 0x3ffffull, 0x3ffffull);
}

/* ---- the long JUMP form --------------------------------------------------- */

static void check_far_jump(const uint8_t *b, uint64_t from, uint64_t to, unsigned reg)
{
	struct np_insn in;
	char text[64];

	CHECK_EQ(ISA->decode(b, 4, from, &in), 0);
	CHECK(in.flags & NP_INSN_PCREL);
	CHECK_EQ(a64_at(b) & 0x9f00001fu, 0x90000000u | reg); /* adrp xreg */
	CHECK_EQ(a64_at(b + 4), 0x91000000u | (uint32_t)(to & 0xfff) << 10 | reg << 5 | reg);
	CHECK_EQ(a64_at(b + 8), 0xd61f0000u | reg << 5); /* br xreg */
	CHECK_EQ(in.target + (to & 0xfff), to);
	CHECK(ISA->format(b + 8, 4, from + 8, text, sizeof(text)) > 0);
	CHECK_STR(text, reg == 16 ? "br\tx16" : reg == 17 ? "br\tx17" : "br\tx9");
}

TEST(jump_via_is_a_b_in_reach_and_adrp_add_br_beyond)
{
	uint8_t b[16];

	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC, PC + 100 * MIB, X(16)), 4);
	CHECK_EQ(a64_at(b) >> 26, 0x05u); /* b */
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC, PC + GIB + 0x1234, X(16)), 12);
	check_far_jump(b, PC, PC + GIB + 0x1234, 16);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC + 2 * GIB, PC + 0x10, X(16)), 12);
	check_far_jump(b, PC + 2 * GIB, PC + 0x10, 16);
}

TEST(jump_via_prefers_x16_and_x17_and_fails_without_a_register)
{
	uint8_t b[16];

	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC, PC + GIB, X(9) | X(17)), 12);
	check_far_jump(b, PC, PC + GIB, 17);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC, PC + GIB, X(9)), 12);
	check_far_jump(b, PC, PC + GIB, 9);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC, PC + GIB, 0), -ERANGE);
	CHECK_EQ(ISA->emit_jump_via(b, sizeof(b), PC, PC + 5 * GIB, X(16)), -ERANGE);
	CHECK_EQ(ISA->emit_jump_via(b, 8, PC, PC + GIB, X(16)), -ENOSPC);
}

/* ---- relocation through scratch registers ---------------------------------- */

static int relocate_via(uint32_t w, uint64_t dst_pc, uint64_t resume, uint64_t scratch,
			uint64_t back, uint32_t *out)
{
	uint8_t src[4], dst[64];
	struct np_reloc r = {src, 4, PC, dst, sizeof(dst), dst_pc, resume};
	struct np_reloc_scratch s = {scratch, back};
	int n;

	a64_le(src, w);
	n = ISA->relocate_via(&r, &s);
	for (int i = 0; i < n / 4; i++)
		out[i] = a64_at(dst + 4 * i);
	return n;
}

TEST(the_jump_back_goes_through_the_resume_register_when_b_cannot_reach)
{
	uint32_t o[16];
	uint64_t dst = PC + GIB;

	CHECK_EQ(relocate_via(0x8b020029, dst, PC + 4, 0, X(9), o), 16); /* add x9, x1, x2 */
	CHECK_EQ(o[0], 0x8b020029u);
	CHECK_EQ(o[1] & 0x9f00001fu, 0x90000009u); /* adrp x9 */
	CHECK_EQ(o[2], 0x91000000u | (uint32_t)((PC + 4) & 0xfff) << 10 | 9u << 5 | 9u);
	CHECK_EQ(o[3], 0xd61f0120u); /* br x9 */
	CHECK_EQ(relocate_via(0x8b020029, dst, PC + 4, X(10), 0, o), -ERANGE);
	CHECK_EQ(relocate_via(0x8b020029, PC + 64 * MIB, PC + 4, 0, 0, o), 8); /* b back */
}

TEST(a_far_branch_inside_the_function_needs_a_scratch_register)
{
	uint32_t o[16];
	uint64_t dst = PC + GIB;

	/* cbz x4, 0x401040: cbnz x4 over adrp+add+br x16 */
	CHECK_EQ(relocate_via(0xb4000204, dst, PC + 4, X(16), X(16), o), 28);
	CHECK_EQ(o[0], 0xb5000084u); /* cbnz x4, .+16 */
	CHECK_EQ(o[1] & 0x9f00001fu, 0x90000010u);
	CHECK_EQ(o[2], 0x91000000u | 0x040u << 10 | 16u << 5 | 16u);
	CHECK_EQ(o[3], 0xd61f0200u);
	/* no register: x16 is not known to be free 64 bytes from the site */
	CHECK_EQ(relocate_via(0xb4000204, dst, PC + 4, 0, X(16), o), -ERANGE);
	/* bl 0x401040: x30 = the original return address, then the jump */
	CHECK_EQ(relocate_via(0x94000010, dst, PC + 4, X(10), X(10), o), 32);
	CHECK_EQ(o[0] & 0x9f00001fu, 0x9000001eu); /* adrp x30 */
	CHECK_EQ(o[2] & 0x9f00001fu, 0x9000000au); /* adrp x10 */
	CHECK_EQ(o[4], 0xd61f0140u);               /* br x10 */
}

TEST(a_far_branch_that_leaves_the_function_may_still_use_the_x16_veneer)
{
	uint32_t o[16];

	/* b .+100 MiB relocated 1 GiB away, no scratch register */
	CHECK_EQ(relocate_via(0x14000000u | (uint32_t)(100 * MIB / 4), PC + GIB, 0, 0, 0, o), 16);
	CHECK_EQ(o[0], 0x58000050u); /* ldr x16, .+8 */
	CHECK_EQ(o[1], 0xd61f0200u); /* br x16 */
	CHECK_EQ((uint64_t)o[3] << 32 | o[2], PC + 100 * MIB);
}

TEST(relocate_without_scratch_keeps_its_near_trampoline_contract)
{
	uint8_t src[4], dst[64];
	struct np_reloc r = {src, 4, PC, dst, sizeof(dst), PC + GIB, PC + 4};

	a64_le(src, 0xb4000204); /* cbz: the veneer, as for a near trampoline's */
	r.resume_pc = 0;
	CHECK_EQ(ISA->relocate(&r), 20);
	r.resume_pc = PC + 4;
	CHECK_EQ(ISA->relocate(&r), -ERANGE); /* the jump back is a b */
}

/* ---- the table against objdump --------------------------------------------- */

TEST(use_table_matches_objdump_when_installed)
{
	uint32_t w[NUSES];
	char text[NUSES][128];
	int n;

	for (size_t i = 0; i < NUSES; i++)
		w[i] = uses[i].w;
	n = a64_objdump(w, NUSES, text);
	if (n < 0)
		printf("# skip: no aarch64-linux-gnu-as/objdump (make deps installs them)\n");
	for (int i = 0; i < n; i++)
		CHECK_STR(text[i], uses[i].text);
	if (n >= 0)
		CHECK_EQ((size_t)n, NUSES);
}

TEST_MAIN()

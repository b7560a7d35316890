/* SPDX-License-Identifier: MIT */
/*
 * The shared free-register analysis (src/arch/freereg.c), driven by
 * riscv64 code: each function is a list of words with its disassembly,
 * assembled by riscv64-linux-gnu-as, analysed at FN.
 */
#include <errno.h>

#include "arch/freereg.h"
#include "rv_test.h"

#define FN 0x10000ull
#define R(n) (1ull << (n))
enum { ZERO, RA, SP, GP, TP, T0, T1, T2, S0, S1, A0, A1, A2, A3, A4, A5, A6, A7,
       S2, S3, S4, S5, S6, S7, S8, S9, S10, S11, T3, T4, T5, T6 };

#define LI_T1_5      I32(0x00500313) /* li t1,5 */
#define LI_T1_1      I32(0x00100313) /* li t1,1 */
#define LI_T1_2      I32(0x00200313) /* li t1,2 */
#define ADD_A0_T1    I32(0x00650533) /* add a0,a0,t1 */
#define ADD_A0_A1    I32(0x00b50533) /* add a0,a0,a1 */
#define RET          I32(0x00008067) /* ret */
#define BEQZ_A0_12   I32(0x00050663) /* beqz a0,.+12 */
#define JAL_RA_FAR   I32(0x000010ef) /* jal .+0x1000 (outside) */
#define JAL_T0_FAR   I32(0x000012ef) /* jal t0,.+0x1000 (millicode) */
#define JR_A5        I32(0x00078067) /* jr a5 */
#define J_FAR        I32(0x0000106f) /* j .+0x1000 (a tail call) */
#define LI_T3_1      I32(0x00100e13) /* li t3,1 */
#define ADD_A0_T3    I32(0x01c50533) /* add a0,a0,t3 */
#define BNEZ_A0_M8   I32(0xfe051ce3) /* bnez a0,.-8 */
#define MV_A1_T1     I32(0x00030593) /* mv a1,t1 */
#define C_LI_T1_1    C16(0x4305)     /* li t1,1 (compressed) */
#define LI_T3_0      I32(0x00000e13) /* li t3,0 */

struct fn {
	struct rv_code code;
	struct np_freereg fr;
};

static void analyse(struct fn *f, const uint64_t *words, unsigned flags)
{
	rv_code(&f->code, words);
	CHECK_EQ(np_freereg_analyse(ISA, f->code.b, f->code.len, FN, flags, &f->fr), 0);
}

static bool is_free(struct fn *f, unsigned off, unsigned reg)
{
	return np_freereg_at(&f->fr, FN + off) >> reg & 1;
}

TEST(a_register_written_before_it_is_read_is_free)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){LI_T1_5, ADD_A0_T1, RET, 0}, 0);
	CHECK(is_free(&f, 0, T1));
	CHECK(!is_free(&f, 0, A0)); /* read */
	CHECK(!is_free(&f, 4, T1)); /* read at the add */
	CHECK(!is_free(&f, 0, T2)); /* untouched, live after the return */
	np_freereg_release(&f.fr);
}

TEST(a_conditional_branch_intersects_both_paths)
{
	struct fn f;

	/* beqz a0,L ; li t1,1 ; ret ; L: add a0,a0,t1 ; ret */
	analyse(&f, (const uint64_t[]){BEQZ_A0_12, LI_T1_1, RET, ADD_A0_T1, RET, 0}, 0);
	CHECK(!is_free(&f, 0, T1)); /* read on the taken path */
	CHECK(is_free(&f, 4, T1));
	np_freereg_release(&f.fr);
	/* beqz a0,L ; li t1,1 ; ret ; L: li t1,2 ; ret */
	analyse(&f, (const uint64_t[]){BEQZ_A0_12, LI_T1_1, RET, LI_T1_2, RET, 0}, 0);
	CHECK(is_free(&f, 0, T1)); /* written first on both paths */
	np_freereg_release(&f.fr);
}

TEST(a_call_writes_every_caller_saved_register_and_reads_the_arguments)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){JAL_RA_FAR, RET, 0}, 0);
	CHECK(is_free(&f, 0, T1));
	CHECK(is_free(&f, 0, T3));
	CHECK(is_free(&f, 0, T6));
	CHECK(is_free(&f, 0, RA)); /* the call writes it */
	CHECK(!is_free(&f, 0, A0));
	CHECK(!is_free(&f, 0, A7));
	CHECK(!is_free(&f, 0, T0)); /* millicode's link */
	CHECK(!is_free(&f, 0, T2)); /* the static chain */
	CHECK(!is_free(&f, 0, S1)); /* callee-saved */
	np_freereg_release(&f.fr);
}

TEST(a_call_through_t0_is_millicode_and_frees_nothing)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){JAL_T0_FAR, RET, 0}, 0);
	CHECK_EQ(np_freereg_at(&f.fr, FN), 0);
	np_freereg_release(&f.fr);
}

TEST(an_indirect_jump_keeps_every_register_live)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){JR_A5, 0}, 0);
	CHECK_EQ(np_freereg_at(&f.fr, FN), 0);
	np_freereg_release(&f.fr);
}

TEST(a_jump_out_of_the_function_keeps_every_register_live)
{
	struct fn f;

	/* a tail call, or a jump to the function's .cold part: cannot tell */
	analyse(&f, (const uint64_t[]){J_FAR, 0}, 0);
	CHECK_EQ(np_freereg_at(&f.fr, FN), 0);
	np_freereg_release(&f.fr);
}

TEST(at_a_function_entry_the_convention_frees_temporaries_but_t0_and_t2)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){ADD_A0_A1, RET, 0}, 0);
	CHECK_EQ(np_freereg_at(&f.fr, FN), 0); /* without the convention: nothing */
	np_freereg_release(&f.fr);
	analyse(&f, (const uint64_t[]){ADD_A0_A1, RET, 0}, NP_FREEREG_ENTRY);
	CHECK_EQ(np_freereg_at(&f.fr, FN), R(T1) | R(T3) | R(T4) | R(T5) | R(T6));
	np_freereg_release(&f.fr);
}

TEST(temporaries_the_function_never_wrote_stay_free_past_the_entry)
{
	struct fn f;

	/* li t3,1 ; add a0,a0,t3 ; mv a1,t1 ; ret */
	analyse(&f, (const uint64_t[]){LI_T3_1, ADD_A0_T3, MV_A1_T1, RET, 0}, NP_FREEREG_ENTRY);
	CHECK(!is_free(&f, 4, T3)); /* written, then read */
	CHECK(is_free(&f, 4, T4));
	CHECK(is_free(&f, 8, T4));
	CHECK(!is_free(&f, 8, T1)); /* read by the mv, whatever the convention */
	CHECK(!is_free(&f, 4, T2));
	np_freereg_release(&f.fr);
}

TEST(loops_reach_a_fixed_point)
{
	struct fn f;

	/* L: add a0,a0,t3 ; li t3,1 ; bnez a0,L ; li t3,0 ; ret */
	analyse(&f, (const uint64_t[]){ADD_A0_T3, LI_T3_1, BNEZ_A0_M8, LI_T3_0, RET, 0}, 0);
	CHECK(!is_free(&f, 0, T3));
	CHECK(is_free(&f, 4, T3));
	CHECK(!is_free(&f, 8, T3)); /* read again through the back edge only */
	CHECK(is_free(&f, 12, T3)); /* written before the return */
	np_freereg_release(&f.fr);
}

TEST(zero_sp_gp_tp_are_never_free)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){LI_T3_0, RET, 0}, NP_FREEREG_ENTRY);
	CHECK_EQ(np_freereg_at(&f.fr, FN) & (R(ZERO) | R(SP) | R(GP) | R(TP)), 0);
	np_freereg_release(&f.fr);
}

TEST(compressed_instructions_are_boundaries_and_mid_instruction_is_not)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){C_LI_T1_1, ADD_A0_T1, RET, 0}, 0);
	CHECK(is_free(&f, 0, T1));
	CHECK(!is_free(&f, 2, T1));
	CHECK_EQ(np_freereg_at(&f.fr, FN + 4), 0); /* inside the add */
	np_freereg_release(&f.fr);
}

TEST(free_over_a_range_is_the_intersection)
{
	struct fn f;

	/* li t1,5 ; add a0,a0,t1 ; ret, at the entry */
	analyse(&f, (const uint64_t[]){LI_T1_5, ADD_A0_T1, RET, 0}, NP_FREEREG_ENTRY);
	CHECK(np_freereg_over(&f.fr, FN, FN + 4) >> T1 & 1);
	CHECK(!(np_freereg_over(&f.fr, FN, FN + 8) >> T1 & 1));
	CHECK(np_freereg_over(&f.fr, FN, FN + 8) >> T4 & 1);
	np_freereg_release(&f.fr);
}

TEST(an_isa_without_reg_use_is_eopnotsupp)
{
	struct np_isa none = np_isa_riscv64;
	struct np_freereg fr;
	const uint8_t b[] = {0x67, 0x80, 0x00, 0x00};

	none.reg_use = NULL;
	CHECK_EQ(np_freereg_analyse(&none, b, 4, FN, 0, &fr), -EOPNOTSUPP);
}

TEST(reg_use_reads_and_writes_by_operand_kind)
{
	struct np_reg_use u;
	const uint8_t sd[] = {0x23, 0x34, 0x11, 0x00};   /* sd ra,8(sp) */
	const uint8_t fcvt[] = {0x53, 0x15, 0x05, 0xc2}; /* fcvt.w.d a0,fa0,rtz */
	const uint8_t fmvdx[] = {0x53, 0x05, 0x05, 0xf2}; /* fmv.d.x fa0,a0 */
	const uint8_t fadd[] = {0x53, 0xf5, 0xc5, 0x02}; /* fadd.d fa0,fa1,fa2 */

	CHECK_EQ(ISA->reg_use(sd, 4, FN, &u), 0);
	CHECK_EQ(u.read, R(RA) | R(SP));
	CHECK_EQ(u.written, 0);
	CHECK_EQ(ISA->reg_use(fcvt, 4, FN, &u), 0);
	CHECK_EQ(u.written, R(A0));
	CHECK_EQ(ISA->reg_use(fmvdx, 4, FN, &u), 0);
	CHECK_EQ(u.read, R(A0));
	CHECK_EQ(u.written, 0);
	CHECK_EQ(ISA->reg_use(fadd, 4, FN, &u), 0);
	CHECK_EQ(u.read | u.written, 0); /* f registers only */
}

TEST_MAIN()

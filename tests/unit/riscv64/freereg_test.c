/* SPDX-License-Identifier: MIT */
/*
 * The shared free-register analysis (src/arch/freereg.c), driven by
 * riscv64 code: each function is a list of words with its disassembly,
 * assembled by riscv64-linux-gnu-as, analysed at FN.
 */
#include <errno.h>

#include "arch/freereg.h"
#include "arch/regsum.h"
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
#define JALR_A5      I32(0x000780e7) /* jalr a5 (a call through a register) */
#define JR_T0        I32(0x00028067) /* jr t0 (millicode's return) */
#define AUIPC_RA_1   I32(0x00001097) /* auipc ra,0x1 */
#define JALR_RA_16   I32(0x010080e7) /* jalr 16(ra): with the auipc, call .+0x1010 */
#define LI_T4_1      I32(0x00100e93) /* li t4,1 */
#define ADD_A0_T4    I32(0x01d50533) /* add a0,a0,t4 */
#define JAL_RA_SELF  I32(0x000000ef) /* jal . (a recursive call, at FN) */

struct fn {
	struct rv_code code;
	struct np_freereg fr;
};

static void analyse_in(struct fn *f, const uint64_t *words, unsigned flags,
		       const struct np_freereg_env *env)
{
	rv_code(&f->code, words);
	CHECK_EQ(np_freereg_analyse(ISA, f->code.b, f->code.len, FN, flags, env, &f->fr), 0);
}

/* Nothing known of the module: the least that -fipa-ra allows. */
static void analyse(struct fn *f, const uint64_t *words, unsigned flags)
{
	analyse_in(f, words, flags, NULL);
}

/* A module where only the convention reaches the function and every
 * call keeps it (calls through the PLT). */
static uint64_t abi_kills(const void *cookie, uint64_t target)
{
	(void)cookie;
	(void)target;
	return ISA->call_clobbered;
}
static const struct np_freereg_env abi_only = {
	R(RA) | R(T0) | R(T1) | R(T2) | R(A2) | R(A3) | R(A4) | R(A5) | R(A6) | R(A7) | R(T3) |
		R(T4) | R(T5) | R(T6),
	abi_kills, NULL};

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

TEST(a_direct_call_may_leave_every_temporary_as_it_was)
{
	struct fn f;

	/* -fipa-ra: the caller may keep t1 across the call when the callee
	 * does not write it, and a return reads what the function keeps */
	analyse(&f, (const uint64_t[]){JAL_RA_FAR, RET, 0}, 0);
	CHECK(!is_free(&f, 0, T1));
	CHECK(!is_free(&f, 0, T3));
	CHECK(!is_free(&f, 0, T6));
	CHECK(is_free(&f, 0, RA)); /* the call writes it */
	CHECK(!is_free(&f, 0, A0));
	CHECK(!is_free(&f, 0, T0)); /* millicode's link */
	CHECK(!is_free(&f, 0, S1)); /* callee-saved */
	np_freereg_release(&f.fr);
}

TEST(a_call_through_the_plt_writes_every_caller_saved_register_and_reads_the_arguments)
{
	struct fn f;

	analyse_in(&f, (const uint64_t[]){JAL_RA_FAR, RET, 0}, 0, &abi_only);
	CHECK(is_free(&f, 0, T1));
	CHECK(is_free(&f, 0, T3));
	CHECK(is_free(&f, 0, T6));
	CHECK(is_free(&f, 0, RA));
	CHECK(!is_free(&f, 0, A0));
	CHECK(!is_free(&f, 0, A7));
	CHECK(!is_free(&f, 0, T0)); /* millicode's link */
	CHECK(!is_free(&f, 0, T2)); /* the static chain */
	CHECK(!is_free(&f, 0, S1)); /* callee-saved */
	np_freereg_release(&f.fr);
}

TEST(a_call_through_a_register_keeps_the_convention)
{
	struct fn f;

	/* no compiler knows whom it calls: every caller-saved one is lost */
	analyse(&f, (const uint64_t[]){JALR_A5, RET, 0}, 0);
	CHECK(is_free(&f, 0, T1));
	CHECK(is_free(&f, 0, T6));
	CHECK(!is_free(&f, 0, A5)); /* the target */
	CHECK(!is_free(&f, 0, A0));
	np_freereg_release(&f.fr);
}

TEST(a_recursive_call_keeps_the_convention)
{
	struct fn f;

	/* GCC has no clobber set of the function it is compiling */
	analyse(&f, (const uint64_t[]){JAL_RA_SELF, RET, 0}, 0);
	CHECK(is_free(&f, 0, T1));
	CHECK(is_free(&f, 0, T3));
	np_freereg_release(&f.fr);
}

TEST(an_unrelaxed_auipc_jalr_call_is_a_direct_call)
{
	struct fn f;

	analyse(&f, (const uint64_t[]){AUIPC_RA_1, JALR_RA_16, RET, 0}, 0);
	CHECK(!is_free(&f, 0, T1)); /* may be kept across it */
	CHECK(!is_free(&f, 4, T1));
	np_freereg_release(&f.fr);
	analyse_in(&f, (const uint64_t[]){AUIPC_RA_1, JALR_RA_16, RET, 0}, 0, &abi_only);
	CHECK(is_free(&f, 4, T1)); /* the module says it goes through the PLT */
	np_freereg_release(&f.fr);
}

TEST(a_return_reads_every_register_the_function_does_not_write)
{
	struct fn f;

	/* li t4,1 ; add a0,a0,t4 ; ret: t4 is in its clobber set, t3 not */
	analyse(&f, (const uint64_t[]){LI_T4_1, ADD_A0_T4, RET, 0}, 0);
	CHECK(is_free(&f, 0, T4));
	CHECK(!is_free(&f, 4, T4)); /* read by the add */
	CHECK(is_free(&f, 8, T4));
	CHECK(!is_free(&f, 8, T3));
	CHECK(!is_free(&f, 8, A0)); /* the result */
	CHECK(!is_free(&f, 8, A1)); /* perhaps a result too */
	np_freereg_release(&f.fr);
	/* reached only through the convention: every temporary is dead */
	analyse_in(&f, (const uint64_t[]){LI_T4_1, ADD_A0_T4, RET, 0}, 0, &abi_only);
	CHECK(is_free(&f, 8, T3));
	CHECK(is_free(&f, 8, A2));
	CHECK(!is_free(&f, 8, A1));
	np_freereg_release(&f.fr);
}

TEST(a_return_through_millicode_s_link_keeps_everything)
{
	struct fn f;

	analyse_in(&f, (const uint64_t[]){LI_T4_1, JR_T0, 0}, 0, &abi_only);
	CHECK_EQ(np_freereg_at(&f.fr, FN + 4), 0);
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

	/* add a0,a0,a1 ; j .+0x1000: a tail call, after which all is live */
	analyse_in(&f, (const uint64_t[]){ADD_A0_A1, J_FAR, 0}, 0, &abi_only);
	CHECK_EQ(np_freereg_at(&f.fr, FN), 0); /* without the convention: nothing */
	np_freereg_release(&f.fr);
	analyse_in(&f, (const uint64_t[]){ADD_A0_A1, J_FAR, 0}, NP_FREEREG_ENTRY, &abi_only);
	CHECK_EQ(np_freereg_at(&f.fr, FN), R(T1) | R(T3) | R(T4) | R(T5) | R(T6));
	np_freereg_release(&f.fr);
}

TEST(with_callers_in_the_module_the_entry_frees_only_what_the_function_writes)
{
	struct fn f;

	/* a local caller may keep t1, t3..t6 across a call to a function
	 * that writes none of them */
	analyse(&f, (const uint64_t[]){ADD_A0_A1, RET, 0}, NP_FREEREG_ENTRY);
	CHECK_EQ(np_freereg_at(&f.fr, FN), 0);
	np_freereg_release(&f.fr);
	/* li t4,1 ; add a0,a0,t4 ; mv a1,t1 ; ret: t4 is no caller's */
	analyse(&f, (const uint64_t[]){LI_T4_1, ADD_A0_T4, MV_A1_T1, RET, 0}, NP_FREEREG_ENTRY);
	CHECK_EQ(np_freereg_at(&f.fr, FN), R(T4) | R(A1)); /* a1: written before read */
	CHECK(is_free(&f, 8, T4));
	CHECK(!is_free(&f, 8, T3));
	np_freereg_release(&f.fr);
}

TEST(temporaries_the_function_never_wrote_stay_free_past_the_entry)
{
	struct fn f;

	/* li t3,1 ; add a0,a0,t3 ; mv a1,t1 ; j .+0x1000 */
	analyse_in(&f, (const uint64_t[]){LI_T3_1, ADD_A0_T3, MV_A1_T1, J_FAR, 0},
		   NP_FREEREG_ENTRY, &abi_only);
	CHECK(!is_free(&f, 4, T3)); /* written, then read */
	CHECK(is_free(&f, 4, T4));
	CHECK(is_free(&f, 8, T4));
	CHECK(!is_free(&f, 8, T1)); /* read by the mv, whatever the convention */
	CHECK(!is_free(&f, 4, T2)); /* the static chain */
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
	analyse_in(&f, (const uint64_t[]){LI_T1_5, ADD_A0_T1, RET, 0}, NP_FREEREG_ENTRY,
		   &abi_only);
	CHECK(np_freereg_over(&f.fr, FN, FN + 4) >> T1 & 1);
	CHECK(!(np_freereg_over(&f.fr, FN, FN + 8) >> T1 & 1));
	CHECK(np_freereg_over(&f.fr, FN, FN + 8) >> T4 & 1);
	np_freereg_release(&f.fr);
}

/* ---- the module's summaries (src/arch/regsum.c) --------------------------- */

/* A module of six functions, 0x100 bytes apart from FN. */
#define CALLER  (FN + 0x000)
#define LEAF    (FN + 0x100)
#define ORPHAN  (FN + 0x200)
#define MIDDLE  (FN + 0x300)
#define VIAPLT  (FN + 0x400)
#define FARAWAY (FN + 0x500)
#define PLT     (FN + 0x800)

static const uint64_t caller_fn[] = {
	LI_T3_1,          /* li t3,1 */
	I32(0x0fc000ef),  /* jal leaf */
	ADD_A0_T3,        /* add a0,a0,t3: t3 kept across the call */
	RET, 0};
static const uint64_t leaf_fn[] = {LI_T4_1, ADD_A0_T4, RET, 0};
static const uint64_t orphan_fn[] = {ADD_A0_A1, RET, 0};
static const uint64_t middle_fn[] = {
	I32(0xe01ff0ef),  /* jal leaf */
	RET, 0};
static const uint64_t viaplt_fn[] = {
	I32(0x400000ef),  /* jal .+0x400: a PLT entry */
	RET, 0};
static const uint64_t faraway_fn[] = {
	I32(0x400000ef),  /* jal .+0x400: neither a function nor a stub */
	RET, 0};

static void add_fn(struct np_regsum *s, const uint64_t *words, uint64_t pc)
{
	struct rv_code c;

	rv_code(&c, words);
	CHECK_EQ(np_regsum_add(s, c.b, c.len, pc), 0);
}

static struct np_regsum *module(bool with_faraway)
{
	struct np_regsum *s = np_regsum_new(ISA);

	CHECK(s != NULL);
	add_fn(s, leaf_fn, LEAF); /* in any order */
	add_fn(s, caller_fn, CALLER);
	add_fn(s, orphan_fn, ORPHAN);
	add_fn(s, middle_fn, MIDDLE);
	add_fn(s, viaplt_fn, VIAPLT);
	if (with_faraway)
		add_fn(s, faraway_fn, FARAWAY);
	CHECK_EQ(np_regsum_add_stubs(s, PLT, PLT + 0x100), 0);
	CHECK_EQ(np_regsum_finish(s), 0);
	return s;
}

/* np_freereg_at() of the function of the module at pc (its entry). */
static uint64_t free_in(const struct np_regsum *s, const uint64_t *words, uint64_t pc,
			uint64_t at)
{
	struct np_freereg_env env;
	struct np_freereg fr;
	struct rv_code c;
	uint64_t r;

	np_regsum_env(s, pc, true, &env);
	rv_code(&c, words);
	CHECK_EQ(np_freereg_analyse(ISA, c.b, c.len, pc, NP_FREEREG_ENTRY, &env, &fr), 0);
	r = np_freereg_at(&fr, at);
	np_freereg_release(&fr);
	return r;
}

TEST(a_function_called_directly_frees_at_its_entry_only_what_it_writes)
{
	struct np_regsum *s = module(false);

	/* caller keeps t3 across `jal leaf`: leaf writes t4 only */
	CHECK_EQ(free_in(s, leaf_fn, LEAF, LEAF), R(T4));
	CHECK_EQ(free_in(s, leaf_fn, LEAF, LEAF + 8) & (R(T3) | R(T1)), 0);
	np_regsum_free(s);
}

TEST(a_function_no_code_of_the_module_calls_directly_keeps_the_convention)
{
	struct np_regsum *s = module(false);
	struct np_regsum_stats st;

	/* by the entry convention, and by liveness: it reads a0, a1 only */
	CHECK_EQ(free_in(s, orphan_fn, ORPHAN, ORPHAN) & (R(T1) | R(T3) | R(T4) | R(T5) | R(T6)),
		 R(T1) | R(T3) | R(T4) | R(T5) | R(T6));
	/* and at its return every caller-saved register but the result */
	CHECK(free_in(s, orphan_fn, ORPHAN, ORPHAN + 4) & R(A2));
	CHECK(!(free_in(s, orphan_fn, ORPHAN, ORPHAN + 4) & R(A1)));
	np_regsum_stats(s, &st);
	CHECK_EQ(st.functions, 5);
	CHECK_EQ(st.entered, 1); /* leaf */
	CHECK_EQ(st.unknown_targets, 0);
	np_regsum_free(s);
}

TEST(a_direct_call_kills_what_its_callee_and_the_callee_s_callees_write)
{
	struct np_regsum *s = module(false);

	/* before `jal leaf` in caller: t4 is leaf's, t3 is read after it */
	CHECK(free_in(s, caller_fn, CALLER, CALLER + 4) & R(T4));
	CHECK(!(free_in(s, caller_fn, CALLER, CALLER + 4) & R(T3)));
	/* middle's set holds leaf's: t4 dead at middle's return */
	CHECK(free_in(s, middle_fn, MIDDLE, MIDDLE + 4) & R(T4));
	np_regsum_free(s);
}

TEST(a_call_into_the_plt_kills_every_caller_saved_register)
{
	struct np_regsum *s = module(false);

	CHECK(free_in(s, viaplt_fn, VIAPLT, VIAPLT) & R(T5));
	np_regsum_free(s);
}

TEST(a_direct_transfer_to_unknown_code_makes_every_function_called_directly)
{
	struct np_regsum *s = module(true);
	struct np_regsum_stats st;

	np_regsum_stats(s, &st);
	CHECK_EQ(st.unknown_targets, 1);
	/* orphan may be reached through it: its entry frees nothing */
	CHECK_EQ(free_in(s, orphan_fn, ORPHAN, ORPHAN), 0);
	np_regsum_free(s);
}

TEST(code_no_symbol_or_fde_bounds_counts_as_a_direct_caller)
{
	struct np_regsum *s = np_regsum_new(ISA);
	struct np_regsum_stats st;
	struct rv_code c;

	CHECK(s != NULL);
	add_fn(s, orphan_fn, ORPHAN);
	/* at FN + 0x300, outside every function: jal .-0x100 (orphan) */
	rv_code(&c, (const uint64_t[]){I32(0xf01ff0ef), RET, 0});
	CHECK_EQ(np_regsum_add_code(s, c.b, c.len, FN + 0x300), 0);
	CHECK_EQ(np_regsum_finish(s), 0);
	np_regsum_stats(s, &st);
	CHECK_EQ(st.functions, 1);
	CHECK_EQ(st.entered, 1);
	CHECK_EQ(free_in(s, orphan_fn, ORPHAN, ORPHAN), 0);
	np_regsum_free(s);
}

TEST(an_isa_without_reg_use_is_eopnotsupp)
{
	struct np_isa none = np_isa_riscv64;
	struct np_freereg fr;
	const uint8_t b[] = {0x67, 0x80, 0x00, 0x00};

	none.reg_use = NULL;
	CHECK_EQ(np_freereg_analyse(&none, b, 4, FN, 0, NULL, &fr), -EOPNOTSUPP);
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

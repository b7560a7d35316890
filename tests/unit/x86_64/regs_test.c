/* SPDX-License-Identifier: MIT */
/* Registers read and written (the reg_use hook), and the free-register
 * analysis on x86-64 code. */
#include "arch/freereg.h"
#include "x86_test.h"

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11 };
#define R(n) (1ull << (n))

static struct np_reg_use use_of(const uint8_t *b, size_t n)
{
	struct np_reg_use u = {~0ull, ~0ull};

	CHECK_EQ(ISA->reg_use(b, n, PC, &u), 0);
	return u;
}

TEST(a_full_register_move_reads_the_source_and_writes_the_destination)
{
	const uint8_t mov[] = {0x48, 0x89, 0xf8}; /* mov %rdi,%rax */
	struct np_reg_use u = use_of(mov, sizeof(mov));

	CHECK_EQ(u.read, R(RDI));
	CHECK_EQ(u.written, R(RAX));
}

TEST(a_32_bit_write_kills_the_register_but_a_byte_write_does_not)
{
	const uint8_t movl[] = {0x41, 0xba, 0x01, 0, 0, 0}; /* mov $0x1,%r10d */
	const uint8_t movb[] = {0x40, 0x88, 0xf8};          /* mov %dil,%al */

	CHECK_EQ(use_of(movl, sizeof(movl)).written, R(R10));
	CHECK_EQ(use_of(movb, sizeof(movb)).written, 0);
	CHECK_EQ(use_of(movb, sizeof(movb)).read, R(RDI) | R(RAX));
}

TEST(xor_of_a_register_with_itself_reads_nothing)
{
	const uint8_t x[] = {0x31, 0xc0}; /* xor %eax,%eax */

	CHECK_EQ(use_of(x, sizeof(x)).read, 0);
	CHECK_EQ(use_of(x, sizeof(x)).written, R(RAX));
}

TEST(a_conditional_move_is_no_write)
{
	const uint8_t cmov[] = {0x48, 0x0f, 0x44, 0xc1}; /* cmove %rcx,%rax */
	struct np_reg_use u = use_of(cmov, sizeof(cmov));

	CHECK_EQ(u.written, 0);
	CHECK(u.read & R(RCX));
}

TEST(address_registers_are_read_and_push_touches_rsp)
{
	const uint8_t lea[] = {0x48, 0x8d, 0x54, 0x9c, 0x08}; /* lea 0x8(%rsp,%rbx,4),%rdx */
	const uint8_t push[] = {0x53};                        /* push %rbx */

	CHECK_EQ(use_of(lea, sizeof(lea)).read, R(RSP) | R(RBX));
	CHECK_EQ(use_of(lea, sizeof(lea)).written, R(RDX));
	CHECK(use_of(push, sizeof(push)).read & R(RBX));
	CHECK(use_of(push, sizeof(push)).read & R(RSP));
}

/* Only the convention reaches the function, and calls keep it. */
static uint64_t abi_kills(const void *cookie, uint64_t target)
{
	(void)cookie;
	(void)target;
	return ISA->call_clobbered;
}
static const struct np_freereg_env abi_only = {
	R(RAX) | R(RCX) | R(RDX) | R(RSI) | R(RDI) | R(R8) | R(R9) | R(R10) | R(R11), abi_kills,
	NULL};

static uint64_t free_at(const uint8_t *fn, size_t len, unsigned flags,
			const struct np_freereg_env *env, uint64_t off)
{
	struct np_freereg fr;
	uint64_t r;

	CHECK_EQ(np_freereg_analyse(ISA, fn, len, PC, flags, env, &fr), 0);
	r = np_freereg_at(&fr, PC + off);
	np_freereg_release(&fr);
	return r;
}

TEST(at_an_x86_entry_r11_is_free_but_not_rax_nor_r10)
{
	/* mov %rdi,%rax ; jmp .+0x1000 (a tail call: all live after it) */
	const uint8_t fn[] = {0x48, 0x89, 0xf8, 0xe9, 0xfb, 0x0f, 0x00, 0x00};

	CHECK_EQ(free_at(fn, sizeof(fn), NP_FREEREG_ENTRY, &abi_only, 0), R(RAX) | R(R11));
	CHECK_EQ(free_at(fn, sizeof(fn), NP_FREEREG_ENTRY, &abi_only, 3), R(R11));
}

TEST(with_callers_in_the_module_r11_is_free_at_an_entry_only_if_written)
{
	/* mov %rdi,%rax ; ret: a local caller may keep r11 across the call */
	const uint8_t fn[] = {0x48, 0x89, 0xf8, 0xc3};
	/* xor %r11d,%r11d ; mov %rdi,%rax ; ret */
	const uint8_t writes[] = {0x45, 0x31, 0xdb, 0x48, 0x89, 0xf8, 0xc3};

	CHECK_EQ(free_at(fn, sizeof(fn), NP_FREEREG_ENTRY, NULL, 0), R(RAX));
	CHECK_EQ(free_at(fn, sizeof(fn), NP_FREEREG_ENTRY, NULL, 3), 0);
	CHECK(free_at(writes, sizeof(writes), NP_FREEREG_ENTRY, NULL, 6) & R(R11));
	CHECK(!(free_at(writes, sizeof(writes), 0, NULL, 6) & (R(RAX) | R(RDX)))); /* results */
}

TEST(before_an_x86_call_through_the_plt_the_caller_saved_registers_but_the_arguments_are_free)
{
	/* call .+0x1000 ; ret */
	const uint8_t fn[] = {0xe8, 0x00, 0x10, 0x00, 0x00, 0xc3};

	CHECK_EQ(free_at(fn, sizeof(fn), 0, &abi_only, 0), R(R11));
}

TEST(before_a_direct_x86_call_to_a_local_function_nothing_is_free)
{
	/* call .+0x1000 ; ret: the callee may leave rcx, r8.. as they were */
	const uint8_t fn[] = {0xe8, 0x00, 0x10, 0x00, 0x00, 0xc3};
	/* call *%rax ; ret: through a register, the convention */
	const uint8_t ind[] = {0xff, 0xd0, 0xc3};

	CHECK_EQ(free_at(fn, sizeof(fn), 0, NULL, 0), 0);
	CHECK_EQ(free_at(ind, sizeof(ind), 0, NULL, 0), R(R11));
}

TEST_MAIN()

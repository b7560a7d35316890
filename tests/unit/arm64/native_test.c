/* SPDX-License-Identifier: MIT */
/*
 * The arm64 relocator and simulator against the machine itself: built
 * for aarch64 and run natively or under qemu-aarch64 (make check does the
 * latter on other hosts).
 *
 * Each instruction under test is written at A, in the middle of a window
 * of landing words: every other word of the window is `b stub_k`, and
 * stub_k is `movz x16, #k; b np_a64_exit`, so wherever control goes
 * (fall-through, a branch target, a register target) the harness learns
 * where, with the whole register file (native_run.S). Then, for several
 * register files:
 *
 *   - the instruction runs at A: the reference;
 *   - relocate() copies it to A + d (d from 4 KiB to 100 MiB, both ways)
 *     with the jump back to A + 4, and that copy runs: same registers,
 *     q0..q7, landing and stack; b and bl also 300 MiB away, through the
 *     x16 veneer;
 *   - when SIMULATED, simulate() runs on the register file and must give
 *     the same registers and the landing address as pc;
 *   - the TRAP strategy for real: brk at A, one SIGTRAP, whose handler
 *     either simulates the instruction on the ucontext or sends pc to an
 *     out-of-line copy that jumps back; same registers, landing and stack,
 *     exactly one signal per run, and the kernel reports the brk's own
 *     address as pc (unlike x86-64's int3).
 *
 * x16 carries the landing number, so it is the one register not compared
 * (relocate.c may use it as scratch at a call anyway).
 */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "a64_test.h"

#define MIB        (1ull << 20)
#define ARENA      (512 * MIB)
#define WINDOW     256 /* words on each side of A */
#define STACK_SIZE 4096

extern struct np_regs np_a64_out; /* native_run.S */
extern uint8_t np_a64_out_q[128]; /* q0..q7 */
void np_a64_run(const struct np_regs *in, uint64_t code);
void np_a64_exit(void);

static uint8_t *arena;
static uint64_t A, stubs;
static uint8_t stack[STACK_SIZE] __attribute__((aligned(16)));
static uint8_t stack_ref[STACK_SIZE];
static uint8_t q_ref[128];

static void put_word(uint64_t at, uint32_t w)
{
	a64_le((uint8_t *)(uintptr_t)at, w);
	__builtin___clear_cache((char *)(uintptr_t)at, (char *)(uintptr_t)at + 4);
}

static uint32_t b_to(uint64_t from, uint64_t to)
{
	return 0x14000000u | ((uint32_t)((int64_t)(to - from) >> 2) & 0x3ffffffu);
}

/* The arena sits 16 MiB above the harness, so that the stubs at its start
 * reach np_a64_exit with a b; A is 64 MiB further, so that the landing
 * words reach the stubs. */
static void setup(void)
{
	uint64_t exit_at = (uint64_t)(uintptr_t)np_a64_exit;
	void *hint = (void *)(uintptr_t)((exit_at & ~(MIB - 1)) + 16 * MIB);

	arena = mmap(hint, ARENA, PROT_READ | PROT_WRITE | PROT_EXEC,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(arena == hint);
	stubs = (uint64_t)(uintptr_t)arena;
	A = stubs + 64 * MIB;
	for (int k = 0; k < 2 * WINDOW + 1; k++) {
		uint64_t stub = stubs + 8 * (uint64_t)k;
		uint64_t land = A + 4 * (uint64_t)(k - WINDOW);

		put_word(stub, 0xd2800010u | (uint32_t)k << 5); /* movz x16, #k */
		put_word(stub + 4, b_to(stub + 4, exit_at));
		put_word(land, b_to(land, stub));
	}
}

static uint64_t landing(uint64_t k)
{
	return A + 4 * k - 4 * WINDOW;
}

/* Run the code at 'code' from 'in'; the stack starts from a known fill. */
static struct np_regs run(const struct np_regs *in, uint64_t code)
{
	memset(stack, 0x5a, sizeof(stack));
	np_a64_run(in, code);
	return np_a64_out;
}

static void compare(const struct np_regs *got, const struct np_regs *want, uint32_t w,
		    const char *how)
{
	bool same = got->flags == want->flags;

	for (int i = 0; i < 32; i++)
		same &= i == 16 || got->gpr[i] == want->gpr[i];
	if (!same) {
		fprintf(stderr, "0x%08x %s differs:\n", w, how);
		for (int i = 0; i < 32; i++)
			if (i != 16 && got->gpr[i] != want->gpr[i])
				fprintf(stderr, "  x%d 0x%llx != 0x%llx\n", i,
					(unsigned long long)got->gpr[i],
					(unsigned long long)want->gpr[i]);
	}
	CHECK(same);
}

static struct np_regs inputs(unsigned seed)
{
	static const uint64_t nzcv[] = {0, 0x40000000, 0x80000000, 0x20000000, 0x10000000,
					0x90000000, 0x60000000, 0xf0000000};
	struct np_regs r = {0};
	uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);

	for (int i = 0; i < 31; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r.gpr[i] = x;
	}
	if (seed & 1)
		r.gpr[0] = 0;
	if (seed & 2)
		r.gpr[1] = 1ull << 32;
	r.gpr[3] = A + 0x80;  /* register targets inside the window */
	r.gpr[8] = A + 0x40;
	r.gpr[30] = A - 0x20;
	r.gpr[31] = (uint64_t)(uintptr_t)stack + STACK_SIZE;
	r.flags = nzcv[seed % 8];
	return r;
}

static int mem_read(void *c, uint64_t addr, void *dst, size_t len)
{
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}

static int mem_write(void *c, uint64_t addr, const void *src, size_t len)
{
	memcpy((void *)(uintptr_t)addr, src, len);
	return 0;
}

static void check_simulated(uint32_t w, const struct np_regs *in, const struct np_regs *ref)
{
	struct np_mem mem = {mem_read, mem_write, NULL};
	struct np_regs r = *in, want = *ref;
	struct np_insn insn;
	uint8_t b[4];
	uint64_t sp = ref->gpr[31], top = (uint64_t)(uintptr_t)stack + STACK_SIZE;

	a64_le(b, w);
	CHECK_EQ(ISA->decode(b, 4, A, &insn), 0);
	if (insn.cls != NP_INSN_SIMULATED)
		return;
	memset(stack, 0x5a, sizeof(stack));
	r.pc = A;
	CHECK_EQ(ISA->simulate(&insn, &r, &mem), 0);
	CHECK_EQ(r.pc, landing(ref->gpr[16]));
	want.flags = in->flags;
	CHECK_EQ(ref->flags, in->flags);
	compare(&r, &want, w, "simulated");
	CHECK(memcmp(stack + (sp - (top - STACK_SIZE)), stack_ref + (sp - (top - STACK_SIZE)),
		     top - sp) == 0);
}

static void check_relocated(uint32_t w, const struct np_regs *in, const struct np_regs *ref,
			    int64_t d, uint64_t resume)
{
	uint8_t src[4], *dst = (uint8_t *)(uintptr_t)(A + (uint64_t)d);
	struct np_reloc rl = {src, 4, A, dst, 256, A + (uint64_t)d, resume};
	struct np_regs got;
	int n;

	a64_le(src, w);
	n = ISA->relocate(&rl);
	CHECK(n > 0);
	if (n <= 0)
		return;
	__builtin___clear_cache((char *)dst, (char *)dst + n);
	got = run(in, A + (uint64_t)d);
	CHECK_EQ(got.gpr[16], ref->gpr[16]);
	compare(&got, ref, w, "relocated");
	CHECK(memcmp(stack, stack_ref, sizeof(stack)) == 0);
	CHECK(memcmp(np_a64_out_q, q_ref, sizeof(q_ref)) == 0);
}

static struct {
	struct np_insn insn;
	uint64_t slot; /* the out-of-line copy, or 0: simulate */
	unsigned hits;
	bool pc_at_brk;
	int err;
} trap;

static void on_sigtrap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct np_mem mem = {mem_read, mem_write, NULL};
	struct np_regs r;

	trap.hits++;
	trap.pc_at_brk = uc->uc_mcontext.pc == trap.insn.pc;
	if (trap.slot) {
		uc->uc_mcontext.pc = trap.slot;
		return;
	}
	for (int i = 0; i < 31; i++)
		r.gpr[i] = uc->uc_mcontext.regs[i];
	r.gpr[31] = uc->uc_mcontext.sp;
	r.pc = uc->uc_mcontext.pc;
	r.flags = uc->uc_mcontext.pstate;
	trap.err = ISA->simulate(&trap.insn, &r, &mem);
	for (int i = 0; i < 31; i++)
		uc->uc_mcontext.regs[i] = r.gpr[i];
	uc->uc_mcontext.sp = r.gpr[31];
	uc->uc_mcontext.pc = r.pc;
	uc->uc_mcontext.pstate = r.flags;
}

/* The handler runs on its own stack: the guest stack is 4 KiB, less than
 * an arm64 signal frame. */
static void trap_setup(void)
{
	static uint8_t alt[64 * 1024];
	stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt)};
	struct sigaction sa = {.sa_sigaction = on_sigtrap, .sa_flags = SA_SIGINFO | SA_ONSTACK};

	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	CHECK_EQ(sigaction(SIGTRAP, &sa, NULL), 0);
}

static void check_trapped(uint32_t w, const struct np_regs *in, const struct np_regs *ref,
			  bool out_of_line)
{
	uint8_t src[4], brk[4];
	uint64_t slot = A + 2 * MIB;
	struct np_reloc rl = {src, 4, A, (uint8_t *)(uintptr_t)slot, 256, slot, A + 4};
	struct np_regs got;

	a64_le(src, w);
	CHECK_EQ(ISA->decode(src, 4, A, &trap.insn), 0);
	if (!out_of_line && trap.insn.cls != NP_INSN_SIMULATED)
		return;
	trap.slot = 0;
	if (out_of_line) {
		int n = ISA->relocate(&rl);

		CHECK(n > 0);
		__builtin___clear_cache((char *)(uintptr_t)slot, (char *)(uintptr_t)slot + 256);
		trap.slot = slot;
	}
	trap.hits = 0;
	trap.err = 0;
	ISA->emit_trap(brk);
	put_word(A, a64_at(brk));
	got = run(in, A);
	put_word(A, w);
	CHECK_EQ(trap.hits, 1);
	CHECK(trap.pc_at_brk);
	CHECK_EQ(trap.err, 0);
	CHECK_EQ(got.gpr[16], ref->gpr[16]);
	compare(&got, ref, w, out_of_line ? "trapped, out of line" : "trapped, simulated");
	CHECK(memcmp(stack, stack_ref, sizeof(stack)) == 0);
	CHECK(memcmp(np_a64_out_q, q_ref, sizeof(q_ref)) == 0);
}

static const int64_t distances[] = {4096, -8192, 2 * (int64_t)MIB, -40 * (int64_t)MIB,
				    100 * (int64_t)MIB};

static void check(uint32_t w)
{
	if (!arena) {
		setup();
		trap_setup();
	}
	put_word(A, w);
	for (unsigned seed = 0; seed < 8; seed++) {
		struct np_regs in = inputs(seed), ref = run(&in, A);

		memcpy(stack_ref, stack, sizeof(stack));
		memcpy(q_ref, np_a64_out_q, sizeof(q_ref));
		check_simulated(w, &in, &ref);
		check_trapped(w, &in, &ref, false);
		check_trapped(w, &in, &ref, true);
		for (size_t i = 0; i < sizeof(distances) / sizeof(distances[0]); i++)
			check_relocated(w, &in, &ref, distances[i], A + 4);
		/* beyond b's reach: the x16 veneer, for forms that never fall through */
		if ((w & 0x7c000000u) == 0x14000000u)
			check_relocated(w, &in, &ref, 300 * (int64_t)MIB, 0);
	}
	put_word(A, b_to(A, stubs + 8 * WINDOW));
}

TEST(branches_land_where_the_machine_lands)
{
	check(0x14000010); /* b .+0x40 */
	check(0x17fffff0); /* b .-0x40 */
	check(0x94000008); /* bl .+0x20 */
	check(0x97fffff8); /* bl .-0x20 */
	for (uint32_t c = 0; c < 16; c++) {
		check(0x54000080u | c);       /* b.<c> .+0x10 */
		check(0x54fffe00u | c);       /* b.<c> .-0x40 */
	}
}

TEST(compare_and_test_branches_land_where_the_machine_lands)
{
	check(0x34000080); /* cbz w0, .+0x10 */
	check(0xb4000080); /* cbz x0, .+0x10 */
	check(0x35fffe01); /* cbnz w1, .-0x40 */
	check(0xb5000081); /* cbnz x1, .+0x10 */
	check(0x36000080); /* tbz w0, #0, .+0x10 */
	check(0xb7080081); /* tbnz x1, #33, .+0x10 */
	check(0x37f80082); /* tbnz w2, #31, .+0x10 */
	check(0xb6fffe05); /* tbz x5, #63, .-0x40 */
}

TEST(register_branches_land_where_the_machine_lands)
{
	check(0xd65f03c0); /* ret */
	check(0xd65f0060); /* ret x3 */
	check(0xd61f0100); /* br x8 */
	check(0xd63f0100); /* blr x8 */
	check(0xd63f03c0); /* blr x30 */
	check(0xd63f0060); /* blr x3 */
}

TEST(pc_relative_data_reads_the_same_addresses)
{
	check(0x10000123); /* adr x3, .+0x24 */
	check(0x70fff805); /* adr x5, .-0xfd */
	check(0xb0000007); /* adrp x7, .+1 page */
	check(0x90ffffe9); /* adrp x9, .-4 pages */
	check(0x580000c2); /* ldr x2, .+0x18 */
	check(0x18ffff44); /* ldr w4, .-0x18 */
	check(0x98000046); /* ldrsw x6, .+8 */
	check(0x9c000085); /* ldr q5, .+0x10: through x16 saved on the stack */
	check(0x5cffff83); /* ldr d3, .-0x10 */
	check(0x1c000041); /* ldr s1, .+8 */
	check(0xd8000080); /* prfm pldl1keep, .+0x10 */
}

TEST(frame_setup_stores_what_the_machine_stores)
{
	check(0xa9bf7bfd); /* stp x29, x30, [sp, #-16]! */
	check(0x29bf07e0); /* stp w0, w1, [sp, #-8]! */
	check(0xa9bc53f3); /* stp x19, x20, [sp, #-64]! */
	check(0xd503201f); /* nop */
	check(0x910003fd); /* mov x29, sp */
	check(0x91000420); /* add x0, x1, #1 */
	check(0xeb01001f); /* cmp x0, x1 */
}

TEST_MAIN()

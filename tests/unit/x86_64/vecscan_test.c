/* SPDX-License-Identifier: MIT */
/*
 * vector_state_used(): hand-assembled handlers at 0x401000 in a fake
 * memory (bytes from GNU as, listings beside them from objdump), pointer
 * slots at 0x401800, then the real scan on functions of this very test.
 */
#include <errno.h>
#include <unistd.h>

#include "x86_test.h"

#define SLOT (PC + 0x800)

static struct fake_mem mem;

/* Clear the fake memory; then put() places code or data in it. */
static void reset(void)
{
	fake_mem_init(&mem, PC);
}

static void put(uint64_t addr, const uint8_t *b, size_t n)
{
	struct np_mem ops = fake_mem_ops(&mem);

	CHECK_EQ(ops.write(ops.cookie, addr, b, n), 0);
}

#define PUT(addr, ...) put(addr, (const uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__}))

static int scan(void)
{
	struct np_mem ops = fake_mem_ops(&mem);

	return ISA->vector_state_used(PC, &ops);
}

/* ------------------------------------------------------------------ */
/* Provably vector-free                                                */

TEST(ret_alone_is_vector_free)
{
	reset();
	PUT(PC, 0xc3); /* 401000 ret */
	CHECK_EQ(scan(), 0);
}

TEST(counting_handlers_are_vector_free)
{
	reset();
	PUT(PC, 0x48, 0xff, 0x06, /* 401000 incq (%rsi) */
	    0xc3);                /* 401003 ret */
	CHECK_EQ(scan(), 0);

	reset();
	PUT(PC, 0x48, 0x83, 0x06, 0x01, /* 401000 addq $0x1,(%rsi) */
	    0xc3);                      /* 401004 ret */
	CHECK_EQ(scan(), 0);
}

TEST(loop_with_backward_jcc_is_vector_free)
{
	reset();
	PUT(PC, 0x31, 0xc0,             /* 401000 xor %eax,%eax */
	    0x48, 0xff, 0x06,           /* 401002 incq (%rsi) */
	    0x48, 0x83, 0xc0, 0x01,     /* 401005 add $0x1,%rax */
	    0x48, 0x39, 0xf8,           /* 401009 cmp %rdi,%rax */
	    0x72, 0xf4,                 /* 40100c jb 0x401002 */
	    0xc3);                      /* 40100e ret */
	CHECK_EQ(scan(), 0);
}

TEST(direct_call_to_vector_free_code_is_vector_free)
{
	reset();
	PUT(PC, 0x48, 0x83, 0xec, 0x08,     /* 401000 sub $0x8,%rsp */
	    0xe8, 0xf7, 0x00, 0x00, 0x00,   /* 401004 call 0x401100 */
	    0x48, 0x83, 0xc4, 0x08,         /* 401009 add $0x8,%rsp */
	    0xc3);                          /* 40100d ret */
	PUT(PC + 0x100, 0x48, 0xff, 0x07,   /* 401100 incq (%rdi) */
	    0xc3);                          /* 401103 ret */
	CHECK_EQ(scan(), 0);
}

TEST(recursion_terminates_and_is_vector_free)
{
	reset();
	PUT(PC, 0x48, 0x85, 0xff,           /* 401000 test %rdi,%rdi */
	    0x74, 0x08,                     /* 401003 je 0x40100d */
	    0x48, 0xff, 0xcf,               /* 401005 dec %rdi */
	    0xe8, 0xf3, 0xff, 0xff, 0xff,   /* 401008 call 0x401000 */
	    0xc3);                          /* 40100d ret */
	CHECK_EQ(scan(), 0);
}

/* call into a PLT-like stub whose GOT slot points at the function. */
TEST(plt_slot_to_vector_free_code_is_vector_free)
{
	reset();
	PUT(PC, 0xe8, 0x7b, 0x00, 0x00, 0x00, /* 401000 call 0x401080 */
	    0xc3);                            /* 401005 ret */
	PUT(PC + 0x80, 0xf3, 0x0f, 0x1e, 0xfa, /* 401080 endbr64 */
	    0xf2, 0xff, 0x25, 0x75, 0x07, 0x00, 0x00); /* 401084 bnd jmp *0x775(%rip) # 0x401800 */
	PUT(PC + 0x100, 0x48, 0x83, 0x07, 0x01, /* 401100 addq $0x1,(%rdi) */
	    0xc3);                              /* 401104 ret */
	fake_put64(&mem, SLOT, PC + 0x100);
	CHECK_EQ(scan(), 0);
}

TEST(jmp_and_call_through_rip_slot_to_vector_free_code_are_vector_free)
{
	reset();
	PUT(PC, 0xff, 0x25, 0xfa, 0x07, 0x00, 0x00); /* 401000 jmp *0x7fa(%rip) # 0x401800 */
	PUT(PC + 0x100, 0x48, 0xff, 0x07,            /* 401100 incq (%rdi) */
	    0xc3);                                   /* 401103 ret */
	fake_put64(&mem, SLOT, PC + 0x100);
	CHECK_EQ(scan(), 0);

	/* -fno-plt: the call returns, so the scan goes on after it. */
	PUT(PC, 0xff, 0x15, 0xfa, 0x07, 0x00, 0x00, /* 401000 call *0x7fa(%rip) # 0x401800 */
	    0xc3);                                  /* 401006 ret */
	CHECK_EQ(scan(), 0);
	PUT(PC + 6, 0x66, 0x0f, 0xef, 0xc0);        /* 401006 pxor %xmm0,%xmm0 */
	CHECK_EQ(scan(), 1);
}

TEST(syscall_is_vector_free)
{
	reset();
	PUT(PC, 0xb8, 0x27, 0x00, 0x00, 0x00, /* 401000 mov $0x27,%eax */
	    0x0f, 0x05,                       /* 401005 syscall */
	    0xc3);                            /* 401007 ret */
	CHECK_EQ(scan(), 0);
}

/* One instruction, then ret. */
struct one {
	uint8_t b[15];
	size_t len;
	const char *text;
};

static int scan_one(const struct one *o)
{
	reset();
	put(PC, o->b, o->len);
	PUT(PC + o->len, 0xc3);
	return scan();
}

static const struct one general[] = {
	{B(0x48, 0x89, 0xf8), "mov %rdi,%rax"},
	{B(0x48, 0x8d, 0x44, 0xb7, 0x08), "lea 0x8(%rdi,%rsi,4),%rax"},
	{B(0x48, 0x0f, 0xaf, 0xfe), "imul %rsi,%rdi"},
	{B(0xf0, 0x48, 0x0f, 0xc1, 0x07), "lock xadd %rax,(%rdi)"},
	{B(0xf0, 0x48, 0x0f, 0xb1, 0x37), "lock cmpxchg %rsi,(%rdi)"},
	{B(0x0f, 0x31), "rdtsc"},
	{B(0x0f, 0x01, 0xf9), "rdtscp"},
	{B(0xf3, 0x48, 0x0f, 0xb8, 0xc7), "popcnt %rdi,%rax"},
	{B(0xf2, 0x48, 0x0f, 0x38, 0xf1, 0xc6), "crc32 %rsi,%rax"},
	{B(0x48, 0x0f, 0xc8), "bswap %rax"},
	{B(0x53), "push %rbx"},
	{B(0x5b), "pop %rbx"},
	{B(0x0f, 0xae, 0xf0), "mfence"},
	{B(0xf3, 0x90), "pause"},
	{B(0x48, 0x0f, 0xc3, 0x07), "movnti %rax,(%rdi)"},
	{B(0xf3, 0xaa), "rep stos %al,%es:(%rdi)"},
};

TEST(general_purpose_instructions_are_vector_free)
{
	for (size_t i = 0; i < sizeof(general) / sizeof(general[0]); i++) {
		int r = scan_one(&general[i]);

		if (r != 0)
			fprintf(stderr, "  %s: %d\n", general[i].text, r);
		CHECK_EQ(r, 0);
	}
}

/* ------------------------------------------------------------------ */
/* Yes                                                                 */

static const struct one vector[] = {
	{B(0x0f, 0x29, 0x07), "movaps %xmm0,(%rdi)"},
	{B(0xc5, 0xf8, 0x77), "vzeroupper"},
	{B(0xc5, 0xfc, 0x77), "vzeroall"},
	{B(0xdd, 0x07), "fldl (%rdi)"},
	{B(0xd9, 0xe8), "fld1"},
	{B(0xdb, 0xe3), "fninit"},
	{B(0xd9, 0x2f), "fldcw (%rdi)"},
	{B(0x0f, 0xae, 0x17), "ldmxcsr (%rdi)"},
	{B(0x0f, 0xae, 0x1f), "stmxcsr (%rdi)"},
	{B(0xc5, 0xf8, 0x93, 0xc1), "kmovw %k1,%eax"},
	{B(0xc4, 0xe2, 0x69, 0x90, 0x04, 0x8f), "vpgatherdd %xmm2,(%rdi,%xmm1,4),%xmm0"},
	{B(0x0f, 0x7f, 0x07), "movq %mm0,(%rdi)"},
	{B(0x0f, 0x77), "emms"},
	{B(0x0f, 0xae, 0x0f), "fxrstor (%rdi)"},
	{B(0x0f, 0xae, 0x2f), "xrstor (%rdi)"},
	{B(0x62, 0xf1, 0xfe, 0x48, 0x7f, 0x07), "vmovdqu64 %zmm0,(%rdi)"},
	{B(0xc5, 0xfe, 0x6f, 0x0f), "vmovdqu (%rdi),%ymm1"},
	{B(0x66, 0x48, 0x0f, 0x7e, 0xc0), "movq %xmm0,%rax"},
	{B(0xf2, 0x48, 0x0f, 0x2a, 0xc7), "cvtsi2sd %rdi,%xmm0"},
	{B(0xc4, 0xe2, 0x7b, 0x49, 0xc0), "tilezero %tmm0"},
	/* rejected instructions: the scan cannot vouch for them */
	{B(0xcc), "int3"},
	{B(0x0f, 0x0b), "ud2"},
	/* indirect branches with no slot to read */
	{B(0xff, 0xd0), "call *%rax"},
	{B(0xff, 0xe0), "jmp *%rax"},
	{B(0x3e, 0xff, 0x24, 0xf8), "notrack jmp *(%rax,%rdi,8)"},
	/* undecodable */
	{B(0x06), "(bad)"},
};

TEST(vector_x87_mask_tile_state_and_unknowns_answer_yes)
{
	for (size_t i = 0; i < sizeof(vector) / sizeof(vector[0]); i++) {
		int r = scan_one(&vector[i]);

		if (r != 1)
			fprintf(stderr, "  %s: %d\n", vector[i].text, r);
		CHECK_EQ(r, 1);
	}
}

TEST(vector_instruction_after_vector_free_ones_answers_yes)
{
	reset();
	PUT(PC, 0x48, 0xff, 0x06,  /* 401000 incq (%rsi) */
	    0x0f, 0x29, 0x07,      /* 401003 movaps %xmm0,(%rdi) */
	    0xc3);                 /* 401006 ret */
	CHECK_EQ(scan(), 1);
}

TEST(direct_call_to_vector_code_answers_yes)
{
	reset();
	PUT(PC, 0xe8, 0xfb, 0x00, 0x00, 0x00, /* 401000 call 0x401100 */
	    0xc3);                            /* 401005 ret */
	PUT(PC + 0x100, 0x66, 0x0f, 0xef, 0xc0, /* 401100 pxor %xmm0,%xmm0 */
	    0xc3);                              /* 401104 ret */
	CHECK_EQ(scan(), 1);
}

TEST(vector_code_on_either_side_of_a_jcc_answers_yes)
{
	reset();
	PUT(PC, 0x48, 0x85, 0xff,       /* 401000 test %rdi,%rdi */
	    0x75, 0x01,                 /* 401003 jne 0x401006 */
	    0xc3,                       /* 401005 ret */
	    0x66, 0x0f, 0xef, 0xc0,     /* 401006 pxor %xmm0,%xmm0 (taken side only) */
	    0xc3);                      /* 40100a ret */
	CHECK_EQ(scan(), 1);

	reset();
	PUT(PC, 0x48, 0x85, 0xff,       /* 401000 test %rdi,%rdi */
	    0x75, 0x04,                 /* 401003 jne 0x401009 */
	    0x66, 0x0f, 0xef, 0xc0,     /* 401005 pxor %xmm0,%xmm0 (fall-through only) */
	    0xc3);                      /* 401009 ret */
	CHECK_EQ(scan(), 1);

	reset();
	PUT(PC, 0x48, 0x85, 0xff,       /* 401000 test %rdi,%rdi */
	    0x75, 0x01,                 /* 401003 jne 0x401006 */
	    0xc3,                       /* 401005 ret */
	    0x06);                      /* 401006 (bad) (taken side only) */
	CHECK_EQ(scan(), 1);
}

TEST(rip_slot_to_vector_code_answers_yes)
{
	reset();
	PUT(PC, 0xff, 0x25, 0xfa, 0x07, 0x00, 0x00); /* 401000 jmp *0x7fa(%rip) # 0x401800 */
	PUT(PC + 0x100, 0xc5, 0xf8, 0x77,            /* 401100 vzeroupper */
	    0xc3);                                   /* 401103 ret */
	fake_put64(&mem, SLOT, PC + 0x100);
	CHECK_EQ(scan(), 1);
}

TEST(unreadable_or_null_slot_answers_yes)
{
	reset();
	PUT(PC, 0xff, 0x25, 0x00, 0x00, 0x01, 0x00); /* 401000 jmp *0x10000(%rip) # 0x411006 */
	CHECK_EQ(scan(), 1);

	/* a slot not set yet (or a null function pointer) may be set later */
	reset();
	PUT(PC, 0xff, 0x25, 0xfa, 0x07, 0x00, 0x00); /* 401000 jmp *0x7fa(%rip) # 0x401800 */
	fake_put64(&mem, SLOT, 0);
	CHECK_EQ(scan(), 1);
}

TEST(code_that_cannot_be_read_answers_yes)
{
	reset();
	PUT(PC, 0xe8, 0xfb, 0xff, 0x00, 0x00, /* 401000 call 0x411000 (outside) */
	    0xc3);                            /* 401005 ret */
	CHECK_EQ(scan(), 1);

	/* an instruction cut off by the end of the readable range */
	reset();
	PUT(PC, 0xe9, 0xf9, 0x0f, 0x00, 0x00); /* 401000 jmp 0x401ffe */
	PUT(PC + 0xffe, 0x48, 0xff);           /* 401ffe incq (%rsi), first 2 of 3 bytes */
	CHECK_EQ(scan(), 1);
}

/* Code of any length: a nop sled from SLED on, ret at SLED + n (or none). */
#define SLED 0x10000000ull

static int sled_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	uint64_t n = *(const uint64_t *)cookie;
	uint8_t *d = dst;

	if (addr < SLED)
		return -EFAULT;
	for (size_t i = 0; i < len; i++)
		d[i] = addr + i - SLED == n ? 0xc3 : 0x90;
	return 0;
}

static int scan_sled(uint64_t n)
{
	struct np_mem ops = {sled_read, NULL, &n};

	return ISA->vector_state_used(SLED, &ops);
}

TEST(long_vector_free_code_within_the_budget_is_vector_free)
{
	CHECK_EQ(scan_sled(3000), 0);
}

TEST(code_longer_than_the_budget_answers_yes_and_ends)
{
	alarm(20); /* a hang here kills the test rather than the CI job */
	CHECK_EQ(scan_sled(UINT64_MAX), 1);
	CHECK_EQ(scan_sled(100000), 1);
	alarm(0);
}

TEST(more_pending_branches_than_the_scan_holds_answers_yes)
{
	reset();
	for (unsigned i = 0; i < 300; i++)
		PUT(PC + 2 * i, 0x75, 0x00); /* jne .+2 */
	PUT(PC + 600, 0xc3);             /* ret */
	CHECK_EQ(scan(), 1);

	reset();
	for (unsigned i = 0; i < 100; i++)
		PUT(PC + 2 * i, 0x75, 0x00); /* jne .+2 */
	PUT(PC + 200, 0xc3);             /* ret */
	CHECK_EQ(scan(), 0);
}

/* ------------------------------------------------------------------ */
/* The real scan on this process's own code                            */

#if defined(__x86_64__)
static int self_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}

static const struct np_mem self = {self_read, NULL, NULL};

static int scan_self(uint64_t fn)
{
	return ISA->vector_state_used(fn, &self);
}

/* Instrumentation would add calls the scan rightly answers yes for. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 7 && \
	!defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define HAVE_GENERAL_REGS_ONLY 1
__attribute__((noinline, target("general-regs-only"))) static void vs_count(uint64_t *n)
{
	++*n;
}

__attribute__((noinline, target("general-regs-only"))) static void vs_count_twice(uint64_t *n)
{
	vs_count(n);
	vs_count(n);
}
#endif

/* volatile: the compiler can neither inline memset nor see what it is. */
static void *(*volatile vs_memset)(void *, int, size_t) = memset;

__attribute__((noinline)) static int vs_clear(void)
{
	char buf[256];

	return vs_memset(buf, 0, sizeof(buf)) == buf;
}

#ifdef __GLIBC__
__attribute__((noinline)) static size_t vs_strlen(const char *s)
{
	return strlen(s); /* a call (or tail jump) through the PLT */
}
#endif

TEST(real_counting_function_is_vector_free)
{
#ifdef HAVE_GENERAL_REGS_ONLY
	uint64_t n = 0;

	vs_count(&n);
	vs_count_twice(&n);
	CHECK_EQ(n, 3);
	CHECK_EQ(scan_self((uint64_t)(uintptr_t)vs_count), 0);
	CHECK_EQ(scan_self((uint64_t)(uintptr_t)vs_count_twice), 0);
#else
	printf("# skipped: no target(\"general-regs-only\") or instrumented build\n");
#endif
}

TEST(real_function_calling_memset_answers_yes)
{
	CHECK_EQ(vs_clear(), 1);
	CHECK_EQ(scan_self((uint64_t)(uintptr_t)vs_clear), 1);
#ifdef __GLIBC__
	/* glibc's memset and strlen (reached through the PLT) use SSE or AVX */
	CHECK_EQ(scan_self((uint64_t)(uintptr_t)vs_memset), 1);
	CHECK_EQ(vs_strlen("abc"), 3);
	CHECK_EQ(scan_self((uint64_t)(uintptr_t)vs_strlen), 1);
#endif
}
#endif /* __x86_64__ */

TEST_MAIN()

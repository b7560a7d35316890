/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the x86-64 unit tests: the instruction vector table
 * (vectors.c), a fake memory standing for a small address range, and the
 * relocation round-trip check.
 */
#ifndef NP_TESTS_X86_64_H
#define NP_TESTS_X86_64_H

#include "arch/arch.h"
#include "test.h"
#include "unit/fake_mem.h"

#define ISA (&np_isa_x86_64)
#define PC  0x401000ull /* where each vector of x86_vectors[] is decoded */

/* One instruction: bytes, the text format() prints at PC (checked against
 * objdump -d, see format_test.c), class, flags, target. */
struct x86_vec {
	uint8_t b[15];
	size_t len;
	const char *text;
	uint8_t cls;
	uint32_t flags;
	uint64_t target;
};

/* B(0x48, 0x89, 0xe5) fills both .b and .len. */
#define B(...) {__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})

extern const struct x86_vec x86_vectors[];
extern const size_t x86_nvectors;


/*
 * Relocate src (at src_pc) to dst_pc with a jump back to resume_pc, then
 * decode the output and CHECK that it reaches, in order, every branch
 * target and pc-relative address of the original, plus resume_pc, and
 * nothing else outside itself. The 14-byte `jmp *0(%rip); .quad T` form
 * counts as a branch to T. Returns relocate()'s result; out receives the
 * bytes when not NULL.
 */
int x86_roundtrip(const uint8_t *src, size_t len, uint64_t src_pc, uint64_t dst_pc,
		  uint64_t resume_pc, uint8_t *out, size_t out_cap);

#endif

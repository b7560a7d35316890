/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the arm64 unit tests: the instruction vector table
 * (vectors.c), a fake memory standing for a small address range, and the
 * relocation round-trip check. They run on every host.
 */
#ifndef NP_TESTS_ARM64_H
#define NP_TESTS_ARM64_H

#include "arch/arch.h"
#include "test.h"
#include "unit/fake_mem.h"

#define ISA (&np_isa_arm64)
#define PC  0x401000ull /* where each vector of a64_vectors[] is decoded */

/* One instruction word, the text format() prints at PC (checked against
 * aarch64-linux-gnu-objdump, see format_test.c), class, flags, target. */
struct a64_vec {
	uint32_t w;
	const char *text;
	uint8_t cls;
	uint32_t flags;
	uint64_t target;
};

extern const struct a64_vec a64_vectors[];
extern const size_t a64_nvectors;

/* Little-endian words in and out of byte buffers. */
void a64_le(uint8_t *p, uint32_t w);
uint32_t a64_at(const uint8_t *p);


/*
 * Relocate the words src[0..n) (at src_pc) to dst_pc with a jump back to
 * resume_pc, then decode the output and CHECK that it reaches, in order,
 * every branch target and pc-relative address of the original, plus
 * resume_pc, and nothing else outside itself. The sequences relocate.c
 * emits for far addresses count as what they compute: `adrp Xd; add Xd,
 * Xd, #lo` as one address, `ldr X, .+8; br X|b .+12; .quad A` as A.
 * Returns relocate()'s result (bytes); out receives the words.
 */
int a64_roundtrip(const uint32_t *src, size_t n, uint64_t src_pc, uint64_t dst_pc,
		  uint64_t resume_pc, uint32_t *out, size_t out_cap);

/* objdump's text as the tables hold it: "b\t401010 <.text.v3+0x10>  //
 * b.any" becomes "b\t0x401010". */
void a64_gnu_text(const char *in, char *out, size_t cap);
/* objdump's text of each word, disassembled alone at PC, as the tables
 * hold it (an alias's "// ..." comment dropped): how many it read, or -1
 * when aarch64-linux-gnu-as or -objdump is not installed. */
int a64_objdump(const uint32_t *words, size_t n, char (*texts)[128]);

#endif

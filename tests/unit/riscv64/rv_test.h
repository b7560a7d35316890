/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the riscv64 unit tests: the instruction vector table
 * (vectors.c), code buffers built from 16- and 32-bit words, a fake
 * memory, and the relocation round-trip check.
 */
#ifndef NP_TESTS_RISCV64_H
#define NP_TESTS_RISCV64_H

#include "arch/arch.h"
#include "test.h"
#include "unit/fake_mem.h"

#define ISA (&np_isa_riscv64)
#define PC  0x10000ull /* where each vector of rv_vectors[] is decoded */

struct rv_vec {
	uint32_t w;        /* the word, or the parcel when len is 2 */
	uint8_t len;
	const char *text;  /* format() at PC, as objdump prints it */
	uint8_t cls;
	uint32_t flags;
	uint64_t target;
};

#define W(x) (x), 4
#define H(x) (x), 2

extern const struct rv_vec rv_vectors[];
extern const size_t rv_nvectors;

/* The little-endian bytes of a vector; returns its length. */
size_t rv_vec_bytes(const struct rv_vec *v, uint8_t *b);

/* Code assembled from a list of words: C(x) a 2-byte parcel, I(x) a word. */
struct rv_code {
	uint8_t b[256];
	size_t len;
};
#define C16(x) (0x10000u | (x))
#define I32(x) ((uint64_t)(x) | 1ull << 32)
/* Each element C16(parcel) or I32(word); terminated by 0. */
void rv_code(struct rv_code *c, const uint64_t *words);
uint32_t rv_le32(const uint8_t *p);


/*
 * Relocate src (at src_pc) to dst_pc with a jump back to resume_pc and the
 * given scratch registers, then decode the output and CHECK that it
 * reaches every branch target and pc-relative address of the original,
 * and resume_pc, with nothing else leaving it. An auipc+addi or
 * auipc+jalr pair counts as the address it forms. Returns relocate_via's
 * result; out receives the bytes when not NULL.
 */
int rv_roundtrip(const uint8_t *src, size_t len, uint64_t src_pc, uint64_t dst_pc,
		 uint64_t resume_pc, uint64_t scratch, uint8_t *out, size_t out_cap);

#endif

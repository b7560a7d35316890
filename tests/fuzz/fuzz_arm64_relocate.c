/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the arm64 ISA (src/arch/arm64): decode the first word of the input
 * at a fixed pc, with the rest of the input as the code that follows (the
 * exclusive-sequence look-ahead reads it); unless it is REJECTED, relocate
 * it to several trampoline addresses (within b reach above and below,
 * beyond adrp reach, with and without the jump back) and check that the
 * copy means the same: it decodes word by word, and the addresses it
 * reaches outside itself are, in order, the original's (the return address
 * first for a call) plus the jump back. The sequences relocate.c builds
 * count as the address they compute: `adrp Xd; add Xd, Xd, #lo` and the
 * literal forms `ldr X, .+8; br X | b .+12; .quad A`. Also format() and
 * branch_targets() on the whole input, and relocate() into a buffer one
 * word too short. The same through relocate_via() with scratch registers
 * 1 GiB away (jumps through a register count as the address its adrp+add
 * computes), and reg_use() agreeing with decode(). Buffers are heap-allocated to their exact size so that
 * AddressSanitizer sees any overrun.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "arch/arch.h"

#define ISA (&np_isa_arm64)
#define SRC_PC 0x7f0000401000ull
#define OUT_CAP 256

struct targets {
	uint64_t v[16];
	size_t n;
};

static void add(struct targets *t, uint64_t v)
{
	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		t->v[t->n++] = v;
}

static uint32_t word(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Words a computed address takes at out[i] (0: none), and the address. */
static size_t address_form(const uint8_t *out, size_t words, size_t i, uint64_t pc, uint64_t *to)
{
	uint32_t w = word(out + 4 * i);
	struct np_insn in;

	if ((w & 0xffffffe0u) == 0x58000040u && i + 4 <= words) { /* ldr Xd, .+8 */
		memcpy(to, out + 4 * i + 8, 8);
		return 4;
	}
	if ((w & 0x9f000000u) == 0x90000000u && i + 1 < words) { /* adrp; add */
		uint32_t a = word(out + 4 * i + 4), rd = w & 31;

		if ((a & 0xffc003ffu) == (0x91000000u | rd << 5 | rd)) {
			FUZZ_ASSERT(ISA->decode(out + 4 * i, 4, pc, &in) == 0);
			*to = in.target + ((a >> 10) & 0xfff);
			return 2;
		}
	}
	return 0;
}

static void output_targets(const uint8_t *out, size_t len, uint64_t pc, struct targets *t)
{
	size_t words = len / 4;

	for (size_t i = 0; i < words;) {
		struct np_insn in;
		uint64_t to;
		size_t k = address_form(out, words, i, pc + 4 * i, &to);

		if (k) {
			add(t, to);
			i += k;
			continue;
		}
		if (ISA->decode(out + 4 * i, 4, pc + 4 * i, &in)) {
			fprintf(stderr, "relocated output does not decode at word %zu\n", i);
			abort();
		}
		if ((in.flags & (NP_INSN_BRANCH | NP_INSN_PCREL)) &&
		    (in.target < pc || in.target > pc + len))
			add(t, in.target);
		i++;
	}
}

/* Forms whose only effect is lost out of reach: a prefetch, and an
 * adr/adrp or general literal load into xzr (relocate.c makes them nops). */
static bool may_vanish(uint32_t w)
{
	bool adr = (w & 0x1f000000u) == 0x10000000u;
	bool ldr = (w & 0xbf000000u) == 0x18000000u || (w & 0xff000000u) == 0x98000000u;

	return (w & 0xff000000u) == 0xd8000000u || ((adr || ldr) && (w & 31) == 31);
}

/* What the original reaches, seen from the copy: addresses inside the
 * copy are internal to it on both sides. */
static void want_outside(struct targets *t, uint64_t v, uint64_t dst_pc, int n)
{
	if (v < dst_pc || v > dst_pc + (uint64_t)n)
		add(t, v);
}

/* relocate(), or relocate_via() with s */
static int reloc(const struct np_reloc *r, const struct np_reloc_scratch *s)
{
	return s ? ISA->relocate_via(r, s) : ISA->relocate(r);
}

static void roundtrip(const uint8_t *src, const struct np_insn *in, uint64_t dst_pc,
		      uint64_t resume, const struct np_reloc_scratch *s)
{
	uint8_t *out = malloc(OUT_CAP);
	struct np_reloc r = {src, 4, SRC_PC, out, OUT_CAP, dst_pc, resume};
	struct targets want = {0}, got = {0};
	int n;

	FUZZ_ASSERT(out);
	n = reloc(&r, s);
	if (n < 0) {
		FUZZ_ASSERT(n == -ERANGE || n == -EOPNOTSUPP);
		free(out);
		return;
	}
	FUZZ_ASSERT(n > 0 && n <= OUT_CAP && n % 4 == 0);
	if (in->flags & NP_INSN_CALL)
		want_outside(&want, SRC_PC + 4, dst_pc, n);
	/* see may_vanish: such a form becomes a nop, which reaches nothing */
	if ((in->flags & (NP_INSN_BRANCH | NP_INSN_PCREL)) &&
	    !(may_vanish(word(src)) && word(out) == 0xd503201fu))
		want_outside(&want, in->target, dst_pc, n);
	if (resume)
		want_outside(&want, resume, dst_pc, n);
	output_targets(out, (size_t)n, dst_pc, &got);
	if (got.n != want.n || memcmp(got.v, want.v, want.n * sizeof(want.v[0]))) {
		fprintf(stderr, "0x%08x at 0x%llx -> 0x%llx resume 0x%llx\n", word(src),
			(unsigned long long)SRC_PC, (unsigned long long)dst_pc,
			(unsigned long long)resume);
		for (int i = 0; i < n / 4; i++)
			fprintf(stderr, "  out 0x%08x\n", word(out + 4 * i));
		abort();
	}
	/* one word short: must fail cleanly, never write past the end */
	uint8_t *tight = malloc((size_t)n - 4 + 1);
	struct np_reloc t = {src, 4, SRC_PC, tight, (size_t)n - 4, dst_pc, resume};

	FUZZ_ASSERT(tight);
	FUZZ_ASSERT(reloc(&t, s) == -ENOSPC);
	free(tight);
	free(out);
}

static void on_target(void *cookie, uint64_t from, uint64_t target)
{
	(void)from;
	(*(size_t *)cookie)++;
	(void)target;
}

static int mem_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	const struct np_reloc *r = cookie; /* src/src_len/src_pc: the input */

	if (addr < r->src_pc || addr - r->src_pc > r->src_len ||
	    len > r->src_len - (addr - r->src_pc))
		return -EFAULT;
	memcpy(dst, r->src + (addr - r->src_pc), len);
	return 0;
}

static int mem_write(void *cookie, uint64_t addr, const void *src, size_t len)
{
	return -EFAULT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_reloc whole = {data, size, SRC_PC, NULL, 0, 0, 0};
	struct np_mem mem = {mem_read, mem_write, &whole};
	struct np_insn in;
	struct np_reg_use use;
	struct np_reloc_scratch far = {1ull << 16, 1ull << 9};
	size_t count = 0;
	char text[96];
	uint8_t *src;
	int rc;

	if (size > 4096)
		return 0;
	/* every report counted */
	struct np_branch_sink sink = {on_target, on_target, on_target, &count};
	FUZZ_ASSERT(ISA->branch_targets(data, size, SRC_PC, &mem, &sink) >= 0);
	for (size_t off = 0; off + 4 <= size; off += 4) {
		int f = ISA->format(data + off, size - off, SRC_PC + off, text, sizeof(text));

		FUZZ_ASSERT(f > 0 && (size_t)f < sizeof(text));
	}
	(void)ISA->vector_state_used(SRC_PC, &mem);
	rc = ISA->decode(data, size, SRC_PC, &in);
	FUZZ_ASSERT(rc == 0 || rc == -EILSEQ || rc == -ENODATA);
	FUZZ_ASSERT(ISA->reg_use(data, size, SRC_PC, &use) == rc);
	FUZZ_ASSERT(rc || ((use.read | use.written) & ~0x7fffffffull) == 0); /* never sp */
	if (rc)
		return 0;
	FUZZ_ASSERT(in.len == 4 && in.pc == SRC_PC && in.cls <= NP_INSN_SIMULATED);
	FUZZ_ASSERT((in.sim != 0) == (in.cls == NP_INSN_SIMULATED));
	if (in.cls == NP_INSN_REJECTED) {
		FUZZ_ASSERT(in.reason && in.reason[0]);
		return 0;
	}
	src = malloc(4);
	FUZZ_ASSERT(src);
	memcpy(src, data, 4);
	roundtrip(src, &in, SRC_PC + 0x4000000ull, SRC_PC + 4, NULL); /* 64 MiB above */
	roundtrip(src, &in, SRC_PC - 0x7000000ull, SRC_PC + 4, NULL); /* 112 MiB below */
	roundtrip(src, &in, SRC_PC + (8ull << 30), 0, NULL);          /* beyond adrp reach */
	roundtrip(src, &in, SRC_PC - 0x1000, 0, NULL);                /* near, no jump back */
	/* the long form's trampolines: through x16 (scratch) and x9 (back) */
	roundtrip(src, &in, SRC_PC + (1ull << 30), SRC_PC + 4, &far);
	roundtrip(src, &in, SRC_PC - (1ull << 30), SRC_PC + 4, &far);
	free(src);
	return 0;
}

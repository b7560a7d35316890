/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the x86-64 ISA (src/arch/x86_64): decode the first instruction of
 * the input at a fixed pc; unless it is REJECTED, relocate it to several
 * trampoline addresses (near above, near below, out of rel32 reach) and
 * check the relocated copy means the same: it decodes into whole
 * instructions, and the absolute addresses it reaches outside itself (branch
 * targets, rip-relative operands, the 14-byte absolute jump) are, in order,
 * the original's plus the jump back (as tests/unit/x86_64/x86_test.c checks).
 * Also format() and branch_targets() on the whole input, and relocate() into
 * a buffer one byte too short. Buffers are heap-allocated to their exact
 * size so that AddressSanitizer sees any overrun.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "arch/arch.h"

#define ISA (&np_isa_x86_64)
#define SRC_PC 0x7f0000401000ull
#define OUT_CAP 512

struct targets {
	uint64_t v[64];
	size_t n;
};

static void add(struct targets *t, uint64_t v)
{
	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		t->v[t->n++] = v;
}

static const uint8_t abs_jmp[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */

/* Addresses the output reaches outside [pc, pc + len]. */
static void output_targets(const uint8_t *out, size_t len, uint64_t pc, struct targets *t)
{
	for (size_t off = 0; off < len;) {
		struct np_insn in;
		uint64_t to;

		if (len - off >= 14 && memcmp(out + off, abs_jmp, 6) == 0) {
			memcpy(&to, out + off + 6, 8);
			if (to < pc || to > pc + len)
				add(t, to);
			off += 14;
			continue;
		}
		int rc = ISA->decode(out + off, len - off, pc + off, &in);
		if (rc) {
			fprintf(stderr, "relocated output does not decode at +%zu (%d)\n", off, rc);
			abort();
		}
		FUZZ_ASSERT(in.len > 0 && in.len <= len - off);
		if ((in.flags & (NP_INSN_BRANCH | NP_INSN_PCREL)) &&
		    (in.target < pc || in.target > pc + len))
			add(t, in.target);
		off += in.len;
	}
}

static void dump(const char *what, const uint8_t *b, size_t n)
{
	fprintf(stderr, "%s:", what);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %02x", b[i]);
	fprintf(stderr, "\n");
}

static void roundtrip(const uint8_t *src, const struct np_insn *in, uint64_t dst_pc, uint64_t resume)
{
	uint8_t *out = malloc(OUT_CAP);
	FUZZ_ASSERT(out);
	struct np_reloc r = {src, in->len, SRC_PC, out, OUT_CAP, dst_pc, resume};
	int n = ISA->relocate(&r);

	if (n < 0) {
		FUZZ_ASSERT(n == -ERANGE || n == -EOPNOTSUPP || n == -EILSEQ || n == -ENOSPC);
		free(out);
		return;
	}
	FUZZ_ASSERT(n > 0 && n <= OUT_CAP);
	/* what the original reaches, seen from the copy */
	struct targets want = {0}, got = {0};
	if ((in->flags & (NP_INSN_BRANCH | NP_INSN_PCREL)) &&
	    (in->target < dst_pc || in->target > dst_pc + (uint64_t)n))
		add(&want, in->target);
	if (resume)
		add(&want, resume);
	output_targets(out, (size_t)n, dst_pc, &got);
	if (got.n != want.n || memcmp(got.v, want.v, want.n * sizeof(want.v[0]))) {
		dump("instruction", src, in->len);
		fprintf(stderr, "pc 0x%llx -> 0x%llx resume 0x%llx flags 0x%x target 0x%llx\n",
			(unsigned long long)SRC_PC, (unsigned long long)dst_pc,
			(unsigned long long)resume, in->flags, (unsigned long long)in->target);
		dump("relocated", out, (size_t)n);
		for (size_t i = 0; i < want.n; i++)
			fprintf(stderr, "  want 0x%llx\n", (unsigned long long)want.v[i]);
		for (size_t i = 0; i < got.n; i++)
			fprintf(stderr, "  got  0x%llx\n", (unsigned long long)got.v[i]);
		abort();
	}
	/* one byte short: must fail cleanly, never write past the end */
	uint8_t *tight = malloc((size_t)n - 1 + 1);
	FUZZ_ASSERT(tight);
	struct np_reloc t = {src, in->len, SRC_PC, (size_t)n > 1 ? tight : NULL, (size_t)n - 1,
			     dst_pc, resume};
	int m = ISA->relocate(&t);
	FUZZ_ASSERT(m < 0 || m <= n - 1);
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
	if (addr < r->src_pc || addr - r->src_pc > r->src_len || len > r->src_len - (addr - r->src_pc))
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
	struct np_insn in;

	if (size > 4096)
		return 0;
	/* whole input: format each instruction, collect branch targets */
	if (size) {
		struct np_reloc whole = {data, size, SRC_PC, NULL, 0, 0, 0};
		struct np_mem mem = {mem_read, mem_write, &whole};
		size_t count = 0;
		/* every report counted */
		struct np_branch_sink sink = {on_target, on_target, on_target, &count};
		int rc = ISA->branch_targets(data, size, SRC_PC, &mem, &sink);
		(void)rc;
		char text[96];
		for (size_t off = 0; off < size;) {
			int f = ISA->format(data + off, size - off, SRC_PC + off, text, sizeof(text));
			(void)f;
			if (ISA->decode(data + off, size - off, SRC_PC + off, &in))
				break;
			FUZZ_ASSERT(in.len > 0 && in.len <= size - off && in.len <= ISA->max_insn);
			off += in.len;
		}
	}

	int rc = ISA->decode(data, size, SRC_PC, &in);
	FUZZ_ASSERT(rc == 0 || rc == -EILSEQ || rc == -ENODATA);
	if (rc)
		return 0;
	FUZZ_ASSERT(in.len > 0 && in.len <= size && in.len <= ISA->max_insn);
	FUZZ_ASSERT(in.pc == SRC_PC);
	FUZZ_ASSERT(in.cls <= NP_INSN_SIMULATED);
	if (in.cls == NP_INSN_REJECTED) {
		FUZZ_ASSERT(in.reason && in.reason[0]);
		return 0;
	}
	/* the instruction alone, in a buffer of its exact size */
	uint8_t *src = malloc(in.len);
	FUZZ_ASSERT(src);
	memcpy(src, data, in.len);
	struct np_insn again;
	FUZZ_ASSERT(ISA->decode(src, in.len, SRC_PC, &again) == 0);
	FUZZ_ASSERT(again.len == in.len && again.flags == in.flags && again.target == in.target &&
		    again.cls == in.cls);

	uint64_t resume = SRC_PC + in.len;
	roundtrip(src, &in, SRC_PC + 0x10000000ull, resume);  /* 256 MiB above */
	roundtrip(src, &in, SRC_PC - 0x7000000ull, resume);   /* 112 MiB below */
	roundtrip(src, &in, SRC_PC + (8ull << 30), resume);   /* out of rel32 reach */
	roundtrip(src, &in, SRC_PC - 0x7000000ull, 0);        /* no jump back */
	free(src);
	return 0;
}

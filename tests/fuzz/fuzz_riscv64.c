/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the riscv64 ISA (src/arch/riscv64) and the free-register analysis:
 *   - decode and format agree on every parcel of the input (one succeeds
 *     exactly when the other does), lengths are 2 or 4 and fit;
 *   - the first instructions (up to 8 bytes, whole) relocate to a near, a
 *     far (1 GiB) and an unreachable (3 GiB) trampoline, with and without
 *     scratch registers; a success decodes entirely and reaches outside
 *     itself exactly the original's branch targets and auipc addresses
 *     (an auipc+addi/jalr pair counts as the address it forms), the jump
 *     back, and return addresses of calls moved far;
 *   - simulate() of a SIMULATED instruction lands on its target or the
 *     next instruction, and never writes x0;
 *   - branch_targets, reg_use and np_freereg over the whole input, and
 *     over its first half with the environment of a module summary
 *     (np_regsum) made of the input: free registers stay within
 *     scratch_ok, a return's dead ones within call_clobbered.
 * Buffers are heap-allocated to their exact size for AddressSanitizer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/freereg.h"
#include "arch/regsum.h"
#include "fuzz.h"

#define ISA    (&np_isa_riscv64)
#define SRC_PC 0x3ff7a00000ull
#define GIB    (1ull << 30)

struct dests {
	uint64_t v[64];
	size_t n;
};

static void add(struct dests *d, uint64_t v)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i] == v)
			return;
	if (d->n < 64)
		d->v[d->n++] = v;
}

static bool has(const struct dests *d, uint64_t v)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i] == v)
			return true;
	return false;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool pair(uint32_t x, uint32_t y)
{
	unsigned rd = x >> 7 & 31, op = y & 0x7f;

	return (y >> 15 & 31) == rd && (y >> 12 & 7) == 0 &&
	       (op == 0x67 || (op == 0x13 && (y >> 7 & 31) == rd));
}

/* Destinations: every branch target and auipc address (a branch back to
 * the site itself goes to the original address, not into the copy); in
 * relocated output, pairs count as one address. */
static void collect(const uint8_t *b, size_t len, uint64_t pc, bool pairs, struct dests *d,
		    struct dests *links)
{
	for (size_t off = 0; off < len;) {
		struct np_insn in;
		int rc = ISA->decode(b + off, len - off, pc + off, &in);

		if (rc) {
			fprintf(stderr, "relocated output does not decode at +%zu (%d)\n", off, rc);
			abort();
		}
		if (in.flags & NP_INSN_PCREL) {
			bool p = pairs && off + 8 <= len && pair(le32(b + off), le32(b + off + 4));

			if ((le32(b + off) >> 7 & 31) != 0) /* auipc zero: a hint, no address */
				add(d, p ? in.target + (uint64_t)((int64_t)(int32_t)le32(b + off + 4) >> 20)
					 : in.target);
			off += p ? 8 : in.len;
			continue;
		}
		if (in.flags & NP_INSN_BRANCH)
			add(d, in.target);
		if (links && (in.flags & NP_INSN_CALL)) /* any linking jal/jalr */
			add(links, in.pc + in.len);
		off += in.len;
	}
}

static void check_decode_format(const uint8_t *data, size_t size)
{
	for (size_t off = 0; off + 2 <= size; off += 2) {
		struct np_insn in;
		char text[128];
		int d = ISA->decode(data + off, size - off, SRC_PC + off, &in);
		int f = ISA->format(data + off, size - off, SRC_PC + off, text, sizeof(text));

		FUZZ_ASSERT((d == 0) == (f > 0));
		if (d == 0)
			FUZZ_ASSERT((in.len == 2 || in.len == 4) && in.len <= size - off);
		if (d == 0 && in.cls == NP_INSN_REJECTED)
			FUZZ_ASSERT(in.reason != NULL);
	}
}

/* Whole instructions from the start covering at most 8 bytes. */
static size_t head_len(const uint8_t *data, size_t size)
{
	size_t off = 0;
	struct np_insn in;

	while (off < 8 && ISA->decode(data + off, size - off, SRC_PC + off, &in) == 0)
		off += in.len;
	return off;
}

static void check_relocate(const uint8_t *src, size_t n, uint64_t dst_pc, uint64_t scratch)
{
	size_t cap = 256;
	uint8_t *out = malloc(cap);
	struct np_reloc r = {src, n, SRC_PC, out, cap, dst_pc, SRC_PC + n};
	struct np_reloc_scratch s = {scratch, scratch};
	struct dests want = {.n = 0}, got = {.n = 0}, links = {.n = 0};
	int len = ISA->relocate_via(&r, &s);

	if (len >= 0) {
		collect(src, n, SRC_PC, false, &want, &links);
		add(&want, SRC_PC + n);
		collect(out, (size_t)len, dst_pc, true, &got, NULL);
		for (size_t i = 0; i < want.n; i++)
			FUZZ_ASSERT(has(&got, want.v[i]));
		for (size_t i = 0; i < got.n; i++) /* or a skip inside the copy */
			FUZZ_ASSERT(has(&want, got.v[i]) || has(&links, got.v[i]) ||
				    (got.v[i] >= dst_pc && got.v[i] < dst_pc + (uint64_t)len));
		if (len > 0) { /* one byte short must fail, not overrun */
			uint8_t *tight = malloc((size_t)len - 1 ? (size_t)len - 1 : 1);
			struct np_reloc t = r;

			t.dst = tight;
			t.dst_cap = (size_t)len - 1;
			FUZZ_ASSERT(ISA->relocate_via(&t, &s) == -ENOSPC);
			free(tight);
		}
	} else {
		FUZZ_ASSERT(len == -ERANGE || len == -EOPNOTSUPP || len == -EILSEQ);
	}
	free(out);
}

static void check_simulate(const uint8_t *data, size_t size)
{
	struct np_insn in;
	struct np_regs regs;
	struct np_mem mem = {NULL, NULL, NULL};

	if (ISA->decode(data, size, SRC_PC, &in) || in.cls != NP_INSN_SIMULATED)
		return;
	memset(&regs, 0, sizeof(regs));
	for (int i = 1; i < NP_NGPR; i++)
		regs.gpr[i] = SRC_PC + 0x1000 * (uint64_t)i + 1;
	regs.pc = SRC_PC;
	FUZZ_ASSERT(ISA->simulate(&in, &regs, &mem) == 0);
	FUZZ_ASSERT(regs.gpr[0] == 0);
	if (!(in.flags & NP_INSN_INDIRECT) && !(in.flags & NP_INSN_RET))
		FUZZ_ASSERT(regs.pc == SRC_PC + in.len || regs.pc == in.target);
}

static void count(void *cookie, uint64_t from, uint64_t target)
{
	(void)from;
	(*(size_t *)cookie)++;
	(void)target;
}

/* The input as a module: its two halves one function each, the first
 * also as anonymous code at its own address + 1 MiB, a stub range past
 * them; then the first half analysed with the module's environment. */
static void check_function(const uint8_t *data, size_t size)
{
	struct np_freereg fr;
	struct np_freereg_env env;
	struct np_mem mem = {NULL, NULL, NULL};
	struct np_regsum *rs = np_regsum_new(ISA);
	size_t n = 0, half = size / 2 & ~(size_t)1;

	FUZZ_ASSERT(rs != NULL);
	struct np_branch_sink sink = {count, count, count, &n}; /* every report counted */
	FUZZ_ASSERT(ISA->branch_targets(data, size, SRC_PC, &mem, &sink) >= 0);
	FUZZ_ASSERT(np_regsum_add(rs, data, half, SRC_PC) == 0);
	FUZZ_ASSERT(np_regsum_add(rs, data + half, size - half, SRC_PC + half) == 0);
	FUZZ_ASSERT(np_regsum_add_code(rs, data, half, SRC_PC + (1u << 20)) == 0);
	FUZZ_ASSERT(np_regsum_add_stubs(rs, SRC_PC + size, SRC_PC + size + 64) == 0);
	FUZZ_ASSERT(np_regsum_finish(rs) == 0);
	np_regsum_env(rs, SRC_PC, true, &env);
	FUZZ_ASSERT((env.ret_dead & ~ISA->call_clobbered) == 0);
	FUZZ_ASSERT(np_freereg_analyse(ISA, data, half, SRC_PC, NP_FREEREG_ENTRY, &env, &fr) == 0);
	for (size_t off = 0; off < half; off += 2)
		FUZZ_ASSERT((np_freereg_at(&fr, SRC_PC + off) & ~ISA->scratch_ok) == 0);
	np_freereg_release(&fr);
	np_regsum_free(rs);
	FUZZ_ASSERT(np_freereg_analyse(ISA, data, size, SRC_PC, NP_FREEREG_ENTRY, NULL, &fr) == 0);
	for (size_t off = 0; off < size; off += 2)
		FUZZ_ASSERT((np_freereg_at(&fr, SRC_PC + off) & ~ISA->scratch_ok) == 0);
	np_freereg_release(&fr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	size_t n;

	memcpy(copy, data, size);
	check_decode_format(copy, size);
	check_simulate(copy, size);
	n = head_len(copy, size);
	if (n) {
		static const uint64_t dsts[] = {SRC_PC + 4096, SRC_PC - 4096, SRC_PC + GIB,
						SRC_PC - GIB, SRC_PC + 3 * GIB};

		for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
			check_relocate(copy, n, dsts[i], 0);
			check_relocate(copy, n, dsts[i], 1ull << 6 | 1ull << 28);
		}
	}
	check_function(copy, size);
	free(copy);
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "x86_test.h"

/* ------------------------------------------------------------------ */

struct targets {
	uint64_t v[64];
	size_t n;
};

static void add(struct targets *t, uint64_t v)
{
	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		t->v[t->n++] = v;
}

static void original_targets(const uint8_t *src, size_t len, uint64_t pc, struct targets *t)
{
	for (size_t off = 0; off < len;) {
		struct np_insn in;

		if (ISA->decode(src + off, len - off, pc + off, &in))
			return;
		if (in.flags & (NP_INSN_BRANCH | NP_INSN_PCREL))
			add(t, in.target);
		off += in.len;
	}
}

static const uint8_t abs_jmp[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */

/* Targets of the output outside [pc, pc + len]: the end is inside too,
 * since a skip over the last instruction lands there. */
static void output_targets(const uint8_t *out, size_t len, uint64_t pc, struct targets *t)
{
	for (size_t off = 0; off < len;) {
		struct np_insn in;
		uint64_t to;

		if (len - off >= 14 && memcmp(out + off, abs_jmp, 6) == 0) {
			memcpy(&to, out + off + 6, 8);
			add(t, to);
			off += 14;
			continue;
		}
		if (ISA->decode(out + off, len - off, pc + off, &in)) {
			CHECK(!"relocated output decodes");
			return;
		}
		if ((in.flags & (NP_INSN_BRANCH | NP_INSN_PCREL)) &&
		    (in.target < pc || in.target > pc + len))
			add(t, in.target);
		off += in.len;
	}
}

int x86_roundtrip(const uint8_t *src, size_t len, uint64_t src_pc, uint64_t dst_pc,
		  uint64_t resume_pc, uint8_t *out, size_t out_cap)
{
	uint8_t buf[512];
	struct np_reloc r = {src, len, src_pc, buf, sizeof(buf), dst_pc, resume_pc};
	struct targets want = {0}, got = {0};
	int n = ISA->relocate(&r);

	if (n < 0)
		return n;
	original_targets(src, len, src_pc, &want);
	if (resume_pc)
		add(&want, resume_pc);
	output_targets(buf, (size_t)n, dst_pc, &got);
	CHECK_EQ(got.n, want.n);
	for (size_t i = 0; i < want.n && i < got.n; i++)
		CHECK_EQ(got.v[i], want.v[i]);
	if (out)
		memcpy(out, buf, (size_t)n < out_cap ? (size_t)n : out_cap);
	return n;
}

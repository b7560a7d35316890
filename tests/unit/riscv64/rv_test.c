/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "rv_test.h"

size_t rv_vec_bytes(const struct rv_vec *v, uint8_t *b)
{
	for (unsigned i = 0; i < v->len; i++)
		b[i] = (uint8_t)(v->w >> 8 * i);
	return v->len;
}

uint32_t rv_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void rv_code(struct rv_code *c, const uint64_t *words)
{
	c->len = 0;
	for (; *words; words++) {
		unsigned n = (*words >> 32) ? 4 : 2;

		for (unsigned i = 0; i < n && c->len < sizeof(c->b); i++)
			c->b[c->len++] = (uint8_t)(*words >> 8 * i);
	}
}

/* ------------------------------------------------------------------ */

struct dests {
	uint64_t a[32];
	size_t n;
};

static void add_dest(struct dests *d, uint64_t v)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->a[i] == v)
			return;
	if (d->n < 32)
		d->a[d->n++] = v;
}

static bool has_dest(const struct dests *d, uint64_t v)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->a[i] == v)
			return true;
	return false;
}

static int64_t sext12(uint32_t v)
{
	return (int64_t)((int32_t)v >> 20);
}

/* auipc rd; addi rd, rd, lo  or  auipc rd; jalr x?, lo(rd): one address */
static bool is_pair(uint32_t x, uint32_t y)
{
	unsigned rd = x >> 7 & 31, op = y & 0x7f;

	return (y >> 15 & 31) == rd && (y >> 12 & 7) == 0 && (op == 0x67 || (op == 0x13 && (y >> 7 & 31) == rd));
}

/* The places code leaves to or addresses: branch targets and auipc
 * values; with 'pairs', an auipc+addi/jalr pair counts as the address it
 * forms (relocate.c's forms). Jumps inside [lo, hi) are internal. Return
 * addresses of calls go to 'ret' when not NULL. */
static void collect(const uint8_t *code, size_t len, uint64_t pc, uint64_t lo, uint64_t hi,
		    bool pairs, struct dests *d, struct dests *ret)
{
	for (size_t off = 0; off < len;) {
		struct np_insn in;

		if (ISA->decode(code + off, len - off, pc + off, &in)) {
			CHECK(!"relocated code decodes");
			return;
		}
		if (in.flags & NP_INSN_PCREL) {
			uint32_t x = rv_le32(code + off), y = off + 8 <= len ? rv_le32(code + off + 4) : 0;
			bool pair = pairs && is_pair(x, y);

			add_dest(d, pair ? in.target + (uint64_t)sext12(y) : in.target);
			off += pair ? 8 : 4;
			continue;
		}
		if ((in.flags & NP_INSN_BRANCH) && (in.target < lo || in.target >= hi))
			add_dest(d, in.target);
		if (ret && (in.flags & NP_INSN_CALL))
			add_dest(ret, in.pc + in.len);
		off += in.len;
	}
}

int rv_roundtrip(const uint8_t *src, size_t len, uint64_t src_pc, uint64_t dst_pc,
		 uint64_t resume_pc, uint64_t scratch, uint8_t *out, size_t out_cap)
{
	uint8_t buf[256];
	struct np_reloc r = {src, len, src_pc, buf, sizeof(buf), dst_pc, resume_pc};
	struct np_reloc_scratch s = {scratch, scratch};
	struct dests want = {.n = 0}, got = {.n = 0}, links = {.n = 0};
	int n = ISA->relocate_via(&r, &s);

	if (n < 0)
		return n;
	collect(src, len, src_pc, 0, 0, false, &want, &links); /* every target, internal ones too */
	if (resume_pc)
		add_dest(&want, resume_pc);
	collect(buf, (size_t)n, dst_pc, dst_pc, dst_pc + (uint64_t)n, true, &got, NULL);
	for (size_t i = 0; i < want.n; i++)
		CHECK(has_dest(&got, want.a[i]));
	for (size_t i = 0; i < got.n; i++) /* a link is formed where a call moved far */
		CHECK(has_dest(&want, got.a[i]) || has_dest(&links, got.a[i]));
	if (out)
		memcpy(out, buf, (size_t)n < out_cap ? (size_t)n : out_cap);
	return n;
}

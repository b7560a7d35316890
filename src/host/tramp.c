/* SPDX-License-Identifier: MIT */
/*
 * The trampoline layout, one for every host (host/pieces.h says what a
 * block holds and in which order): which pieces a site block has, where
 * each displaced instruction's block and relocation go, how much room a
 * region's trampoline needs. The host's np_host_pieces gives the bytes of
 * each piece and fills their slots; the ISA's relocator (np_host_isa)
 * copies the displaced instructions and appends the jump back. The
 * out-of-line copy that traps back instead is laid out here too.
 */
#include "host/host.h"
#include "host/layout.h"
#include "host/pieces.h"

#include <errno.h>
#include <string.h>
#include <sys/types.h>

static void add(struct np_block *b, enum np_piece_kind k, const struct np_block_site *s)
{
	np_host_pieces.add(b, k, s);
}

static void mark(struct np_block *b, enum np_block_point p)
{
	b->mark[p] = b->n;
}

/* The inline hit path: guard, one call or counter per probe, return
 * arming. */
static void add_calls(struct np_block *b, struct np_block_site *s)
{
	add(b, NP_PIECE_ENTER, s);
	for (const struct np_probe *p = s->site->probes; p; p = p->next_in_site) {
		s->probe = p;
		add(b, p->on_entry ? NP_PIECE_HANDLER : NP_PIECE_COUNT, s);
	}
	s->probe = NULL;
	if (s->ret_handlers)
		add(b, NP_PIECE_ARM, s);
	add(b, NP_PIECE_LEAVE, s);
	mark(b, NP_AT_CALLS_END);
}

/* The return point of RET_CALL: the return handlers, inline. */
static void add_return_path(struct np_block *b, struct np_block_site *s)
{
	mark(b, NP_AT_RET_PATH);
	add(b, NP_PIECE_RET_SAVE, s);
	if (s->fpu)
		add(b, NP_PIECE_VEC_SAVE, s);
	add(b, NP_PIECE_RET_ENTER, s);
	for (const struct np_probe *p = s->site->probes; p; p = p->next_in_site)
		if (p->on_return) {
			s->probe = p;
			add(b, NP_PIECE_RET_HANDLER, s);
		}
	s->probe = NULL;
	add(b, NP_PIECE_LEAVE, s);
	mark(b, NP_AT_RET_CALLS_END);
	if (s->fpu)
		add(b, NP_PIECE_VEC_RESTORE, s);
	add(b, NP_PIECE_RET_RESTORE, s);
}

/* The pieces of the block that runs site's handlers, in order. */
static void lay_out(struct np_block *b, const struct np_site *site)
{
	struct np_block_site s = {.site = site,
				  .entry = site->func_entry,
				  .fpu = site->fpu == NP_FPU_FULL};
	for (const struct np_probe *p = site->probes; p; p = p->next_in_site) {
		s.entry_handlers |= p->on_entry != NULL;
		s.ret_handlers |= p->on_return != NULL;
	}
	b->n = 0;
	b->overflow = false;
	for (int i = 0; i < NP_POINTS; i++)
		b->mark[i] = -1;
	add(b, NP_PIECE_SAVE, &s);
	if (s.fpu)
		add(b, NP_PIECE_VEC_SAVE, &s);
	add_calls(b, &s);
	if (s.fpu)
		add(b, NP_PIECE_VEC_RESTORE, &s);
	add(b, NP_PIECE_RESTORE, &s);
	if (s.entry && s.ret_handlers) {
		int n = b->n;
		add(b, NP_PIECE_RET_CALL, &s);
		if (b->n > n)
			add_return_path(b, &s);
	}
	mark(b, NP_AT_END);
}

/* Copy the pieces to out, filling every slot. */
static void copy_pieces(const struct np_block *b, uint8_t *out, const struct np_emit *e)
{
	size_t pos = 0;
	for (int i = 0; i < b->n; i++) {
		const struct np_piece *p = &b->v[i];
		memcpy(out + pos, p->begin, np_piece_len(p));
		for (unsigned k = 0; k < NP_PIECE_SLOTS && p->slot[k].at; k++) {
			size_t at = pos + (size_t)(p->slot[k].at - p->begin);
			np_host_pieces.patch(out + at, &p->slot[k], at, e);
		}
		pos += np_piece_len(p);
	}
}

/* The site block to run at 'at', into out; out == NULL measures it (an
 * upper bound when the host's tail is). -E2BIG: more pieces than a block
 * holds. */
static ssize_t site_block(uint8_t *out, const struct np_site *site, uint64_t at)
{
	static struct np_block b; /* engine lock held: too big for the stack */
	lay_out(&b, site);
	if (b.overflow)
		return -E2BIG;
	struct np_emit e = {.at = at, .code = np_block_len(&b, 0, b.n)};
	for (int i = 0; i < NP_POINTS; i++)
		e.point[i] = b.mark[i] < 0 ? NP_NO_POINT : np_block_len(&b, 0, b.mark[i]);
	size_t tail = np_host_pieces.tail ? np_host_pieces.tail(NULL, &b, &e) : 0;
	if (!out)
		return (ssize_t)(e.code + tail);
	copy_pieces(&b, out, &e);
	if (np_host_pieces.tail)
		tail = np_host_pieces.tail(out + e.code, &b, &e);
	return (ssize_t)(e.code + tail);
}

/* Padding before a block at 'at' (c.nop on riscv64), into out unless NULL. */
static size_t pad(uint8_t *out, uint64_t at)
{
	const struct np_host_pieces *h = &np_host_pieces;
	size_t n = 0;
	for (; h->align && (at + n) % h->align; n += h->pad_len)
		if (out)
			memcpy(out + n, h->pad, h->pad_len);
	return n;
}

size_t np_host_tramp_size(const struct np_region *r)
{
	const struct np_host_pieces *h = &np_host_pieces;
	size_t len = h->back_max;
	for (unsigned i = 0; i < r->ninsn; i++) {
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP) {
			ssize_t n = site_block(NULL, r->sites[i], 0);
			/* the most padding, and the block; the build says E2BIG */
			len += (h->align ? h->align - h->pad_len : 0) + (n > 0 ? (size_t)n : 0);
		}
		len += h->reloc_max;
	}
	return len;
}

int np_host_build_tramp(struct np_region *r, uint8_t *buf, size_t cap, uint64_t at)
{
	struct np_reloc_scratch scratch = np_host_tramp_scratch(r);
	size_t pos = 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		const struct np_insn *in = &r->insn[i];
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP) {
			size_t gap = pad(NULL, at + pos);
			if (pos + gap > cap)
				return -ENOSPC;
			pos += pad(buf + pos, at + pos);
			ssize_t n = site_block(NULL, r->sites[i], at + pos);
			if (n < 0)
				return (int)n;
			if (pos + (size_t)n > cap)
				return -ENOSPC;
			r->tramp_off[i] = (uint32_t)pos;
			pos += (size_t)site_block(buf + pos, r->sites[i], at + pos);
		} else {
			r->tramp_off[i] = (uint32_t)pos;
		}
		struct np_reloc rl = {
			.src = r->orig + (in->pc - r->start),
			.src_len = in->len,
			.src_pc = in->pc,
			.dst = buf + pos,
			.dst_cap = cap - pos,
			.dst_pc = at + pos,
			.resume_pc = i + 1 == r->ninsn ? r->end : 0,
		};
		int n = np_host_isa->relocate_via ? np_host_isa->relocate_via(&rl, &scratch)
						  : np_host_isa->relocate(&rl);
		if (n < 0)
			return n;
		pos += (size_t)n;
	}
	return (int)pos;
}

size_t np_host_trap_back_size(const struct np_region *r)
{
	return np_host_tramp_size(r) + NP_TRAP_BACK_TAIL;
}

/* The breakpoint, trap_len bytes at a time up to the words (the first
 * runs: the rest is padding), then the words. */
static int trap_back_tail(uint8_t *buf, size_t cap, uint64_t pc, uint64_t resume)
{
	const struct np_isa *isa = np_host_isa;
	size_t n = (size_t)(np_trap_back_words(pc, isa->trap_len) - pc);
	uint64_t words[2] = {resume, ~resume};
	if (n + sizeof(words) > cap)
		return -ENOSPC;
	for (size_t i = 0; i < n; i += isa->trap_len)
		isa->emit_trap(buf + i);
	memcpy(buf + n, words, sizeof(words));
	return (int)(n + sizeof(words));
}

int np_host_build_trap_back(struct np_region *r, uint8_t *buf, size_t cap, uint64_t at)
{
	const struct np_isa *isa = np_host_isa;
	struct np_reloc rl = {.src = r->orig, .src_len = r->insn[0].len, .src_pc = r->start,
			      .dst = buf, .dst_cap = cap, .dst_pc = at, .resume_pc = 0};
	int n = isa->relocate_via ? isa->relocate_via(&rl, &r->scratch) : isa->relocate(&rl);
	if (n < 0)
		return n;
	int tail = trap_back_tail(buf + n, cap - (size_t)n, at + (uint64_t)n, r->end);
	r->tramp_off[0] = 0;
	return tail < 0 ? tail : n + tail;
}

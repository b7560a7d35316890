/* SPDX-License-Identifier: MIT */
/*
 * Site blocks assembled from assembler templates (src/host/<host>/tramp.S).
 *
 * A template piece is a byte range of tramp.S, bounded by NAME_begin and
 * NAME_end, with slots: labels inside it whose bytes the runtime fills when
 * it copies the piece (an immediate, a pc-relative offset, a literal's
 * address). A site block is a list of pieces in order: save, the inline
 * hit path (enter, one piece per probe, arm, leave), restore. Which pieces
 * and in what order is the same on every ISA (see runtime.c of x86-64 and
 * arm64); how a slot is filled is the ISA's, through a patch function.
 */
#ifndef NP_PIECES_H
#define NP_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NP_PIECE_SLOTS 6
/* Fixed pieces of a block, plus two per probe: 64 probes at one site. */
#define NP_BLOCK_PIECES (16 + 2 * 64)

struct np_slot {
	const uint8_t *at; /* inside the template; NULL ends the list */
	unsigned kind;     /* the ISA's: what to write there */
	uint64_t value;
};

struct np_piece {
	const uint8_t *begin, *end;
	struct np_slot slot[NP_PIECE_SLOTS];
};

#define NP_PIECE(name, ...) ((struct np_piece){name##_begin, name##_end, {__VA_ARGS__}})

struct np_block {
	struct np_piece v[NP_BLOCK_PIECES];
	int n;
	bool overflow; /* more pieces than fit: the block cannot be built */
};

static inline size_t np_piece_len(const struct np_piece *p)
{
	return (size_t)(p->end - p->begin);
}

static inline void np_block_add(struct np_block *b, struct np_piece p)
{
	if (b->n < NP_BLOCK_PIECES)
		b->v[b->n++] = p;
	else
		b->overflow = true;
}

/* Bytes of pieces [from, to). */
static inline size_t np_block_len(const struct np_block *b, int from, int to)
{
	size_t len = 0;
	for (int i = from; i < to; i++)
		len += np_piece_len(&b->v[i]);
	return len;
}

/* Fills one slot: insn points at the slot's bytes in the copy, off is
 * their offset from the start of the block. */
typedef void np_slot_patch_fn(uint8_t *insn, const struct np_slot *s, size_t off, void *cookie);

/* Copy the pieces to out (NULL: only measure), filling every slot. */
static inline size_t np_block_emit(const struct np_block *b, uint8_t *out,
				   np_slot_patch_fn *patch, void *cookie)
{
	size_t pos = 0;
	for (int i = 0; i < b->n; i++) {
		const struct np_piece *p = &b->v[i];
		if (out) {
			memcpy(out + pos, p->begin, np_piece_len(p));
			for (unsigned k = 0; k < NP_PIECE_SLOTS && p->slot[k].at; k++) {
				size_t at = pos + (size_t)(p->slot[k].at - p->begin);
				patch(out + at, &p->slot[k], at, cookie);
			}
		}
		pos += np_piece_len(p);
	}
	return pos;
}

#endif

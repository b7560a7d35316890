/* SPDX-License-Identifier: MIT */
/*
 * Site blocks: one piece list, one layout routine (src/host/tramp.c), the
 * bytes of each piece from the host (src/host/<host>/runtime.c, whose
 * tramp.S holds them as templates).
 *
 * A trampoline is, for each instruction a region displaces, in order:
 *   [site block]      if a probe sits there (JUMP regions only)
 *   the instruction, relocated
 * and after the last one the jump back to the region's end. A site block
 * is the list of pieces below, in this order, each present when the
 * condition beside it holds:
 *
 *   SAVE                     always: build the np_ctx on the stack
 *   VEC_SAVE                 the site's handlers may touch vector state
 *   ENTER                    the inline hit path's guard; its slow path
 *                            calls np__dispatch and goes to CALLS_END
 *   HANDLER or COUNT         per probe, in attach order: its entry handler
 *                            called (and its counter bumped), or only the
 *                            counter
 *   ARM                      a probe has a return handler
 *   LEAVE                    (point CALLS_END after it)
 *   VEC_RESTORE, RESTORE     as SAVE: the registers back, or the redirect
 *   RET_CALL                 at a function entry with return handlers:
 *                            call the rest of the trampoline (point END:
 *                            the function's first instructions, relocated)
 *   the return path          when the host gave a RET_CALL: (point
 *                            RET_PATH) RET_SAVE, VEC_SAVE, RET_ENTER,
 *                            RET_HANDLER per return handler, LEAVE (point
 *                            RET_CALLS_END), VEC_RESTORE, RET_RESTORE
 *
 * The host adds zero or more template pieces for each (np_host_pieces.add):
 * a host without an inline hit path (riscv64) adds nothing from ENTER to
 * LEAVE, its SAVE calling np__dispatch through shared code; a host whose
 * return probes go through a shared return trampoline (arm64, riscv64)
 * adds no RET_CALL, and the block has no return path. Around the pieces a
 * host may want padding before the block (riscv64: c.nop to 8 bytes, for
 * its literals) and a tail after it (arm64: a branch over the literal pool
 * that its ldr slots load from, and the pool).
 *
 * A template piece is a byte range of tramp.S, bounded by NAME_begin and
 * NAME_end, with slots: labels inside it whose bytes the host fills when
 * the piece is copied (an immediate, a pc-relative offset, a literal's
 * address), by its own kind of slot. A slot may name a point of the block
 * (np_emit.point: CALLS_END, RET_PATH, RET_CALLS_END, END) as its target.
 */
#ifndef NP_PIECES_H
#define NP_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct np_site;
struct np_probe;
struct np_region;
struct np_reloc_scratch;

enum np_piece_kind {
	NP_PIECE_SAVE,
	NP_PIECE_VEC_SAVE,
	NP_PIECE_ENTER,
	NP_PIECE_HANDLER,
	NP_PIECE_COUNT,
	NP_PIECE_ARM,
	NP_PIECE_LEAVE,
	NP_PIECE_VEC_RESTORE,
	NP_PIECE_RESTORE,
	NP_PIECE_RET_CALL,
	NP_PIECE_RET_SAVE,
	NP_PIECE_RET_ENTER,
	NP_PIECE_RET_HANDLER,
	NP_PIECE_RET_RESTORE,
};

/* Points of a block a slot may branch to or take the address of. */
enum np_block_point {
	NP_AT_CALLS_END,     /* after the inline hit path (LEAVE) */
	NP_AT_RET_PATH,      /* the return point of RET_CALL */
	NP_AT_RET_CALLS_END, /* after the return path's LEAVE */
	NP_AT_END,           /* after the last piece: the displaced instruction,
			      * relocated, unless the host has a tail */
	NP_POINTS
};
#define NP_NO_POINT SIZE_MAX

#define NP_PIECE_SLOTS 6
/* Fixed pieces of a block, plus two per probe: 64 probes at one site. */
#define NP_BLOCK_PIECES (16 + 2 * 64)

struct np_slot {
	const uint8_t *at; /* inside the template; NULL ends the list */
	unsigned kind;     /* the host's: what to write there */
	uint64_t value;    /* or an enum np_block_point, for a kind that says so */
};

struct np_piece {
	const uint8_t *begin, *end;
	struct np_slot slot[NP_PIECE_SLOTS];
};

#define NP_PIECE(name, ...) ((struct np_piece){name##_begin, name##_end, {__VA_ARGS__}})

struct np_block {
	struct np_piece v[NP_BLOCK_PIECES];
	int n;
	int mark[NP_POINTS]; /* the piece a point precedes; -1: not in the block */
	bool overflow;       /* more pieces than fit: the block cannot be built */
};

/* What the layout routine tells the host about the site, for the piece
 * it asks for. */
struct np_block_site {
	const struct np_site *site;
	bool entry;          /* at a function entry (np_site.func_entry) */
	bool entry_handlers; /* a probe of the site has an entry handler */
	bool ret_handlers;   /* a probe of the site has a return handler */
	bool fpu;            /* the vector state is saved (NP_FPU_FULL) */
	const struct np_probe *probe; /* HANDLER, COUNT, RET_HANDLER: whose */
};

/* A block being copied out: where it runs, and its points' offsets. */
struct np_emit {
	uint64_t at;
	size_t code;               /* bytes of its pieces */
	size_t point[NP_POINTS];   /* offsets in the block, or NP_NO_POINT */
};

/* Fills one slot: insn points at the slot's bytes in the copy, off is
 * their offset from the start of the block. */
typedef void np_slot_patch_fn(uint8_t *insn, const struct np_slot *s, size_t off,
			      const struct np_emit *e);

/* What a host gives the layout routine; each runtime.c defines one. */
struct np_host_pieces {
	/* Add the pieces of kind k for the site s (zero or more). */
	void (*add)(struct np_block *b, enum np_piece_kind k, const struct np_block_site *s);
	np_slot_patch_fn *patch;
	/* The block's tail after its e->code bytes of pieces: out == NULL
	 * gives an upper bound and readies the slots that refer to it (before
	 * the pieces are copied); else writes it (after) and says how long it
	 * is. NULL: none. */
	size_t (*tail)(uint8_t *out, const struct np_block *b, const struct np_emit *e);
	/* A block starts on a multiple of align bytes, padded with pad
	 * (pad_len bytes, repeated); 0: anywhere. */
	size_t align;
	uint8_t pad[4];
	size_t pad_len;
	/* np_host_tramp_size's bounds: the longest relocated instruction, and
	 * the jump back. */
	size_t reloc_max, back_max;
};
extern const struct np_host_pieces np_host_pieces;

/* The registers relocated code of r may clobber to reach far (np_reloc_
 * scratch): r->scratch by default (src/host/defaults.c); arm64 none into
 * code guarded by BTI. */
struct np_reloc_scratch np_host_tramp_scratch(const struct np_region *r);

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

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Placing and removing many regions in one pass of the patching protocol.
 *
 * One probe's patch costs little work but several system calls: the
 * breakpoint, the tail and the first byte are three writes through
 * /proc/self/mem, each followed by a serialisation of every core
 * (membarrier SYNC_CORE), plus the trap table's copy-and-swap twice and,
 * when the patch displaces several instructions, a round of signals to the
 * other threads. The kernel's uprobe_multi places many uprobes in one
 * system call; here a batch does the same for the protocol:
 *
 *   1. every region's start goes into the trap table (one edit);
 *   2. a breakpoint on every first byte; serialise once;
 *   3. threads stopped inside any of the bytes being replaced are moved,
 *      all in one round of signals;
 *   4. every tail; serialise once;  5. every first byte; serialise once;
 *   6. the trap table loses what it no longer needs (one edit).
 *
 * Each step is the single-region protocol's (region_write.c) applied to all the
 * regions before the next step starts, so every region goes through the
 * same states in the same order; regions of one batch never overlap (a
 * region that would absorb another is placed on its own, see region.c).
 * A region whose writes fail is rolled back alone and reported; the
 * others are placed.
 *
 * Between np_batch_begin and np_batch_end (engine lock held), region.c
 * queues new regions (their trampolines written, linked, not yet reached
 * by any jump) and emptied ones (still patched); anything that must see
 * a queued region in place first calls np_batch_flush. Outside a batch,
 * region.c patches at once, as before. The breakpoint-first steps are the
 * x86 protocol; on other hosts the regions whose patch is one word go in
 * together through np_patch_words (arm64: its threads stopped once for
 * the batch where the Arm ARM asks for it), longer ones one by one
 * through np_patch_region.
 */
#include "core/batch.h"
#include "core/code_write.h"
#include "core/codemem.h"
#include "core/region_write.h"
#include "core/site.h"
#include "core/stop.h"
#include "core/maps.h"
#include "core/trap.h"
#include "core/word_write.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct pending {
	struct np_region *r;
	bool install;          /* a new region; else one being removed */
	bool move;             /* threads may be stopped inside its bytes */
	const uint8_t *bytes;  /* what to write at r->start */
	size_t len;
	uint8_t before[32];    /* what is there now */
	int err;
	bool stuck;            /* failed halfway: behind its breakpoint */
	size_t span;           /* the span it is written with */
};

static struct {
	struct pending *v;
	size_t n, cap;
	int depth;
	void (*failed)(struct np_site *site, int err);
	int removal_err;       /* the first removal that failed */
} batch;

void np_batch_begin(void (*failed)(struct np_site *site, int err))
{
	if (batch.depth++ == 0) {
		np_codemem_stage(true);
		batch.failed = failed;
		batch.removal_err = 0;
	}
}

bool np_batch_active(void)
{
	return batch.depth > 0;
}

bool np_batch_pending(const struct np_region *r)
{
	return r && r->queued;
}

static int queue(struct np_region *r, bool install, bool move, const uint8_t *bytes, size_t len)
{
	if (batch.n == batch.cap) {
		size_t cap = batch.cap ? 2 * batch.cap : 64;
		struct pending *v = realloc(batch.v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		batch.v = v, batch.cap = cap;
	}
	batch.v[batch.n++] = (struct pending){.r = r, .install = install, .move = move,
					      .bytes = bytes, .len = len};
	r->queued = true;
	return 0;
}

int np_batch_install(struct np_region *r, bool move_threads)
{
	size_t len = r->strategy == NP_STRATEGY_JUMP ? r->jump_len : np_host_isa->trap_len;
	return queue(r, true, move_threads, r->patch, len);
}

int np_batch_remove(struct np_region *r, size_t len)
{
	return queue(r, false, false, r->orig, len);
}

/* --- the protocol ------------------------------------------------------------ */

static int by_start(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	return x->r->start < y->r->start ? -1 : x->r->start > y->r->start;
}

/* A thread at pc (strictly inside the bytes of a region being placed)
 * goes to that instruction's place in the region's trampoline. Runs in
 * the signal handler of each thread asked (stop.c). */
static uint64_t to_trampoline(void *cookie, uint64_t pc)
{
	(void)cookie;
	size_t lo = 0, hi = batch.n;
	while (lo < hi) { /* the last region starting before pc */
		size_t mid = (lo + hi) / 2;
		if (batch.v[mid].r->start < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct pending *p = lo ? &batch.v[lo - 1] : NULL;
	if (!p || !p->move || p->err || pc >= p->r->start + p->len)
		return pc;
	int i = np_region_insn_index(p->r, pc);
	return i < 0 ? pc : p->r->tramp + p->r->tramp_off[i];
}

/* A thread blocked in a system call that returns strictly inside the
 * region about to be patched at pc: that region fails (EAGAIN; AUTO
 * takes TRAP, whose one byte no thread comes back into). */
static void stuck_at(void *cookie, uint64_t pc)
{
	(void)cookie;
	size_t lo = 0, hi = batch.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (batch.v[mid].r->start < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct pending *p = lo ? &batch.v[lo - 1] : NULL;
	if (p && pc < p->r->start + p->len)
		p->err = -EAGAIN;
}

static bool multi(const struct pending *p)
{
	return p->len > np_host_isa->trap_len;
}

/* --- spans ---------------------------------------------------------------------
 * Each step writes a few bytes per region, and a write through
 * /proc/self/mem costs a few microseconds whatever its length. Regions
 * that lie close together in one page are written as one span: the bytes
 * between them are written back as they were read at the start of the
 * flush. That is safe only where nothing else writes those bytes meanwhile:
 * the engine holds its lock, and the span's mapping is not writable by the
 * program (a JIT that writes its code, or flips it writable, is never
 * spanned; its regions are written one by one, as a lone region always is).
 * A span stays within one page, so a write of it fails or succeeds whole. */
#define SPAN_GAP 256 /* the most bytes between two regions of one span */

struct span {
	size_t first, n;  /* batch.v[first .. first + n) */
	uint64_t at;
	size_t len;
	bool read_only;   /* its mapping is not writable by the program */
	uint8_t *img;     /* what the span holds after the current step */
};

static struct span *spans;
static size_t nspans;
static uint8_t *images;

static uint64_t page_of(uint64_t a)
{
	return a & ~(uint64_t)4095;
}

static bool read_only_code(uint64_t addr)
{
	struct np_map m;
	return np_maps_lookup(addr, &m) == 0 && m.x && !m.w;
}

/* Does batch.v[i] join the span that ends with batch.v[i - 1]? (A page is
 * all one mapping.) */
static bool joins(const struct span *sp, size_t i)
{
	const struct pending *p = &batch.v[i], *q = &batch.v[i - 1];
	uint64_t q_end = q->r->start + q->len;
	return sp->read_only && p->r->start >= q_end && p->r->start - q_end <= SPAN_GAP &&
	       page_of(p->r->start + p->len - 1) == page_of(sp->at);
}

static void free_spans(void)
{
	free(spans);
	free(images);
	spans = NULL, images = NULL, nspans = 0;
}

/* The spans of the (sorted) batch, each with the bytes it holds now. */
static int make_spans(void)
{
	size_t total = 0;
	if (!(spans = calloc(batch.n, sizeof(*spans))))
		return -ENOMEM;
	if (batch.n > 1) /* writable or not: as the program has it now */
		np_maps_expire_old();
	for (size_t i = 0; i < batch.n; i++) {
		struct span *sp = nspans ? &spans[nspans - 1] : NULL;
		if (sp && joins(sp, i)) {
			sp->n++;
		} else {
			sp = &spans[nspans++];
			sp->first = i, sp->n = 1, sp->at = batch.v[i].r->start;
			sp->read_only = batch.n > 1 && read_only_code(sp->at);
		}
		batch.v[i].span = (size_t)(sp - spans);
		sp->len = batch.v[i].r->start + batch.v[i].len - sp->at;
	}
	for (size_t k = 0; k < nspans; k++)
		total += spans[k].len;
	if (!(images = malloc(total)))
		return -ENOMEM;
	for (size_t k = 0, off = 0; k < nspans; off += spans[k++].len) {
		struct span *sp = &spans[k];
		sp->img = images + off;
		int err = np_code_read(sp->at, sp->img, sp->len);
		for (size_t i = sp->first; i < sp->first + sp->n; i++) {
			struct pending *p = &batch.v[i];
			p->err = err;
			if (!err)
				memcpy(p->before, sp->img + (p->r->start - sp->at), p->len);
		}
	}
	return 0;
}

/* Bytes [off, off + len) of each region that is still good (and, with
 * only_multi, longer than a breakpoint) set to src's in the image, then
 * every span that changed is written; a span that fails takes its regions
 * with it. 'from' picks the source per region. */
static void write_step(size_t off, size_t len, bool only_multi,
		       const uint8_t *(*from)(const struct pending *p))
{
	for (size_t k = 0; k < nspans; k++) {
		struct span *sp = &spans[k];
		bool changed = false;
		for (size_t i = sp->first; i < sp->first + sp->n; i++) {
			struct pending *p = &batch.v[i];
			size_t l = len ? len : p->len - off;
			if (p->err || (only_multi && !multi(p)))
				continue;
			uint8_t *at = sp->img + (p->r->start - sp->at) + off;
			changed |= memcmp(at, from(p) + off, l) != 0;
			memcpy(at, from(p) + off, l);
		}
		int err = changed ? np_code_write(sp->at, sp->img, sp->len) : 0;
		for (size_t i = sp->first; err && i < sp->first + sp->n; i++)
			if (!batch.v[i].err && (!only_multi || multi(&batch.v[i])))
				batch.v[i].err = err;
	}
}

static const uint8_t *trap_or_whole(const struct pending *p)
{
	static uint8_t trap[16];
	np_host_isa->emit_trap(trap);
	return multi(p) ? trap : p->bytes; /* no longer than a breakpoint: whole */
}

static const uint8_t *new_bytes(const struct pending *p)
{
	return p->bytes;
}

/* The breakpoint back to the byte it replaced, once the rest is as it was
 * (a write that failed may have changed part of it): else the region stays
 * behind its breakpoint. */
static void restore_first(struct pending *p)
{
	size_t tl = np_host_isa->trap_len;
	uint8_t now[32];
	p->stuck = !(np_code_read(p->r->start + tl, now, p->len - tl) == 0 &&
		     memcmp(now, p->before + tl, p->len - tl) == 0 &&
		     np_code_write(p->r->start, p->before, tl) == 0);
	/* later writes of its span carry what is there now */
	struct span *sp = &spans[p->span];
	uint8_t *img = sp->img + (p->r->start - sp->at);
	if (!p->stuck)
		memcpy(img, p->before, p->len);
	else if (np_code_read(p->r->start, now, p->len) == 0)
		memcpy(img, now, p->len);
}

/* The regions a step left failed after their breakpoint went in: back as
 * they were (the breakpoint kept everyone out of their bytes). */
static void restore_failed(const bool *was_ok)
{
	for (size_t i = 0; i < batch.n; i++)
		if (was_ok[i] && batch.v[i].err && multi(&batch.v[i]))
			restore_first(&batch.v[i]);
}

/* Steps 2 to 5 over every queued region (sorted by start). A region whose
 * first byte would not go in after its tail did (writes to that page
 * failing from one moment to the next) gets its tail back, then its first
 * byte; if even that fails it stays behind its breakpoint, which the trap
 * handler keeps steering to its trampoline (p->stuck). */
static void breakpoint_first(void)
{
	size_t tl = np_host_isa->trap_len;
	uint64_t lo = UINT64_MAX, hi = 0;
	bool *ok = calloc(batch.n, sizeof(*ok));

	if (!ok || make_spans()) {
		for (size_t i = 0; i < batch.n; i++)
			batch.v[i].err = -ENOMEM;
		free(ok);
		free_spans();
		return;
	}
	write_step(0, tl, false, trap_or_whole);
	np_sync_cores();
	for (size_t i = 0; i < batch.n; i++) {
		struct pending *p = &batch.v[i];
		ok[i] = !p->err;
		if (!p->err && p->move && multi(p)) {
			lo = p->r->start < lo ? p->r->start : lo;
			hi = p->r->start + p->len > hi ? p->r->start + p->len : hi;
		}
	}
	int moved = lo < hi ? np_threads_move_out(lo, hi, to_trampoline, NULL, stuck_at) : 0;
	for (size_t i = 0; moved && i < batch.n; i++)
		if (batch.v[i].move && !batch.v[i].err && multi(&batch.v[i]))
			batch.v[i].err = moved;
	write_step(tl, 0, true, new_bytes); /* the tails */
	restore_failed(ok);
	np_sync_cores();
	for (size_t i = 0; i < batch.n; i++)
		ok[i] = !batch.v[i].err;
	write_step(0, tl, true, new_bytes); /* the first bytes */
	bool undo = false;
	for (size_t i = 0; i < batch.n; i++) {
		struct pending *p = &batch.v[i];
		if (ok[i] && p->err && multi(p)) { /* its tail back, then its first byte */
			p->stuck = undo = true;
			np_code_write(p->r->start + tl, p->before + tl, p->len - tl);
		}
	}
	np_sync_cores();
	for (size_t i = 0; undo && i < batch.n; i++)
		if (batch.v[i].stuck)
			restore_first(&batch.v[i]);
	if (undo)
		np_sync_cores();
	free(ok);
	free_spans();
}

/* --- before and after ---------------------------------------------------------- */

static bool in_batch(const struct np_region *r, struct pending **out)
{
	size_t lo = 0, hi = batch.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (batch.v[mid].r->start < r->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	*out = lo < batch.n && batch.v[lo].r == r ? &batch.v[lo] : NULL;
	return *out != NULL;
}

/* Which trap table entries the batch no longer needs: a placed JUMP's (its
 * breakpoint is gone), a failed install's, a removed region's (its start
 * and the starts of regions it had absorbed). A placed TRAP keeps its
 * breakpoint, a JUMP that could not be removed its absorbed starts, and a
 * region stuck behind its breakpoint everything. */
static bool done_with(uint64_t addr, const struct np_region *r, void *cookie)
{
	struct pending *p;
	(void)cookie;
	if (!in_batch(r, &p) || p->stuck)
		return false;
	if (p->install)
		return p->err || r->strategy == NP_STRATEGY_JUMP;
	return !p->err || (r->strategy == NP_STRATEGY_JUMP && addr == r->start);
}

/* The regions whose patch is one breakpoint long (arm64: a b or a brk;
 * riscv64: a c.ebreak) go in together, step by step (np_patch_words: one
 * stop of the other threads per step that needs one, for the whole
 * batch); longer ones one by one through np_patch_region. */
static void place_words(void)
{
	struct np_region **r = malloc(batch.n * sizeof(*r));
	const uint8_t **bytes = malloc(batch.n * sizeof(*bytes));
	int *errs = malloc(batch.n * sizeof(*errs));
	size_t n = 0;
	for (size_t i = 0; r && bytes && errs && i < batch.n; i++)
		if (batch.v[i].len == np_host_isa->trap_len)
			r[n] = batch.v[i].r, bytes[n++] = batch.v[i].bytes;
	if (n)
		np_patch_words(r, bytes, n, errs);
	for (size_t i = 0, k = 0; i < batch.n; i++) {
		struct pending *p = &batch.v[i];
		if (p->len != np_host_isa->trap_len)
			p->err = np_patch_region(p->r, p->bytes, p->len, p->move);
		else
			p->err = r && bytes && errs ? errs[k++] : -ENOMEM;
	}
	free(r);
	free(bytes);
	free(errs);
}

static void place_all(void)
{
	if (np_host_isa->breakpoint_first)
		breakpoint_first();
	else
		place_words();
}

void np_batch_flush(void)
{
	if (batch.n == 0)
		return;
	np_qsort(batch.v, batch.n, sizeof(*batch.v), by_start);
	struct np_region **starts = malloc(batch.n * sizeof(*starts));
	for (size_t i = 0; starts && i < batch.n; i++)
		starts[i] = batch.v[i].r;
	/* trampolines first: once an address is in the trap table, a SIGTRAP
	 * there (a late one, from a breakpoint removed before) goes to its
	 * region's trampoline */
	int err = np_codemem_flush();
	if (!err)
		err = starts ? np_trap_table_edit_many(starts, batch.n, NULL, NULL) : -ENOMEM;
	free(starts);
	if (err) {
		for (size_t i = 0; i < batch.n; i++)
			batch.v[i].err = err;
	} else {
		place_all();
	}
	for (size_t i = 0; i < batch.n; i++) { /* a stuck install stays in place */
		struct pending *p = &batch.v[i];
		p->r->queued = false;
		if (p->install && p->stuck) {
			/* what the code holds: removal finds it and restores */
			np_host_isa->emit_trap(p->r->patch);
			np_logf(NP_LOG_WARN, "0x%llx: the jump could not be written (%s): the probe "
					     "stays behind its breakpoint", (unsigned long long)p->r->start,
				strerror(-p->err));
			p->err = 0;
		}
	}
	np_trap_table_edit_many(NULL, 0, done_with, NULL);
	/* the callbacks below may start new work: the batch is empty first */
	struct pending *done = batch.v;
	size_t n = batch.n;
	batch.v = NULL, batch.n = batch.cap = 0;
	for (size_t i = 0; i < n; i++) {
		struct pending *p = &done[i];
		if (p->install && p->err)
			np_region_abandon(p->r, p->err, batch.failed);
		else if (!p->install && !p->err)
			np_region_forget(p->r);
		else if (!p->install && !batch.removal_err)
			batch.removal_err = p->err;
	}
	free(done);
}

int np_batch_end(void)
{
	if (--batch.depth > 0)
		return 0;
	np_batch_flush();
	np_codemem_flush(); /* trampolines whose regions went nowhere */
	np_codemem_stage(false);
	return batch.removal_err;
}

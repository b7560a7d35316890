/* SPDX-License-Identifier: MIT */
/*
 * Reclaiming retired trampolines.
 *
 * A trampoline (or out-of-line copy) is retired once no jump, breakpoint
 * or trap-table entry leads to it any more, but a thread may still be in
 * it: preempted in its save code, running its handlers, returning into it
 * (x86-64's return point of a return-probed call, a handler's return
 * address), or interrupted there by a signal handler of the program's.
 * Its memory waits in limbo until a census finds that no thread can
 * reach it, then goes to a free list that np_codemem_alloc takes from
 * before it maps a new chunk.
 *
 * Why a census is enough (quiescence): a retired trampoline is
 * unreachable from then on, so a thread can refer to it later only if it
 * refers to it now, through its own state: its pc, its registers, a word
 * of the stack it runs on (every return address and every signal frame
 * the kernel pushed lies between its stack pointer and the end of that
 * stack), a frame of its shadow stack (whose slots hold x86-64's return
 * points), or a trap-table entry a SIGTRAP handler is about to follow
 * (published trampolines are looked at here, and a thread inside that
 * handler answers only once it knows where it resumes). So each thread is
 * looked at once, at any moment after the retirement; it need not be held
 * while the others are looked at. Running threads look at themselves in
 * the stop signal's handler (stop.c); a thread blocked in a system call
 * is looked at from here (its state is in memory we share), and its
 * context-switch counts before and after prove it did not run meanwhile.
 *
 * What the census cannot see it does not guess at: a thread running a
 * probe's handlers with no trampoline address found (a handler that
 * switched stacks), a stack not in the map, a signal frame on an
 * alternate stack (the interrupted stack is elsewhere), a thread that
 * blocks the signal or ran while it was judged: then nothing is reclaimed
 * in that census. A word that only looks like a trampoline address keeps
 * that trampoline, which is always safe.
 *
 * Only memory retired during an earlier API call is a candidate: within
 * one, a batch may retire a trampoline before the write that unlinks it.
 * A census runs when memory is wanted and enough waits in limbo: it
 * piggybacks on an attach or a detach that builds a trampoline, never a
 * stop of its own per detach (docs/design.md, "Retiring trampolines").
 */
#include "core/codemem.h"
#include "core/maps.h"
#include "core/nolibc.h"
#include "core/reclaim.h"
#include "core/stop.h"
#include "core/trap.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct span {
	uint64_t at, len;
	unsigned call; /* the API call that retired it */
};

struct spans {
	struct span *v;
	size_t n, cap;
};

static struct spans limbo, freed;
static unsigned call_seq;
static uint64_t eligible_bytes;
static uint64_t failed_at; /* eligible bytes when a census last freed nothing */

static bool spans_add(struct spans *s, struct span x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct span *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return false;
		s->v = v, s->cap = cap;
	}
	s->v[s->n++] = x;
	return true;
}

void np_reclaim_call_begin(void)
{
	call_seq++;
	eligible_bytes = 0;
	for (size_t i = 0; i < limbo.n; i++)
		eligible_bytes += limbo.v[i].len;
}

/* Never handed out again until a census frees it. Out of memory to note
 * it, it is kept for good, as before reclaim existed. */
void np_codemem_retire(uint64_t addr, size_t len)
{
	len = (len + 15) & ~(size_t)15;
	if (!addr || !len)
		return;
	for (size_t i = 0; i < limbo.n; i++)
		if (limbo.v[i].at == addr)
			return; /* retired twice: once is enough */
	spans_add(&limbo, (struct span){addr, len, call_seq});
}

/* --- the census ------------------------------------------------------------- */

#define MAX_CAND 4096
#define MAX_STACK (64ull << 20)

static struct cand {
	uint64_t at, end;
	_Atomic bool busy;
} cand[MAX_CAND];
static size_t ncand;
static struct {
	uint64_t *start, *end; /* the map when the census began */
	int n;
} stacks;
static _Atomic bool unsure;

/* Is word an address in a candidate (marked busy), or in any trampoline
 * memory at all (*seen)? */
__attribute__((no_sanitize("address"))) static void look(uint64_t word, bool *seen)
{
	if (!np_codemem_holds(word))
		return;
	*seen = true;
	size_t lo = 0, hi = ncand;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (word < cand[mid].at)
			hi = mid;
		else if (word >= cand[mid].end)
			lo = mid + 1;
		else {
			atomic_store(&cand[mid].busy, true);
			return;
		}
	}
}

/* The end of the mapping that holds sp, 0 if none did. */
__attribute__((no_sanitize("address"))) static uint64_t stack_end(uint64_t sp)
{
	int lo = 0, hi = stacks.n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (sp < stacks.start[mid])
			hi = mid;
		else if (sp >= stacks.end[mid])
			lo = mid + 1;
		else
			return stacks.end[mid];
	}
	return 0;
}

/* Is the word at 'at' the pc of a signal frame on an alternate stack
 * that interrupted a stack outside [lo, end)? Such a frame lies within
 * the alternate stack its uc_stack records (enabled, and no smaller than
 * sigaltstack allows), which lies in the stack being scanned, and
 * uc_link is 0, and the stack pointer it interrupted is mapped. A word
 * that only looks so makes the census unsure, which is safe (ASan's frame
 * headers on the stack did, before the last two checks). */
__attribute__((no_sanitize("address"))) static bool
frame_from_elsewhere(uint64_t at, uint64_t lo, uint64_t end)
{
	const struct np_uc_shape *s = &np_host_uc_shape;
	uint64_t link, sp;
	stack_t ss;
	if (np_read_user(&link, at + (uint64_t)s->link, sizeof(link)) || link != 0 ||
	    np_read_user(&sp, at + (uint64_t)s->sp, sizeof(sp)) || !sp || (sp >= lo && sp < end) ||
	    np_read_user(&ss, at + (uint64_t)s->stack, sizeof(ss)))
		return false;
	/* sigaltstack refuses a stack under MINSIGSTKSZ (2 KiB on x86-64
	 * and riscv64, 5 KiB on arm64); a disabled one holds no frame */
	uint64_t ss_lo = (uint64_t)(uintptr_t)ss.ss_sp;
	return ss_lo && ss.ss_size >= 2048 && ss_lo <= at && at - ss_lo < ss.ss_size &&
	       ss.ss_size <= end - ss_lo && stack_end(sp) &&
	       !((unsigned)ss.ss_flags & ~(SS_ONSTACK | (1u << 31))) /* SS_AUTODISARM */;
}

/* Every word of [lo, end). */
__attribute__((no_sanitize("address"))) static void look_words(uint64_t lo, uint64_t end,
								  bool *seen)
{
	uint64_t words[32];
	lo &= ~(uint64_t)7;
	if (!end || end <= lo || end - lo > MAX_STACK) {
		atomic_store(&unsure, true);
		return;
	}
	for (uint64_t at = lo; at < end; at += sizeof(words)) {
		size_t n = end - at < sizeof(words) ? (end - at) / 8 : 32;
		if (np_read_user(words, at, n * 8)) {
			atomic_store(&unsure, true);
			return;
		}
		for (size_t i = 0; i < n; i++) {
			look(words[i], seen);
			if (words[i] && frame_from_elsewhere(at + 8 * i, lo, end))
				atomic_store(&unsure, true);
		}
	}
}

/* The shadow stack's frames, and whether a thread in a handler had its
 * trampoline in sight. */
__attribute__((no_sanitize("address"))) static void look_block(const struct np_thread *t,
								  bool *seen)
{
	if (!t)
		return;
	uint32_t top = t->shadow_top < NP_SHADOW_DEPTH ? t->shadow_top : NP_SHADOW_DEPTH;
	for (uint32_t i = 0; i < top; i++) {
		look(t->shadow[i].ret, seen);
		look(t->shadow[i].expect, seen);
	}
	if (atomic_load(&t->in_site) && !*seen)
		atomic_store(&unsure, true);
}

/* One thread's state, by itself (all_regs: the registers are known) or
 * from outside while it is blocked (pc and sp only: the rest of its user
 * registers were saved on the way into the kernel, and none of them can
 * hold a trampoline address that is not also on its stack or in its pc,
 * since a trampoline makes no system call before its handlers run). */
__attribute__((no_sanitize("address"))) void
np_reclaim_look(const struct np_regs *regs, bool all_regs, const struct np_thread *t)
{
	bool seen = false;
	uint64_t sp = regs->gpr[np_host_isa->sp_reg];
	look(regs->pc, &seen);
	for (int i = 0; all_regs && i < NP_NGPR; i++)
		look(regs->gpr[i], &seen);
	look_words(sp, stack_end(sp), &seen);
	look_block(t, &seen);
}

/* A thread whose stack pointer is unknown (a guest thread waiting in a
 * system call under qemu-user): all of its stack, [lo, end), dead words
 * too, which only keeps more. */
__attribute__((no_sanitize("address"))) void
np_reclaim_look_stack(uint64_t lo, uint64_t end, const struct np_thread *t)
{
	bool seen = false;
	look_words(lo, end, &seen);
	look_block(t, &seen);
}

void np_reclaim_unsure(void)
{
	atomic_store(&unsure, true);
}

static void published(uint64_t tramp, void *cookie)
{
	bool *seen = cookie;
	look(tramp, seen);
}

static int by_at(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* The candidates: memory retired before this API call, sorted. */
static void take_candidates(void)
{
	ncand = 0;
	np_qsort(limbo.v, limbo.n, sizeof(limbo.v[0]), by_at);
	for (size_t i = 0; i < limbo.n && ncand < MAX_CAND; i++)
		if (limbo.v[i].call != call_seq) {
			cand[ncand].at = limbo.v[i].at;
			cand[ncand].end = limbo.v[i].at + limbo.v[i].len;
			atomic_store(&cand[ncand].busy, false);
			ncand++;
		}
}

static int map_stacks(void)
{
	np_maps_invalidate();
	const struct np_maps *m = np_maps_cached();
	if (!m)
		return -ENOMEM;
	stacks.start = malloc(sizeof(uint64_t) * (size_t)(m->n ? m->n : 1));
	stacks.end = malloc(sizeof(uint64_t) * (size_t)(m->n ? m->n : 1));
	if (!stacks.start || !stacks.end)
		return -ENOMEM;
	for (int i = 0; i < m->n; i++)
		stacks.start[i] = m->v[i].start, stacks.end[i] = m->v[i].end;
	stacks.n = m->n;
	return 0;
}

static void unmap_stacks(void)
{
	stacks.n = 0;
	free(stacks.start);
	free(stacks.end);
	stacks.start = stacks.end = NULL;
}

/* Was the candidate holding addr found free? */
static bool freed_now(uint64_t addr, void *cookie)
{
	(void)cookie;
	size_t lo = 0, hi = ncand;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < cand[mid].at)
			hi = mid;
		else if (addr >= cand[mid].end)
			lo = mid + 1;
		else
			return !atomic_load(&cand[mid].busy);
	}
	return false;
}

/* Free spans in address order, neighbours merged: a trampoline larger
 * than the ones freed around it fits in their union. */
static void coalesce(void)
{
	size_t k = 0;
	np_qsort(freed.v, freed.n, sizeof(freed.v[0]), by_at);
	for (size_t i = 0; i < freed.n; i++) {
		if (k && freed.v[k - 1].at + freed.v[k - 1].len == freed.v[i].at)
			freed.v[k - 1].len += freed.v[i].len;
		else
			freed.v[k++] = freed.v[i];
	}
	freed.n = k;
}

/* Candidates found free leave limbo for the free list, and their landing
 * records go (none is left where a thread could be). Out of memory for
 * the list, a candidate stays in limbo. */
static size_t release_free(void)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < limbo.n; i++) {
		struct span s = limbo.v[i];
		if (s.call == call_seq || !freed_now(s.at, NULL) || !spans_add(&freed, s)) {
			limbo.v[k++] = s;
			continue;
		}
		n += s.len;
	}
	limbo.n = k;
	np_codemem_forget_tramps(freed_now, NULL);
	coalesce();
	return n;
}

/* A census, when it may free something. Engine lock held. */
static size_t census(void)
{
	take_candidates();
	if (!ncand)
		return 0;
	atomic_store(&unsure, false);
	bool seen = false;
	np_trap_each_published(published, &seen);
	int err = map_stacks();
	if (!err)
		err = np_threads_census();
	unmap_stacks();
	size_t busy = 0;
	for (size_t i = 0; i < ncand; i++)
		busy += atomic_load(&cand[i].busy);
	np_logf(NP_LOG_DEBUG, "census of %zu retired trampolines: %zu still reachable%s%s", ncand,
		busy, err ? ", the threads could not all be asked" : "",
		atomic_load(&unsure) ? ", a thread could not be judged" : "");
	if (err || atomic_load(&unsure))
		return 0;
	return release_free();
}

/* Retired memory worth a census: a sixteenth of a chunk (on x86-64 some
 * forty detaches, each of which asks the threads already; a census asks
 * each once). After one that freed nothing (a thread was in a handler of
 * its own at the time, say), a little more, so that what waits stays
 * near that. */
static bool census_due(uint64_t chunk)
{
	uint64_t waiting = eligible_bytes;
	return waiting >= chunk / 16 && waiting >= failed_at + chunk / 64;
}

/* Freed memory of len bytes for which fits() says yes; 0 if none, after
 * a census if one is due. */
uint64_t np_reclaim_take(size_t len, bool (*fits)(uint64_t at, size_t len, void *cookie),
			 void *cookie, uint64_t chunk)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < freed.n; i++) {
			struct span *s = &freed.v[i];
			if (s->len < len || !fits(s->at, len, cookie))
				continue;
			uint64_t at = s->at;
			s->at += len, s->len -= len;
			if (!s->len)
				freed.v[i] = freed.v[--freed.n];
			return at;
		}
		if (pass || !census_due(chunk))
			break;
		size_t got = census();
		eligible_bytes -= got < eligible_bytes ? got : eligible_bytes;
		failed_at = got ? 0 : eligible_bytes;
		if (!got)
			break;
	}
	return 0;
}

/* For tests: bytes waiting in limbo, and free for reuse. */
void np_reclaim_stats(uint64_t *in_limbo, uint64_t *free_bytes)
{
	uint64_t l = 0, f = 0;
	for (size_t i = 0; i < limbo.n; i++)
		l += limbo.v[i].len;
	for (size_t i = 0; i < freed.n; i++)
		f += freed.v[i].len;
	*in_limbo = l, *free_bytes = f;
}

/* SPDX-License-Identifier: MIT */
/*
 * The shadow stack: where a return probe keeps each armed call's real
 * return address until the call returns.
 *
 * At an entry the call's frame is pushed: the real return address, the
 * *slot* (x86-64: the stack word that held it, which now holds the return
 * trampoline; arm64, riscv64: the entry stack pointer, the return address
 * being a register), the site and what the slot was made to hold
 * (`expect`). At a return the frame whose slot matches the returning
 * call's is found and taken off. In a program whose calls all return,
 * that frame is the newest, and the x86-64 trampolines push and pop it
 * inline.
 *
 * Calls do not all return. longjmp, siglongjmp, a C++ exception, thread
 * cancellation leave frames behind that no return will ever take off:
 * after 16,384 of them the thread's stack would be full. And threads do
 * not all keep one stack: a coroutine switched out by swapcontext (or by
 * a hand-written switcher), a signal handler on its alternate stack, leave
 * frames of one stack under frames of another, so the newest frame is not
 * the next to return, and a frame whose slot lies below the current stack
 * pointer may be alive on another stack. Dropping such a frame loses the
 * address its call must return to, and nothing can make that good. So a
 * frame is dropped only when it is proven dead, by one of:
 *
 *   same slot   a new call keeps its return address where an older frame
 *               kept its own, and that return address is not the older
 *               frame's trampoline (which a tail call from it would have
 *               inherited): two live calls cannot share the word, so the
 *               older call is gone. Holds on every stack.
 *   content     x86-64 only: while a call is live its slot holds what its
 *               frame put there, until the call returns through it; a
 *               slot that holds something else, or cannot be read (a
 *               coroutine's stack unmapped), belongs to a dead frame.
 *               arm64 and riscv64 keep the return address in a register
 *               at the entry and spill it where the function chooses:
 *               there is no slot to look at.
 *   stack order on the thread's own stack, whose bounds the control path
 *               learns from /proc/self/maps, a frame whose slot lies below
 *               the stack position the thread is at now is dead, as the
 *               kernel's uretprobes judge (arch_uretprobe_is_alive).
 *               Only while both lie on that stack, and only for frames
 *               pushed since the thread last called swapcontext or
 *               setcontext: a coroutine stack carved out of the thread's
 *               own (a local array) lies inside its bounds.
 *
 * When: at an entry, for the frames on top whose slot is at or below the
 * new one (x86-64's inline arm leaves such pushes to C); at a return from
 * below the top, for the frames above the returning one; when the stack
 * is full, for all of them, the same-slot proof over the frames sorted by
 * slot, once per fill. A frame that returns under frames kept above it
 * leaves a hole (slot 0), removed once it is on top or at a compaction.
 * What cannot be proven dead stays: the cost is room, and when none is
 * left, returns on that thread are counted missed rather than risked.
 *
 * Unwinders (a C++ throw, pthread_exit, backtrace) walk the stack by
 * return address and must never meet a trampoline: unwind.c calls
 * np_shadow_unwind first, which writes the real return address back where
 * each frame at or above the current stack position keeps it now.
 */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "core/shadow.h"
#include "core/thread.h"
#include "host/host.h"
#include "host/layout.h"

static atomic_bool disarmed;
static _Atomic uint64_t why_no_thread[NP_MISS_REASONS];

void np_miss_why(struct np_thread *t, enum np_miss_reason why)
{
	if (t)
		np_bump(&t->sh.why[why]);
	else
		atomic_fetch_add(&why_no_thread[why], 1);
}

void np_miss_one(struct np_thread *t, const struct np_handler *h, enum np_miss_reason why)
{
	bool reason = !h->probe->internal;
	if (t) {
		np_bump(&t->missed[h->slot]);
		if (reason)
			np_bump(&t->sh.why[why]);
	} else {
		atomic_fetch_add(&h->probe->missed_global, 1);
		if (reason)
			atomic_fetch_add(&why_no_thread[why], 1);
	}
}

void np_miss_list(struct np_thread *t, const struct np_hlist *l, bool ret, enum np_miss_reason why)
{
	for (uint32_t i = 0; l && i < l->n; i++)
		if (!ret || l->h[i].on_return)
			np_miss_one(t, &l->h[i], why);
}

uint64_t np_miss_no_thread(enum np_miss_reason why)
{
	return atomic_load(&why_no_thread[why]);
}

/* --- proofs --------------------------------------------------------------- */

static bool home(const struct np_thread *t, uint64_t a)
{
	return np_stack_home(t, a);
}

/* Stack order: frame i's slot lies below pos, the position the thread is
 * at now, both on the thread's own stack, since its last switch. */
static bool below(const struct np_thread *t, uint32_t i, uint64_t slot, uint64_t pos)
{
	return slot < pos && i >= t->sh.switch_floor && home(t, pos) && home(t, slot);
}

/* Content (x86-64): the slot no longer holds what the frame put there. */
static bool changed(const struct np_shadow_frame *f)
{
	uint64_t w;
	if (!np_host_ret_in_memory())
		return false;
	return !np_uread_quiet(&w, f->slot, sizeof(w)) || np_host_ret_strip(w) != f->expect;
}

/* Same slot: a call entering with return address ret at frame f's slot
 * proves f returned (or was left), unless ret is f's trampoline (a tail
 * call inherited it). Where the return address lives in the slot
 * (x86-64) that is all. On arm64 and riscv64 the slot is the entry sp,
 * and a function may keep its return address in a register and call at
 * that same sp (glibc's arm64 __rawmemchr: mov x15, x30; bl strlen;
 * ret x15): a call whose return address lies inside f's own function is
 * f calling, alive under it, and proves nothing; one from elsewhere
 * proves f dead as on x86-64. Where f's bounds are unknown, nothing is
 * proven. */
static bool same_slot_dead(const struct np_shadow_frame *f, uint64_t ret)
{
	ret = np_host_ret_strip(ret);
	if (ret == f->expect)
		return false;
	if (np_host_ret_in_memory())
		return true;
	const struct np_site *s = f->site;
	uint64_t start = s->addr - s->pad_len;
	return s->func_end > s->addr && !(ret >= start && ret < s->func_end);
}

/* --- taking frames off ------------------------------------------------------- */

/* Frame f will never return through its trampoline: its return handlers
 * miss, and it becomes a hole. */
static void leave(struct np_thread *t, struct np_shadow_frame *f, enum np_miss_reason why)
{
	struct np_site *site = f->site;
	if (site && site->live && site->gen == f->gen)
		np_miss_list(t, atomic_load_explicit(&site->list, memory_order_acquire), true, why);
	f->slot = 0;
	f->site = NULL;
	f->data = 0;
}

/* Holes off the top. */
static void trim(struct np_thread *t)
{
	while (t->shadow_top > 0 && t->shadow[t->shadow_top - 1].slot == 0)
		t->shadow_top--;
}

/* Holes out of [from, top), the frames kept in their order. */
static void squeeze(struct np_thread *t, uint32_t from)
{
	uint32_t to = from;
	for (uint32_t i = from; i < t->shadow_top; i++) {
		if (t->shadow[i].slot == 0)
			continue;
		if (to != i) {
			t->shadow[to] = t->shadow[i];
			t->shadow[i].data = 0; /* above the top, data reads 0 */
		}
		to++;
	}
	t->shadow_top = to;
}

/* A frame pushed before a switch of stacks may have been popped since:
 * the floor follows the top down. */
static void settle_floor(struct np_thread *t)
{
	if (t->sh.switch_floor > t->shadow_top)
		t->sh.switch_floor = t->shadow_top;
}

/* Indices of the frames (holes left out) with slot >= lo in order[],
 * sorted by slot, then by index (heapsort: no recursion, no memory). */
static bool before(const struct np_thread *t, uint16_t a, uint16_t b)
{
	uint64_t sa = t->shadow[a].slot, sb = t->shadow[b].slot;
	return sa < sb || (sa == sb && a < b);
}

static void sift(struct np_thread *t, uint32_t at, uint32_t n)
{
	uint16_t *o = t->sh.order;
	for (uint32_t child; (child = 2 * at + 1) < n; at = child) {
		if (child + 1 < n && before(t, o[child], o[child + 1]))
			child++;
		if (!before(t, o[at], o[child]))
			return;
		uint16_t x = o[at];
		o[at] = o[child];
		o[child] = x;
	}
}

static uint32_t sorted(struct np_thread *t, uint64_t lo)
{
	uint16_t *o = t->sh.order;
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->shadow_top; i++)
		if (t->shadow[i].slot != 0 && t->shadow[i].slot >= lo)
			o[n++] = (uint16_t)i;
	for (uint32_t i = n / 2; i-- > 0;)
		sift(t, i, n);
	for (uint32_t end = n; end > 1; end--) {
		uint16_t x = o[0];
		o[0] = o[end - 1];
		o[end - 1] = x;
		sift(t, 0, end - 1);
	}
	return n;
}

/* Same slot, over the whole stack: of two frames with one slot, the older
 * is dead unless the newer is alive and inherited its trampoline as its
 * return address (a tail call). */
static void same_slot(struct np_thread *t)
{
	uint32_t n = sorted(t, 1);
	uint16_t *o = t->sh.order;
	for (uint32_t end = n; end > 0;) {
		uint32_t start = end - 1;
		while (start > 0 && t->shadow[o[start - 1]].slot == t->shadow[o[end - 1]].slot)
			start--;
		/* o[start..end): one slot, oldest first */
		for (uint32_t k = end - 1; k > start; k--) {
			struct np_shadow_frame *newer = &t->shadow[o[k]], *older = &t->shadow[o[k - 1]];
			if (newer->slot == 0 || same_slot_dead(older, newer->ret))
				leave(t, older, NP_MISS_LEFT);
		}
		end = start;
	}
}

/* A full stack: every frame that can be proven dead is dropped, for a
 * call entering at slot pos. False when none could be: then the top frame
 * is remembered, and the pushes that find the same top do not look again
 * (a recursion deeper than the stack would scan it on every call). */
static bool compact(struct np_thread *t, uint64_t pos)
{
	const struct np_shadow_frame *last = &t->shadow[t->shadow_top - 1];
	if (last->slot == t->sh.full_slot && last->ret == t->sh.full_ret)
		return false;
	for (uint32_t i = 0; i < t->shadow_top; i++) {
		struct np_shadow_frame *f = &t->shadow[i];
		if (f->slot != 0 && (below(t, i, f->slot, pos) || changed(f)))
			leave(t, f, NP_MISS_LEFT);
	}
	same_slot(t);
	squeeze(t, 0);
	if (t->shadow_top < NP_SHADOW_DEPTH)
		return true;
	t->sh.full_slot = t->shadow[t->shadow_top - 1].slot;
	t->sh.full_ret = t->shadow[t->shadow_top - 1].ret;
	return false;
}

/* --- entry ------------------------------------------------------------------- */

/* How many frames under the top an entry looks through for one with its
 * slot (a longjmp from a few calls deep leaves that many above it). */
#define SAME_SLOT_REACH 16

/* A call enters with its return address ret at slot pos: the frames on
 * top at or below pos that are proven dead come off. Those above pos are
 * left: on this stack they are the callers, alive. Where one stays that
 * nothing proves dead, a frame a little deeper that had this slot still
 * is (same slot): it comes off, the frames above it stay (they may be on
 * another stack). A loop that jumps out from the same depth each time
 * leaves no more than one round behind. */
static void reclaim(struct np_thread *t, uint64_t pos, uint64_t ret)
{
	while (t->shadow_top > 0) {
		uint32_t i = t->shadow_top - 1;
		struct np_shadow_frame *f = &t->shadow[i];
		if (f->slot != 0) {
			if (f->slot > pos)
				return;
			bool dead = f->slot == pos ? same_slot_dead(f, ret)
						   : below(t, i, f->slot, pos) || changed(f);
			if (!dead)
				break;
			leave(t, f, NP_MISS_LEFT);
		}
		t->shadow_top = i;
	}
	uint32_t floor = t->shadow_top > SAME_SLOT_REACH ? t->shadow_top - SAME_SLOT_REACH : 0;
	for (uint32_t i = t->shadow_top; i-- > floor;) {
		struct np_shadow_frame *f = &t->shadow[i];
		if (f->slot != pos)
			continue;
		if (same_slot_dead(f, ret))
			leave(t, f, NP_MISS_LEFT); /* a hole, squeezed out when full */
		return;
	}
}

void np_shadow_push(struct np_thread *t, struct np_ctx *ctx, struct np_site *site,
		    const struct np_hlist *l)
{
	uint64_t pos = np_host_ret_slot(ctx), ret = np_host_ret_strip(np_host_ret_get(ctx));
	uint64_t data = 0;
	if (t->shadow_top < NP_SHADOW_DEPTH) { /* what the entry handlers left */
		data = t->shadow[t->shadow_top].data;
		t->shadow[t->shadow_top].data = 0;
	}
	if (atomic_load_explicit(&disarmed, memory_order_relaxed)) {
		np_miss_list(t, l, true, NP_MISS_UNGUARDED);
		return;
	}
	settle_floor(t);
	reclaim(t, pos, ret);
	if (t->shadow_top >= NP_SHADOW_DEPTH && !compact(t, pos)) {
		np_miss_list(t, l, true, NP_MISS_SHADOW_FULL);
		return;
	}
	struct np_shadow_frame *f = &t->shadow[t->shadow_top];
	f->ret = ret;
	f->slot = pos;
	f->site = site;
	f->gen = site->gen;
	f->expect = np_host_ret_trampoline(site->fpu != NP_FPU_NONE);
	f->flags = site->ret_pac | (site->fpu != NP_FPU_NONE ? NP_RET_FPU : 0);
	f->data = data;
	t->shadow_top++;
	np_host_ret_set(ctx, f->expect);
}

/* --- return ------------------------------------------------------------------ */

/* Where a frame's call was to return, the frame taken off: what follows
 * a frame that cannot be found, which only a program the shadow stack
 * cannot follow leads to (a coroutine resumed on another thread than the
 * one it was suspended on, or a switcher that copies stacks in and out
 * of one place): no address is known to go to. */
static void __attribute__((noreturn)) lost(uint64_t key)
{
	static const char msg[] = "nanoprobe: a call under a return probe returned, but no frame "
				  "of this thread holds its return address (a coroutine resumed on "
				  "another thread, or a stack copied back in?); aborting\n";
	(void)key;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	abort();
}

/* The frames above the one at index at, which returns: those proven dead
 * come off, the others (alive on another stack) stay, and so does the
 * returning frame's place, as a hole. */
static void settle_above(struct np_thread *t, uint32_t at, uint64_t key)
{
	for (uint32_t i = at + 1; i < t->shadow_top; i++) {
		struct np_shadow_frame *f = &t->shadow[i];
		if (f->slot != 0 && (below(t, i, f->slot, key) || changed(f)))
			leave(t, f, NP_MISS_LEFT);
	}
	squeeze(t, at);
	trim(t);
}

static void run_return_handlers(struct np_thread *t, struct np_ctx *ctx,
				const struct np_shadow_frame *f)
{
	struct np_site *site = f->site;
	if (atomic_load_explicit(&t->in_site, memory_order_relaxed)) {
		if (site->gen == f->gen)
			np_miss_list(t, atomic_load_explicit(&site->list, memory_order_acquire), true,
				     NP_MISS_NESTED);
		return;
	}
	atomic_store_explicit(&t->in_site, site, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	const struct np_hlist *l = atomic_load_explicit(&site->list, memory_order_acquire);
	if (__atomic_load_n(&site->gen, __ATOMIC_RELAXED) != f->gen)
		l = NULL; /* detached while the call was in flight */
	ctx->site = site;
	t->ret_data = f->data;
	bool fpu_saved = f->flags & NP_RET_FPU;
	for (uint32_t i = 0; l && i < l->n; i++) {
		if (!l->h[i].on_return)
			continue;
		if (np_handler_may_run(&l->h[i], fpu_saved))
			l->h[i].on_return(ctx, l->h[i].data);
		else
			np_miss_one(t, &l->h[i], NP_MISS_VECTOR);
	}
	atomic_store_explicit(&t->in_site, NULL, memory_order_release);
}

/* Called by the return trampolines: this call's real return address into
 * regs.pc, its frame off the stack, its return handlers run. */
void np__ret_dispatch(struct np_ctx *ctx)
{
	np_ctx_claim(ctx);
	struct np_thread *t = np_thread_peek();
	uint64_t key = np_host_ret_key(ctx);
	uint32_t i = t ? t->shadow_top : 0;

	while (i > 0 && t->shadow[i - 1].slot != key)
		i--;
	if (i == 0 || key == 0)
		lost(key);
	const struct np_shadow_frame f = t->shadow[--i];
	t->shadow[i].slot = 0; /* a hole until squeezed out */
	t->shadow[i].site = NULL;
	t->shadow[i].data = 0;
	settle_floor(t);
	settle_above(t, i, key);
	ctx->kind = NP_CTX_RETURN | (ctx->kind & ~0xffu);
	ctx->regs.pc = f.ret;
	ctx->redirect = 1;
	run_return_handlers(t, ctx, &f);
	ctx->regs.pc = f.ret; /* a return handler cannot change where we go */
}

/* --- unwinders ----------------------------------------------------------------- */


/* How far below a frame's entry sp its spilled return address is looked
 * for (arm64, riscv64): a frame of 64 KiB of locals with its frame record
 * at the bottom would be missed. */
#define SPILL_REACH (64u << 10)

/* Where a frame keeps its return address now, if it can be found: the
 * slot on x86-64. Where it was a register at the entry (arm64 x30,
 * riscv64 ra), the function spilled it when it made the call that led
 * here, into its own frame: between its entry sp (the slot) and lo, the
 * entry sp of the next frame below it. Scanning down from the slot, the
 * first word that holds the frame's trampoline is that spill: its own
 * frame comes before any deeper one. Fault-safe: lo may lie on another
 * stack. */
static uint64_t ret_now(const struct np_shadow_frame *f, uint64_t lo)
{
	uint64_t buf[64];
	if (np_host_ret_in_memory())
		return np_uread_quiet(buf, f->slot, 8) && np_host_ret_strip(buf[0]) == f->expect
			       ? f->slot : 0;
	uint64_t end = f->slot & ~(uint64_t)7;
	if (f->slot > SPILL_REACH && lo < f->slot - SPILL_REACH)
		lo = f->slot - SPILL_REACH;
	lo = (lo + 7) & ~(uint64_t)7;
	while (end > lo) {
		uint64_t start = end - lo > sizeof(buf) ? end - sizeof(buf) : lo;
		size_t n = (end - start) / 8;
		if (!np_uread_quiet(buf, start, n * 8))
			return 0;
		for (size_t k = n; k-- > 0;)
			if (np_host_ret_strip(buf[k]) == f->expect)
				return start + 8 * k;
		end = start;
	}
	return 0;
}

/* Into another function's frame, a word a sanitizer knows nothing of. */
__attribute__((no_sanitize("address"))) static void put_word(uint64_t at, uint64_t value)
{
	*(volatile uint64_t *)(uintptr_t)at = value;
}

/* An unwinder starts at stack position pos (its entry sp: not where this
 * code runs, which may be a signal stack, the breakpoint's): every frame
 * at or above pos that may be walked gets its real return address back
 * where it lives now, highest first (each then takes its own spill before
 * a lower frame's scan can reach it), and comes off (its return will not
 * come through the trampoline). Frames whose return address cannot be
 * found stay: alive on another stack, or a leaf interrupted by a signal. */
void np_shadow_unwind(struct np_thread *t, uint64_t pos)
{
	uint32_t n = sorted(t, pos);
	uint16_t *o = t->sh.order;
	for (uint32_t k = n; k-- > 0;) {
		struct np_shadow_frame *f = &t->shadow[o[k]];
		uint64_t lo = k ? t->shadow[o[k - 1]].slot : pos;
		uint64_t at = ret_now(f, lo);
		if (at) {
			put_word(at, np_host_ret_sign(f->ret, f->slot, f->flags & NP_RET_PAC));
			leave(t, f, NP_MISS_UNWOUND);
		} else if (changed(f)) {
			leave(t, f, NP_MISS_LEFT);
		}
	}
	squeeze(t, 0);
	settle_floor(t);
}

void np_shadow_switch(struct np_thread *t)
{
	t->sh.switch_floor = t->shadow_top;
}

/* --- per thread ------------------------------------------------------------------ */


void np_shadow_reset(struct np_thread *t, bool claimed)
{
	t->shadow_top = 0;
	t->sh.switch_floor = 0;
	t->sh.full_slot = t->sh.full_ret = 0;
	atomic_store_explicit(&t->shadow_limit,
			      atomic_load(&disarmed) ? 0 : NP_SHADOW_DEPTH, memory_order_relaxed);
	if (!claimed) {
		atomic_store(&t->sh.home_ok, 0);
	}
}

bool np_shadow_disarmed(void)
{
	return atomic_load(&disarmed);
}

static void limit_zero(struct np_thread *t, void *cookie)
{
	(void)cookie;
	atomic_store(&t->shadow_limit, 0);
}

void np_shadow_disarm(const char *why)
{
	if (atomic_exchange(&disarmed, true))
		return;
	np_thread_each(limit_zero, NULL);
	np_logf(NP_LOG_WARN, "return probes are off from now on: %s", why);
}

/* --- call data ---------------------------------------------------------------------- */

/* The entry handlers write the frame about to be pushed (when the site has
 * return handlers and the stack has room); return handlers read the copy
 * taken when their frame was popped. */
NP_API uint64_t *np_ctx_call_data(struct np_ctx *ctx)
{
	struct np_thread *t = np_thread_peek();
	if (!t)
		return NULL;
	if (NP_CTX_KIND(ctx) == NP_CTX_RETURN)
		return &t->ret_data;
	const struct np_hlist *l = atomic_load_explicit(&ctx->site->list, memory_order_acquire);
	if (!l || !l->nret || t->shadow_top >= NP_SHADOW_DEPTH)
		return NULL;
	return &t->shadow[t->shadow_top].data;
}

void np_thread_drop_call_data(struct np_ctx *ctx)
{
	uint64_t *data = NP_CTX_KIND(ctx) == NP_CTX_ENTRY ? np_ctx_call_data(ctx) : NULL;
	if (data)
		*data = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state and the hit path.
 *
 * A hit must not lock, allocate or make a syscall, yet it needs per-thread
 * storage: a recursion guard, counters that several threads bump without
 * atomic read-modify-writes (a `lock add` alone costs more than our whole
 * budget), and a shadow stack for return probes. So each thread claims a
 * block from a pool on its first hit (one gettid, once in its life) and
 * keeps it in initial-exec TLS. The control path stocks the pool with
 * spare blocks and reclaims the blocks of threads that have exited.
 *
 * A probe's hit count is the sum of its slot over all blocks, minus what
 * the slot held when the probe was attached; a reclaimed block keeps its
 * counters, so sums stay exact across thread exit and block reuse.
 *
 * Detach relies on an asymmetric barrier: the hit path stores in_site and
 * then loads the site's handler list with only a compiler barrier between;
 * the detacher publishes the new list, runs membarrier() (a full barrier on
 * every running thread) and then waits for in_site to leave the site.
 */
#include "core/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SEG_BLOCKS 64
#define MAX_SEGS 64

static __thread struct np_thread *np_tls_self __attribute__((tls_model("initial-exec")));

struct segment {
	struct np_thread *blocks;
	_Atomic uint64_t free_mask; /* bit set: block free */
	uint64_t used_mask;         /* ever claimed (control path view) */
};

static struct segment segs[MAX_SEGS];
static _Atomic int nsegs;

/* Grows the pool by a segment. Called by the control path, and by a
 * thread whose first hit finds the pool empty (a burst of new threads):
 * one mmap, async-signal-safe, one grower at a time (-EAGAIN for the
 * others, who then look again). 'growing' holds the grower's tid. */
static _Atomic int growing;

static int gettid_raw(void)
{
	return (int)np_host_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

static int segment_add(void)
{
	int idle = 0;
	if (!atomic_compare_exchange_strong(&growing, &idle, gettid_raw()))
		return -EAGAIN;
	int n = atomic_load(&nsegs), err = 0;
	/* raw: this may run on a thread's first hit (see np_host_syscall) */
	long mem = n < MAX_SEGS ? np_host_syscall(SYS_mmap, 0, SEG_BLOCKS * sizeof(struct np_thread),
						  PROT_READ | PROT_WRITE,
						  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
				: -ENOSPC;
	if (mem < 0 && mem > -4096) {
		err = (int)mem;
	} else {
		segs[n].blocks = (struct np_thread *)mem;
		for (unsigned i = 0; i < SEG_BLOCKS; i++)
			segs[n].blocks[i].index = n * SEG_BLOCKS + i;
		atomic_store(&segs[n].free_mask, ~0ull);
		atomic_store(&nsegs, n + 1); /* publish after the segment is ready */
	}
	atomic_store(&growing, 0);
	return err;
}

static struct np_thread *claim_from_pool(void);

/* A thread's first hit: a block from the pool, which grows if it must.
 * While another thread grows it (one mmap), wait for that to finish, however
 * long a loaded machine takes to schedule it: a bounded wait lost hits
 * (seen under ASan with hundreds of threads appearing). Only a grower
 * interrupted by a signal whose handler needs a block gives up. */
static struct np_thread *claim(void)
{
	/* a vfork child: this TLS is its parent thread's, which must not get
	 * a block under the child's tid (the block would go back to the pool
	 * once the child is gone, while the parent thread still used it) */
	if (np_fork_shares_memory())
		return NULL;
	for (;;) {
		struct np_thread *t = claim_from_pool();
		if (t)
			return t;
		int err = segment_add();
		if (err && err != -EAGAIN)
			return NULL; /* out of memory or of segments: counted missed */
		if (err && atomic_load(&growing) == gettid_raw())
			return NULL; /* we are the grower, interrupted */
		if (err)
			np_host_syscall(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	}
}

static struct np_thread *claim_from_pool(void)
{
	int n = atomic_load_explicit(&nsegs, memory_order_acquire);
	for (int s = 0; s < n; s++) {
		uint64_t mask = atomic_load(&segs[s].free_mask);
		while (mask) {
			int bit = __builtin_ctzll(mask);
			if (atomic_compare_exchange_weak(&segs[s].free_mask, &mask,
							 mask & ~(1ull << bit))) {
				struct np_thread *t = &segs[s].blocks[bit];
				t->tid = gettid_raw();
				t->shadow_top = 0;
				atomic_store(&t->in_site, NULL);
				return t;
			}
		}
	}
	return NULL;
}

struct np_thread *np_thread_self(void)
{
	struct np_thread *t = np_tls_self;
	if (__builtin_expect(t != NULL, 1))
		return t;
	t = claim();
	np_tls_self = t;
	return t;
}

struct np_thread *np_thread_peek(void)
{
	return np_tls_self;
}

struct np_thread **np_thread_tls_slot(void)
{
	return &np_tls_self;
}

/* The threads of the process, read with getdents64 into a buffer on the
 * stack: this runs on every maintenance tick (np_maintain), and opendir's
 * 32 KiB buffer came from the allocator the program shares with us (under
 * ASan one heap for all threads, so the program's addresses, and with them
 * its pointer-keyed hashing, moved with the number of ticks). */
static int count_tasks(void)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int n = 0;
	char buf[4096] __attribute__((aligned(8)));
	long len;
	while (fd >= 0 && (len = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long at = 0; at < len;) {
			const struct dirent64 *e = (const struct dirent64 *)(buf + at);
			n += e->d_name[0] != '.';
			at += e->d_reclen;
		}
	if (fd >= 0)
		close(fd);
	return n;
}

/* Control path: return the blocks of exited threads; keep a spare for
 * every thread that has none yet, and half a segment more, so that each
 * thread of the program finds one on its first hit. */
void np_thread_pool_stock(void)
{
	int n = atomic_load(&nsegs), spare = 0, used = 0;
	pid_t pid = getpid();
	for (int s = 0; s < n; s++) {
		uint64_t freem = atomic_load(&segs[s].free_mask);
		for (unsigned i = 0; i < SEG_BLOCKS; i++) {
			struct np_thread *t = &segs[s].blocks[i];
			if (freem & (1ull << i)) {
				spare++;
				continue;
			}
			if (syscall(SYS_tgkill, pid, t->tid, 0) < 0 && errno == ESRCH) {
				/* gone, perhaps inside a handler (pthread_exit) */
				atomic_store(&t->in_site, NULL);
				t->shadow_top = 0;
				atomic_fetch_or(&segs[s].free_mask, 1ull << i);
				spare++;
			} else {
				used++;
			}
		}
	}
	int untracked = count_tasks() - used;
	int want = (untracked > 0 ? untracked : 0) + SEG_BLOCKS / 2;
	for (; spare < want && segment_add() == 0; spare += SEG_BLOCKS)
		;
}

/* In a forked child: the forking thread keeps its block (under its new
 * tid), with the handler it may be running and its shadow stack. The
 * other threads are not there: their blocks go back to the pool at once,
 * counters kept, so that no detach waits for a handler one of them was
 * running at the fork, and no stock() of the child's takes their tids
 * (the parent's) for threads of its own. A thread that was growing the
 * pool is not there either. */
void np_thread_after_fork(void)
{
	struct np_thread *self = np_tls_self;
	int n = atomic_load(&nsegs);
	atomic_store(&growing, 0);
	for (int s = 0; s < n; s++)
		for (unsigned i = 0; i < SEG_BLOCKS; i++) {
			struct np_thread *t = &segs[s].blocks[i];
			if (t == self)
				continue;
			atomic_store(&t->in_site, NULL);
			t->shadow_top = 0;
			atomic_fetch_or(&segs[s].free_mask, 1ull << i);
		}
	if (self)
		self->tid = gettid_raw();
}

int np_thread_pool_init(void)
{
	return segment_add();
}

static uint64_t sum_slot(size_t field_off, uint32_t slot)
{
	uint64_t sum = 0;
	int n = atomic_load(&nsegs);
	for (int s = 0; s < n; s++)
		for (unsigned i = 0; i < SEG_BLOCKS; i++) {
			uint64_t *arr = (uint64_t *)((char *)&segs[s].blocks[i] + field_off);
			sum += __atomic_load_n(&arr[slot], __ATOMIC_RELAXED);
		}
	return sum;
}

uint64_t np_thread_sum_hits(uint32_t slot)
{
	return sum_slot(offsetof(struct np_thread, hits), slot);
}

uint64_t np_thread_sum_missed(uint32_t slot)
{
	return sum_slot(offsetof(struct np_thread, missed), slot);
}

void np_thread_wait_site(const struct np_site *site)
{
	int n = atomic_load(&nsegs);
	for (int s = 0; s < n; s++)
		for (unsigned i = 0; i < SEG_BLOCKS; i++) {
			struct np_thread *t = &segs[s].blocks[i];
			if (t == np_tls_self)
				continue;
			for (unsigned spin = 0;
			     atomic_load_explicit(&t->in_site, memory_order_acquire) == site; spin++)
				if (spin < 1000)
					NP_CPU_RELAX();
				else
					sched_yield();
		}
}

bool np_thread_in_handler(int tid)
{
	int n = atomic_load(&nsegs);
	for (int s = 0; s < n; s++) {
		uint64_t freem = atomic_load(&segs[s].free_mask);
		for (unsigned i = 0; i < SEG_BLOCKS; i++) {
			struct np_thread *t = &segs[s].blocks[i];
			if (!(freem & (1ull << i)) && atomic_load(&t->tid) == tid &&
			    atomic_load_explicit(&t->in_site, memory_order_acquire))
				return true;
		}
	}
	return false;
}

/* Owner-only counter bump: a plain add, readable by others. */
static inline void bump(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static void miss_all(struct np_thread *t, const struct np_hlist *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < l->n; i++) {
		if (t)
			bump(&t->missed[l->h[i].slot]);
		else
			atomic_fetch_add(&l->h[i].probe->missed_global, 1);
	}
}

static void shadow_push(struct np_thread *t, struct np_ctx *ctx, struct np_site *site,
			const struct np_hlist *l)
{
	if (t->shadow_top >= NP_SHADOW_DEPTH) {
		for (uint32_t i = 0; i < l->n; i++)
			if (l->h[i].on_return)
				bump(&t->missed[l->h[i].slot]);
		return;
	}
	uint64_t slot = np_host_ret_slot(ctx);
	struct np_shadow_frame *f = &t->shadow[t->shadow_top];
	f->ret = np_host_ret_get(ctx);
	f->slot = slot;
	f->site = site;
	f->gen = site->gen;
	f->expect = np_host_ret_trampoline(site->fpu != NP_FPU_NONE);
	f->ret_pac = site->ret_pac;
	t->shadow_top++;
	np_host_ret_set(ctx, f->expect);
}

/* The inline hit path's return arming (in_site is set by the caller). */
void np__shadow_arm(struct np_ctx *ctx)
{
	struct np_site *site = ctx->site;
	shadow_push(np_tls_self, ctx, site, atomic_load_explicit(&site->list, memory_order_acquire));
}

/* The list a hit may run, or NULL when ctx comes from a retired trampoline
 * or breakpoint of this site object's previous life. Checked after in_site
 * is set: a site reused meanwhile publishes its new address before its new
 * list, so seeing the new list (acquire) means seeing the new address. */
static const struct np_hlist *site_list(const struct np_ctx *ctx)
{
	const struct np_site *site = ctx->site;
	const struct np_hlist *l = atomic_load_explicit(&site->list, memory_order_acquire);
	return ctx->regs.pc == __atomic_load_n(&site->addr, __ATOMIC_RELAXED) ? l : NULL;
}

/* May this handler run where the trampoline saved no FP/vector state? A
 * handler that may touch it can meet such a trampoline: one built before
 * its probe joined the site, which a thread entered before the rebuilt
 * one was in (a return trampoline chosen at the call's entry, likewise).
 * It is not run there, its hit counted as missed: run, it would change
 * the program's registers. */
static bool may_run(const struct np_handler *h, bool fpu_saved)
{
	return fpu_saved || !h->probe->uses_fpu;
}

void np__dispatch(struct np_ctx *ctx)
{
	struct np_site *site = ctx->site;
	struct np_thread *t = np_thread_self();

	if (!t || atomic_load_explicit(&t->in_site, memory_order_relaxed)) {
		miss_all(t, site_list(ctx));
		return;
	}
	atomic_store_explicit(&t->in_site, site, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst); /* pairs with membarrier() */
	const struct np_hlist *l = site_list(ctx);
	if (l) {
		bool fpu_saved = !(ctx->kind & NP_CTX_NO_FPU);
		for (uint32_t i = 0; i < l->n; i++) {
			const struct np_handler *h = &l->h[i];
			if (h->on_entry && !may_run(h, fpu_saved)) {
				bump(&t->missed[h->slot]);
				continue;
			}
			bump(&t->hits[h->slot]);
			if (h->on_entry)
				h->on_entry(ctx, h->data);
		}
		if (l->nret && !ctx->redirect)
			shadow_push(t, ctx, site, l);
	}
	atomic_store_explicit(&t->in_site, NULL, memory_order_release);
}

static void run_return_handlers(struct np_thread *t, struct np_ctx *ctx,
				const struct np_shadow_frame *f)
{
	struct np_site *site = f->site;
	if (atomic_load_explicit(&t->in_site, memory_order_relaxed)) {
		if (site->gen == f->gen)
			miss_all(t, atomic_load_explicit(&site->list, memory_order_acquire));
		return;
	}
	atomic_store_explicit(&t->in_site, site, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	const struct np_hlist *l = atomic_load_explicit(&site->list, memory_order_acquire);
	if (__atomic_load_n(&site->gen, __ATOMIC_RELAXED) != f->gen)
		l = NULL; /* detached while the call was in flight */
	ctx->site = site;
	t->ret_data = f->data;
	bool fpu_saved = f->expect == np_host_ret_trampoline(true);
	for (uint32_t i = 0; l && i < l->n; i++) {
		if (!l->h[i].on_return)
			continue;
		if (may_run(&l->h[i], fpu_saved))
			l->h[i].on_return(ctx, l->h[i].data);
		else
			bump(&t->missed[l->h[i].slot]);
	}
	atomic_store_explicit(&t->in_site, NULL, memory_order_release);
}

static void __attribute__((noreturn)) shadow_lost(uint64_t key)
{
	static const char msg[] = "nanoprobe: return address lost (stack switched under a "
				  "return probe); aborting\n";
	(void)key;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	abort();
}

/* Called by the return trampoline: find this frame's real return address,
 * drop frames that longjmp skipped, run the return handlers. */
void np__ret_dispatch(struct np_ctx *ctx)
{
	struct np_thread *t = np_thread_peek();
	uint64_t key = np_host_ret_key(ctx);
	uint32_t i = t ? t->shadow_top : 0;

	while (i > 0 && t->shadow[i - 1].slot != key)
		i--;
	if (i == 0)
		shadow_lost(key);
	const struct np_shadow_frame f = t->shadow[i - 1];
	for (uint32_t k = i - 1; k < t->shadow_top; k++)
		t->shadow[k].data = 0; /* this frame and those longjmp skipped */
	t->shadow_top = i - 1;
	ctx->kind = NP_CTX_RETURN | (ctx->kind & ~0xffu);
	ctx->regs.pc = f.ret;
	ctx->redirect = 1;
	run_return_handlers(t, ctx, &f);
	ctx->regs.pc = f.ret; /* a return handler cannot change where we go */
}

/* Frames an unwinder is about to walk never return through the trampoline:
 * their return handlers are counted as missed. */
static void miss_returns(struct np_thread *t, const struct np_shadow_frame *f)
{
	if (!f->site->live || f->site->gen != f->gen)
		return;
	const struct np_hlist *l = atomic_load_explicit(&f->site->list, memory_order_acquire);
	for (uint32_t i = 0; l && i < l->n; i++)
		if (l->h[i].on_return)
			bump(&t->missed[l->h[i].slot]);
}

/* Where a frame's return address is now. On x86-64 it is the slot. Where
 * it was a register at the entry (arm64 x30), the function spilled it when
 * it made the call that led here: into its own frame, which lies between
 * its entry sp (the slot) and the entry sp of the next deeper probed frame
 * (or the caller's stack pointer). Scanning down from the slot, the first
 * word that holds what the frame put there is that spill: deeper frames
 * come after it. 0 when none is found. */
__attribute__((no_sanitize("address"))) static uint64_t *ret_now(const struct np_shadow_frame *f,
								 uint64_t lo)
{
	if (np_host_ret_in_memory())
		return np_host_ret_strip(*(uint64_t *)f->slot) == f->expect ? (uint64_t *)f->slot
									     : NULL;
	for (uint64_t a = (f->slot - 8) & ~(uint64_t)7; a >= lo && a < f->slot; a -= 8)
		if (np_host_ret_strip(*(uint64_t *)a) == f->expect)
			return (uint64_t *)a;
	return NULL;
}

__attribute__((weak)) uint64_t np_host_ret_strip(uint64_t word)
{
	return word;
}

/* Hosts without pointer authentication keep return addresses as they are
 * (arm64's runtime.c signs them). */
__attribute__((weak)) uint64_t np_host_ret_sign(uint64_t ret, uint64_t slot, unsigned pac)
{
	(void)slot;
	(void)pac;
	return ret;
}

void np_shadow_unwind_all(struct np_thread *t)
{
	uint64_t lo = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	while (t->shadow_top > 0) {
		struct np_shadow_frame *f = &t->shadow[--t->shadow_top];
		uint64_t *at = ret_now(f, lo);
		f->data = 0;
		if (at) {
			*at = np_host_ret_sign(f->ret, f->slot, f->ret_pac);
			miss_returns(t, f);
		}
		lo = f->slot;
	}
}

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

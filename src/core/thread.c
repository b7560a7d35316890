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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/engine.h"
#include "core/shadow.h"
#include "core/thread.h"
#include "host/host.h"
#include "host/layout.h"

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

/* A free block carries tid 0 (new, or reset by np_thread_pool_stock when
 * its thread died, or in a forked child) until its claimer stamps its own: a claimed block
 * still showing a dead thread's tid was taken back by stock and handed
 * to a second thread, and two threads shared one block. */
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
				t->sh.tls = (uint64_t)(uintptr_t)&np_tls_self;
				np_shadow_reset(t, true);
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

/* Threads whose stack bounds the shadow stack wants (shadow.c): those
 * that have none yet, and, when there are any, the main thread, whose
 * stack grows. Engine lock held. */
_Static_assert(MAX_SEGS * SEG_BLOCKS == NP_MAX_THREAD_BLOCKS, "stacks.c");
static struct np_thread *learning[NP_MAX_THREAD_BLOCKS];
static size_t nlearning, nnew;

static void learn_stack_of(struct np_thread *t, pid_t pid)
{
	uint32_t ok = atomic_load(&t->sh.home_ok);
	if (ok == 0 || (ok == 1 && t->tid == pid))
		learning[nlearning++] = t;
	nnew += ok == 0;
}

void np_thread_each(void (*fn)(struct np_thread *t, void *cookie), void *cookie)
{
	int n = atomic_load(&nsegs);
	for (int s = 0; s < n; s++)
		for (unsigned i = 0; i < SEG_BLOCKS; i++)
			fn(&segs[s].blocks[i], cookie);
}

/* Control path: return the blocks of exited threads; keep a spare for
 * every thread that has none yet, and half a segment more, so that each
 * thread of the program finds one on its first hit. */
void np_thread_pool_stock(void)
{
	/* the thread that attaches is likely to run what it probes: its
	 * block, and with it its stack's bounds, now */
	np_thread_self();
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
			/* tid 0: claimed by a thread that has not stamped its
			 * tid yet (claim_from_pool), not a dead thread's */
			int tid = atomic_load(&t->tid);
			if (tid && syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH) {
				/* gone, perhaps inside a handler (pthread_exit) */
				atomic_store(&t->in_site, NULL);
				np_shadow_reset(t, false);
				atomic_store(&t->tid, 0);
				atomic_fetch_or(&segs[s].free_mask, 1ull << i);
				spare++;
			} else {
				used++;
				learn_stack_of(t, pid);
			}
		}
	}
	np_shadow_learn_stacks(learning, nnew ? nlearning : 0); /* and the main thread's, once */
	nlearning = nnew = 0;
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
			np_shadow_reset(t, false);
			atomic_store(&t->tid, 0); /* free: see claim_from_pool */
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

uint64_t np_thread_sum_why(enum np_miss_reason why)
{
	return sum_slot(offsetof(struct np_thread, sh.why), (uint32_t)why);
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

const struct np_thread *np_thread_find(int tid)
{
	int n = atomic_load(&nsegs);
	for (int s = 0; s < n; s++) {
		uint64_t freem = atomic_load(&segs[s].free_mask);
		for (unsigned i = 0; i < SEG_BLOCKS; i++)
			if (!(freem & (1ull << i)) && atomic_load(&segs[s].blocks[i].tid) == tid)
				return &segs[s].blocks[i];
	}
	return NULL;
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

/* The inline hit path's return arming (in_site is set by the caller). */
void np__shadow_arm(struct np_ctx *ctx)
{
	np_ctx_claim(ctx);
	struct np_site *site = ctx->site;
	np_shadow_push(np_tls_self, ctx, site,
		       atomic_load_explicit(&site->list, memory_order_acquire));
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

void np__dispatch(struct np_ctx *ctx)
{
	np_ctx_claim(ctx);
	struct np_site *site = ctx->site;
	struct np_thread *t = np_thread_self();

	if (!t || atomic_load_explicit(&t->in_site, memory_order_relaxed)) {
		np_miss_list(t, site_list(ctx), false, t ? NP_MISS_NESTED : NP_MISS_NO_THREAD);
		return;
	}
	atomic_store_explicit(&t->in_site, site, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst); /* pairs with membarrier() */
	const struct np_hlist *l = site_list(ctx);
	if (l) {
		bool fpu_saved = !(ctx->kind & NP_CTX_NO_FPU);
		for (uint32_t i = 0; i < l->n; i++) {
			const struct np_handler *h = &l->h[i];
			if (h->on_entry && !np_handler_may_run(h, fpu_saved)) {
				np_miss_one(t, h, NP_MISS_VECTOR);
				continue;
			}
			np_bump(&t->hits[h->slot]);
			if (h->on_entry)
				h->on_entry(ctx, h->data);
		}
		if (l->nret && !ctx->redirect)
			np_shadow_push(t, ctx, site, l);
	}
	atomic_store_explicit(&t->in_site, NULL, memory_order_release);
}

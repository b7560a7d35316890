/* SPDX-License-Identifier: MIT */
/*
 * The agent's hit path: what runs in the traced program's threads.
 *
 * This file is built with -mgeneral-regs-only and calls nothing that may
 * touch vector state (the clock is the TSC or the vDSO, the cpu rseq's,
 * the copies are the engine's fault-safe reads), which is why its probes
 * are attached with NP_PROBE_NO_FPU: the trampolines skip the XSAVE that
 * would otherwise cost ten times the probe. No locks, no allocation, no
 * syscall but gettid on a thread's first hit.
 *
 * Each thread writes only to its own ring, claimed on its first hit: the
 * counters there are plain increments and the events a single-producer
 * ring that drops when full. A ring pointer is tied to the session's
 * generation, so a thread never writes into the memory of a session that
 * ended.
 */
#include "agent/agent.h"
#include "host/host.h" /* np_host_syscall */
#include "core/nolibc.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TLS_IE __attribute__((tls_model("initial-exec")))
#define NO_RING_RETRY 4096 /* hits before a ringless thread looks again */

/* Set on threads while they do the agent's own work (placing probes, the
 * control thread): what they call is not the program's. */
__thread int np_agent_busy TLS_IE;
static __thread struct np_ring *tls_ring TLS_IE;
static __thread uint32_t tls_gen TLS_IE;
static __thread uint32_t tls_retry TLS_IE;

static uint64_t now_ns(void)
{
	return np_clock_ns();
}

static struct np_ring *ring_at(struct np_shm_header *h, uint32_t i)
{
	return np_shm_ring(h, h->nprobes, h->ring_stride, i);
}

static struct np_ring *ring_claim(struct np_shm_header *h)
{
	for (uint32_t i = 0; i < h->nrings; i++) {
		struct np_ring *r = ring_at(h, i);
		uint32_t free_state = NP_RING_FREE;
		if (__atomic_load_n(&r->state, __ATOMIC_RELAXED) != NP_RING_FREE ||
		    !__atomic_compare_exchange_n(&r->state, &free_state, NP_RING_CLAIMING, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		r->tid = (int32_t)np_host_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
		r->pid = (int32_t)np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
		np_host_syscall(SYS_prctl, PR_GET_NAME, (long)r->comm, 0, 0, 0, 0); /* for a thread gone before it is read */
		__atomic_store_n(&r->state, NP_RING_OWNED, __ATOMIC_RELEASE);
		return r;
	}
	__atomic_fetch_add(&h->no_ring, 1, __ATOMIC_RELAXED);
	return NULL;
}

static __attribute__((noinline)) struct np_ring *ring_first(uint32_t gen)
{
	if (!gen) /* a copy of the process that no fork handler prepared */
		gen = np_agent_adopt_copy();
	struct np_shm_header *h = np_agent.shm;
	if (!np_agent_live || !h)
		return NULL;
	/* a vfork child runs on its parent thread's TLS: a ring claimed
	 * there would be the parent thread's, under the child's tid; with
	 * one there already, its hits count under the parent's thread */
	if (!np_agent_in_session_process()) {
		__atomic_fetch_add(&h->vfork_unrecorded, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (tls_gen == gen && tls_retry && --tls_retry)
		return NULL;
	tls_gen = gen;
	tls_ring = ring_claim(h);
	tls_retry = tls_ring ? 0 : NO_RING_RETRY;
	return tls_ring;
}

/* The calling thread's ring in the current session, or NULL (also for the
 * agent's own work). */
static inline struct np_ring *ring_self(void)
{
	if (np_agent_busy)
		return NULL;
	uint32_t gen = __atomic_load_n(np_agent.gen_word, __ATOMIC_ACQUIRE);
	if (__builtin_expect(tls_gen == gen && tls_ring != NULL, 1))
		return tls_ring;
	return ring_first(gen);
}

struct np_ring *np_agent_ring_self(void)
{
	return ring_self();
}

static void count_hit(struct np_ring *r, const struct aprobe *ap)
{
	np_ring_counts(r)[ap->m.id]++;
}

/* A count's handler data is its probe's id itself, not its struct aprobe:
 * the structs are ~2 KiB apart, and with thousands of probes (every
 * function of a library) loading the id from each one's own line cost a
 * cache and TLB miss per hit, a third of on_count's time. */
static void *count_data(const struct aprobe *ap)
{
	return (void *)(uintptr_t)ap->m.id;
}

static void on_count(struct np_ctx *ctx, void *data)
{
	struct np_ring *r = ring_self();
	(void)ctx;
	if (r)
		np_ring_counts(r)[(uint32_t)(uintptr_t)data]++;
}

/* --- fetch args ----------------------------------------------------------- */

static int read_word(uint64_t addr, uint64_t *v)
{
	return np_read_user(v, addr, sizeof(*v));
}

static int fetch_base(struct np_ctx *ctx, const struct aprobe *ap, const struct np_fetch *f,
		      uint64_t *v)
{
	switch (f->base) {
	case NP_FB_REG: *v = np_ctx_reg(ctx, f->index); return 0;
	case NP_FB_ARG: *v = np_ctx_arg(ctx, (unsigned)f->index); return 0;
	case NP_FB_RETVAL: *v = np_ctx_retval(ctx); return 0;
	case NP_FB_SP: *v = np_ctx_sp(ctx); return 0;
	case NP_FB_STACK: return read_word(np_ctx_sp(ctx) + 8u * (uint64_t)f->index, v);
	case NP_FB_IMM: *v = f->imm; return 0;
	case NP_FB_MODREL: *v = ap->bias + f->imm; return 0;
	}
	return -1;
}

static uint64_t extend(uint64_t v, const struct np_fetch *f)
{
	unsigned bits = f->size * 8u;
	if (bits >= 64)
		return v;
	v &= (1ull << bits) - 1;
	if (f->type == NP_FT_S && (v >> (bits - 1)) & 1)
		v |= ~0ull << bits;
	return v;
}

/* The address the fetch finally reads (or the value itself: *is_addr 0). */
static int fetch_addr(struct np_ctx *ctx, const struct aprobe *ap, const struct np_fetch *f,
		      uint64_t *v, bool *is_addr)
{
	if (fetch_base(ctx, ap, f, v))
		return -1;
	*is_addr = f->nderef > 0;
	for (unsigned d = 0; d + 1 < f->nderef; d++)
		if (read_word(*v + (uint64_t)f->off[d], v))
			return -1;
	if (f->nderef)
		*v += (uint64_t)f->off[f->nderef - 1];
	return 0;
}

static int fetch_number(struct np_ctx *ctx, const struct aprobe *ap, const struct np_fetch *f,
			uint64_t *out)
{
	uint64_t v = 0;
	bool is_addr;
	if (fetch_addr(ctx, ap, f, &v, &is_addr))
		return -1;
	if (is_addr) {
		uint64_t addr = v;
		v = 0; /* little-endian hosts: the low bytes */
		if (np_read_user(&v, addr, f->size))
			return -1;
	}
	*out = extend(v, f);
	return 0;
}

/* A string: uint16_t length then the bytes, padded to 8. Returns bytes used. */
static uint32_t fetch_string(struct np_ctx *ctx, const struct aprobe *ap,
			     const struct np_fetch *f, unsigned char *dst, bool *fault)
{
	uint64_t addr;
	bool is_addr;
	long n = -1;
	if (fetch_addr(ctx, ap, f, &addr, &is_addr) == 0)
		n = np_read_user_str((char *)dst + 2, addr, NP_STRING_MAX);
	*fault = n < 0;
	uint16_t len = n < 0 ? 0 : (uint16_t)n;
	dst[0] = (unsigned char)len;
	dst[1] = (unsigned char)(len >> 8);
	return (2u + len + 7u) & ~7u;
}

/* --- events --------------------------------------------------------------- */

/* A thread that blocks SIGSEGV or SIGBUS (sigfillset in a worker, a
 * signal handler's mask) cannot survive even a caught fault: the kernel
 * kills it instead. Reads of memory unblock them around the fetch. */
static uint64_t fault_signals(void)
{
	return (1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1));
}

static uint64_t unblock_faults(void)
{
	uint64_t mask = 0, want = fault_signals();
	np_host_syscall(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&mask, sizeof(mask), 0, 0);
	if (mask & want)
		np_host_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&want, 0, sizeof(want), 0, 0);
	return mask & want;
}

static void reblock_faults(uint64_t blocked)
{
	if (blocked)
		np_host_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&blocked, 0, sizeof(blocked), 0, 0);
}

static void fetch_all(struct np_ctx *ctx, const struct aprobe *ap, struct np_rec *rec)
{
	unsigned char *p = (unsigned char *)(rec + 1);
	uint32_t faults = 0;
	int saved_errno = *np_errno(); /* a failed read sets it: the program's own */
	uint64_t blocked = ap->reads_memory ? unblock_faults() : 0;
	for (unsigned i = 0; i < ap->m.nargs; i++) {
		const struct np_fetch *f = &ap->m.args[i];
		bool fault = false;
		if (f->type == NP_FT_STRING) {
			p += fetch_string(ctx, ap, f, p, &fault);
		} else {
			fault = fetch_number(ctx, ap, f, (uint64_t *)p) != 0;
			p += 8;
		}
		faults |= (uint32_t)fault << i;
	}
	reblock_faults(blocked);
	*np_errno() = saved_errno;
	rec->len = (uint32_t)(p - (unsigned char *)rec);
	rec->fault_mask = faults;
}

/* A record of ap in the calling thread's ring, its hit counted, its
 * header's common part filled: NULL when the thread has no ring (or is
 * the agent's) or the ring is full. record_commit publishes it. */
static struct np_rec *record_start(const struct aprobe *ap, uint64_t ts, struct np_ring **r,
				   uint64_t *head)
{
	if (!(*r = ring_self()))
		return NULL;
	count_hit(*r, ap);
	*head = (*r)->head;
	struct np_rec *rec = np_ring_reserve(*r, np_ring_data(*r, np_agent.shm->nprobes),
					       np_agent.shm->ring_bytes, ap->max_record, head);
	if (!rec)
		return NULL;
	int cpu = np_cpu();
	rec->probe = (uint16_t)ap->m.id;
	rec->cpu = cpu < 0 ? 0xffff : (uint16_t)cpu;
	rec->reserved = 0;
	rec->ts = ts;
	return rec;
}

static void record_commit(struct np_ring *r, const struct np_rec *rec, uint64_t head)
{
	__atomic_store_n(&r->head, head + rec->len, __ATOMIC_RELEASE);
}

static void emit(struct np_ctx *ctx, const struct aprobe *ap, uint64_t entry_ts)
{
	struct np_ring *r;
	uint64_t head;
	/* the hit's time, not the record's */
	struct np_rec *rec = record_start(ap, now_ns(), &r, &head);
	if (!rec)
		return;
	fetch_all(ctx, ap, rec);
	rec->pc = np_ctx_pc(ctx);
	rec->func = ap->m.is_return ? np_ctx_func(ctx) : 0;
	rec->entry_ts = entry_ts;
	record_commit(r, rec, head);
}

static void on_event(struct np_ctx *ctx, void *data)
{
	emit(ctx, data, 0);
}

/* A return probe's entry: the call's start time travels with the call. */
static void on_call_start(struct np_ctx *ctx, void *data)
{
	uint64_t *word = np_ctx_call_data(ctx);
	if (word && !np_agent_busy)
		*word = now_ns();
}

static void on_return_event(struct np_ctx *ctx, void *data)
{
	uint64_t *word = np_ctx_call_data(ctx);
	emit(ctx, data, word ? *word : 0);
}

/* --- latency -------------------------------------------------------------- */

static unsigned hist_bucket(uint64_t v)
{
	return v < 2 ? (unsigned)v : 64u - (unsigned)__builtin_clzll(v);
}

/* Into the probe's own histogram in the thread's ring. */
static void on_latency_return(struct np_ctx *ctx, void *data)
{
	const struct aprobe *ap = data;
	uint64_t *word = np_ctx_call_data(ctx);
	uint64_t off = np_agent.hist_off;
	struct np_ring *r = ring_self();
	if (!word || !*word || !r || !off)
		return;
	/* the counter is read unordered, and a thread may move to a cpu whose
	 * TSC is a little behind (core/clock.c): an end before the start is
	 * a call of no measurable length, not one of 584 years */
	uint64_t now = now_ns(), d = now > *word ? now - *word : 0;
	struct np_hist *h = (struct np_hist *)((char *)r + off) + ap->m.id;
	unsigned b = hist_bucket(np_agent.hist_unit > 1 ? d / np_agent.hist_unit : d);
	count_hit(r, data);
	h->bucket[b < NP_HIST_BUCKETS ? b : NP_HIST_BUCKETS - 1]++;
	if (!h->count || d < h->min)
		h->min = d;
	if (d > h->max)
		h->max = d;
	h->sum += d;
	h->count++;
}

void np_agent_handlers(const struct aprobe *ap, np_handler_fn *entry, np_handler_fn *ret,
		       void **data)
{
	*entry = NULL;
	*ret = NULL;
	*data = (void *)ap;
	switch (ap->m.action) {
	case NP_ACT_COUNT:
		/* f%return counts returns, on the return path it names */
		*(ap->m.is_return ? ret : entry) = on_count;
		*data = count_data(ap);
		break;
	case NP_ACT_EVENT:
		*entry = ap->m.is_return ? on_call_start : on_event;
		*ret = ap->m.is_return ? on_return_event : NULL;
		break;
	case NP_ACT_LATENCY:
		*entry = on_call_start;
		*ret = on_latency_return;
		break;
	case NP_ACT_SCRIPT:
		np_agent_script_handlers(ap, entry, ret, data);
		break;
	}
}

/* --- watchpoints ---------------------------------------------------------- */

/* A watched access: the accessing pc, where the thread resumed, and the
 * old and new values as arguments (what np_watch_hit says of them). Runs
 * in the engine's SIGTRAP handler, like every other handler here: no libc. */
void np_agent_on_watch(const struct np_watch_hit *hit, void *data)
{
	const struct aprobe *ap = data;
	struct np_ring *r;
	uint64_t head;
	struct np_rec *rec = record_start(ap, now_ns(), &r, &head);
	if (!rec)
		return;
	uint64_t *arg = (uint64_t *)(rec + 1);
	unsigned nargs = ap->m.nargs == 2 ? 2 : 0;
	if (nargs) {
		arg[0] = hit->old_value;
		arg[1] = hit->new_value;
	}
	rec->len = (uint32_t)(sizeof(*rec) + 8u * nargs);
	rec->fault_mask = nargs && !(hit->flags & NP_WATCH_HIT_VALUE) ? 3u : 0u;
	rec->reserved = hit->flags;
	rec->pc = hit->pc;
	rec->func = np_ctx_pc(hit->ctx);
	rec->entry_ts = 0;
	record_commit(r, rec, head);
}

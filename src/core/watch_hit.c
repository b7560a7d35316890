/* SPDX-License-Identifier: MIT */
/*
 * Watchpoints: the hit path, in the engine's SIGTRAP handler.
 *
 * The kernel sends the accessing thread SIGTRAP with si_code TRAP_PERF and
 * the event's sig_data, which names the watch (table index and generation,
 * so that a signal still on its way when its watch is detached is
 * recognised and dropped). The handler then runs as a probe's does: the
 * thread's block from the pool (no allocation), the recursion guard
 * (in_site, here the watch's own token), a plain per-thread counter, the
 * detach barrier; no lock, no libc (core/nolibc.h): the program may be
 * anywhere, inside malloc or under a probe on memcpy.
 *
 * Which instruction. On x86 a data breakpoint is a trap: the kernel
 * reports the pc after the access, and instructions cannot be decoded
 * backwards. So, as a debugger does, the handler decodes forward from the
 * start of the enclosing function until an instruction ends at that pc.
 * Function starts come from the .eh_frame_hdr search table of the module
 * (every function with unwind information, stripped or not), read where
 * the module is mapped; the table of modules is built by the control path
 * (attach, np_maintain) and published through an atomic pointer. Lengths
 * come from the ISA's insn_length, which is libc-free (Zydis' instruction
 * decoder without operands). The answer is cached per pc, so a hot writer
 * costs one lookup. It cannot be found (NP_WATCH_HIT_PC_EXACT unset, pc
 * left where the thread resumes) when the code has no unwind information,
 * belongs to a module loaded since the last refresh, or the walk does not
 * land on the pc (data inside the function's bytes).
 *
 * The value. Each watch keeps a shadow of the watched bytes: at a hit the
 * handler reads memory (fault-safe) and exchanges it with the shadow;
 * the old shadow is the hit's old value. Concurrent stores each trap, and
 * the exchanges order the hits: every old value is the new value of the
 * hit before it in that order (see np_watch_hit in nanoprobe.h).
 */
#include "arch/arch.h"
#include "core/thread.h"
#include "core/watch.h"
#include "core/nolibc.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>

/* struct siginfo's perf fields, after si_addr (kernel uapi; glibc 2.36
 * does not name them). */
struct perf_siginfo {
	int signo, errnum, code, pad;
	void *addr;
	unsigned long data;  /* si_perf_data: our sig_data */
	uint32_t type;       /* si_perf_type */
	uint32_t flags;      /* si_perf_flags */
};
#define PERF_FLAG_ASYNC (1u << 31) /* TRAP_PERF_FLAG_ASYNC: SIGTRAP was blocked */

/* --- modules: where function starts are found ------------------------------ */

struct code_range {
	uint64_t lo, hi; /* an executable PT_LOAD segment */
	uint64_t hdr;    /* its module's .eh_frame_hdr, 0 if none */
};

struct module_table {
	size_t n;
	struct code_range r[];
};

static struct module_table *_Atomic modules;
static _Atomic int module_readers;
static struct module_table *retired[32];
static unsigned nretired;
static unsigned long long seen_adds = ~0ull, seen_subs;

/* pc -> length of the instruction ending there, per code generation: a
 * module unloaded may leave its addresses to other code. */
#define PC_CACHE 4096
#define PC_PROBES 8
#define PC_UNKNOWN 0xff
static struct {
	_Atomic uint64_t pc_after;
	_Atomic uint32_t val; /* generation << 8 | length (PC_UNKNOWN: none) */
} pc_cache[PC_CACHE];
static _Atomic uint32_t code_gen = 1;

struct collect {
	struct module_table *t;
	size_t cap;
	unsigned long long adds, subs;
	bool failed;
};

static void add_range(struct collect *c, uint64_t lo, uint64_t hi, uint64_t hdr)
{
	if (c->t && c->t->n == c->cap) {
		struct module_table *nt = realloc(c->t, sizeof(*nt) + 2 * c->cap * sizeof(nt->r[0]));
		if (!nt) {
			c->failed = true;
			return;
		}
		c->t = nt;
		c->cap *= 2;
	}
	if (c->t)
		c->t->r[c->t->n++] = (struct code_range){lo, hi, hdr};
}

static int collect_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct collect *c = cookie;
	uint64_t hdr = 0;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			add_range(c, info->dlpi_addr + ph->p_vaddr,
				  info->dlpi_addr + ph->p_vaddr + ph->p_memsz, hdr);
	}
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Free replaced tables once no handler reads one (a reader count, held
 * only while a pc is looked up, never across the user's handler). */
static void retire(struct module_table *old)
{
	if (nretired == sizeof(retired) / sizeof(retired[0]))
		while (atomic_load(&module_readers))
			sched_yield();
	if (atomic_load(&module_readers) == 0) {
		for (unsigned i = 0; i < nretired; i++)
			free(retired[i]);
		nretired = 0;
		free(old);
		return;
	}
	retired[nretired++] = old;
}

void np_watch_modules_refresh(void)
{
	struct collect c = {.cap = 64};
	c.t = malloc(sizeof(*c.t) + c.cap * sizeof(c.t->r[0]));
	if (!c.t)
		return;
	c.t->n = 0;
	dl_iterate_phdr(collect_module, &c);
	if (c.failed || (c.adds == seen_adds && c.subs == seen_subs)) {
		free(c.t); /* nothing loaded or unloaded since the last look */
		return;
	}
	if (c.subs != seen_subs)
		atomic_fetch_add(&code_gen, 1); /* unloaded code: forget its pcs */
	seen_adds = c.adds;
	seen_subs = c.subs;
	np_qsort(c.t->r, c.t->n, sizeof(c.t->r[0]), by_lo);
	struct module_table *old = atomic_exchange(&modules, c.t);
	if (old)
		retire(old);
}

/* --- the accessing instruction --------------------------------------------- */

/* .eh_frame_hdr bytes 0-3 as a little-endian word: version 1, then the
 * encodings GNU ld and lld write (pcrel|sdata4, udata4, datarel|sdata4) */
#define EH_HDR_ENC 0x3b031b01u
#define MAX_WALK 65536         /* bytes decoded from a function's start at most */

static bool read32(uint64_t addr, uint32_t *v)
{
	return np_read_user(v, addr, sizeof(*v)) == 0;
}

/* The greatest function start <= pc in the module's search table. */
static bool table_start(uint64_t hdr, uint64_t pc, uint64_t *start)
{
	uint32_t enc, n;
	if (!read32(hdr, &enc) || !read32(hdr + 8, &n) || enc != EH_HDR_ENC || n == 0)
		return false;
	uint64_t table = hdr + 12;
	uint32_t lo = 0, hi = n; /* answer in [lo, hi) */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2, rel;
		if (!read32(table + 8ull * mid, &rel))
			return false;
		if (hdr + (uint64_t)(int64_t)(int32_t)rel <= pc)
			lo = mid;
		else
			hi = mid;
	}
	uint32_t rel;
	if (!read32(table + 8ull * lo, &rel))
		return false;
	*start = hdr + (uint64_t)(int64_t)(int32_t)rel;
	return *start <= pc;
}

static bool function_start(uint64_t pc, uint64_t *start)
{
	const struct module_table *t = atomic_load_explicit(&modules, memory_order_acquire);
	size_t lo = 0, hi = t ? t->n : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pc < t->r[mid].lo)
			hi = mid;
		else if (pc >= t->r[mid].hi)
			lo = mid + 1;
		else
			return t->r[mid].hdr && table_start(t->r[mid].hdr, pc, start);
	}
	return false;
}

/* Code bytes from at: 64, or up to the end of its page when the next
 * one cannot be read; 0 when none can. */
static size_t read_code(uint8_t *buf, size_t cap, uint64_t at)
{
	if (np_read_user(buf, at, cap) == 0)
		return cap;
	size_t n = 4096 - (size_t)(at & 4095);
	return n < cap && np_read_user(buf, at, n) == 0 ? n : 0;
}

/* Decode forward from start: the length of the instruction that ends
 * exactly at pc_after, or 0. */
static unsigned walk_to(uint64_t start, uint64_t pc_after)
{
	const struct np_isa *isa = np_host_isa;
	uint8_t buf[64];
	uint64_t at = start, buf_at = 0;
	size_t have = 0;
	while (at < pc_after && at - start < MAX_WALK) {
		/* a new window when at leaves this one, or when an instruction
		 * may run past its end (unless the end is that of the readable) */
		if (at < buf_at || at >= buf_at + have ||
		    (at + isa->max_insn > buf_at + have && have == sizeof(buf))) {
			if (!(have = read_code(buf, sizeof(buf), at)))
				return 0;
			buf_at = at;
		}
		int len = isa->insn_length(buf + (at - buf_at), have - (size_t)(at - buf_at));
		if (len <= 0)
			return 0;
		if (at + (uint64_t)len == pc_after)
			return (unsigned)len;
		at += (uint64_t)len;
	}
	return 0;
}

static unsigned cache_get(uint64_t pc_after, uint32_t gen, bool *found)
{
	for (unsigned i = 0; i < PC_PROBES; i++) {
		unsigned h = (unsigned)((pc_after * 0x9e3779b97f4a7c15ull) >> 52) + i;
		uint64_t k = atomic_load_explicit(&pc_cache[h % PC_CACHE].pc_after,
						  memory_order_acquire);
		if (k == 0)
			break;
		if (k != pc_after)
			continue;
		uint32_t v = atomic_load_explicit(&pc_cache[h % PC_CACHE].val, memory_order_acquire);
		*found = (v >> 8) == (gen & 0xffffff) && (v & 0xff);
		return v & 0xff;
	}
	*found = false;
	return 0;
}

static void cache_put(uint64_t pc_after, uint32_t gen, unsigned len)
{
	uint32_t val = (gen & 0xffffff) << 8 | (len ? len : PC_UNKNOWN);
	for (unsigned i = 0; i < PC_PROBES; i++) {
		unsigned h = (unsigned)((pc_after * 0x9e3779b97f4a7c15ull) >> 52) + i;
		uint64_t k = 0;
		if (atomic_compare_exchange_strong(&pc_cache[h % PC_CACHE].pc_after, &k, pc_after) ||
		    k == pc_after) {
			/* racing writers store the same answer */
			atomic_store_explicit(&pc_cache[h % PC_CACHE].val, val, memory_order_release);
			return;
		}
	}
}

/* The instruction that ends at pc_after: true and its address, or false. */
static bool accessing_pc(uint64_t pc_after, uint64_t *pc)
{
	const struct np_isa *isa = np_host_isa;
	if (!isa->insn_length) { /* fixed-length instructions */
		*pc = pc_after - isa->max_insn;
		return true;
	}
	uint32_t gen = atomic_load(&code_gen);
	bool found;
	unsigned len = cache_get(pc_after, gen, &found);
	if (!found) {
		uint64_t start;
		atomic_fetch_add(&module_readers, 1);
		len = function_start(pc_after - 1, &start) ? walk_to(start, pc_after) : 0;
		atomic_fetch_sub(&module_readers, 1);
		cache_put(pc_after, gen, len);
	}
	if (!len || len == PC_UNKNOWN)
		return false;
	*pc = pc_after - len;
	return true;
}

/* --- the hit ----------------------------------------------------------------- */

int np_watch_read_value(uint64_t addr, size_t len, uint64_t *out)
{
	uint64_t v = 0; /* little-endian hosts: the low bytes */
	int err = np_read_user(&v, addr, len < sizeof(v) ? len : sizeof(v)) ? -EFAULT : 0;
	*out = v;
	return err;
}

/* Owner-only counter bump: a plain add, readable by others. */
static void bump(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static void fill_pc(const struct np_watch *w, uint32_t flags, struct np_watch_hit *h)
{
	uint64_t at = h->ctx->regs.pc;
	h->pc = at;
	if (flags & PERF_FLAG_ASYNC)
		return; /* delivered when SIGTRAP was unblocked: pc is elsewhere */
	if (w->type == NP_WATCH_EXEC || !np_host_isa->watch_pc_after ||
	    accessing_pc(at, &h->pc))
		h->flags |= NP_WATCH_HIT_PC_EXACT;
}

/* A load of a read-write watched word from the handler would trap
 * again: the kernel reads it for us instead (its accesses are excluded). */
static int read_by_kernel(uint64_t addr, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	struct iovec local = {&v, len}, remote = {(void *)(uintptr_t)addr, len};
	long pid = np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	long n = np_host_syscall(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
	*out = v;
	return n == (long)len ? 0 : -EFAULT;
}

static void fill_value(struct np_watch *w, struct np_watch_hit *h)
{
	uint64_t now;
	if (w->type == NP_WATCH_EXEC ||
	    (w->type == NP_WATCH_RW ? read_by_kernel(w->addr, w->len, &now)
				    : np_watch_read_value(w->addr, w->len, &now)))
		return;
	uint64_t before = atomic_exchange(&w->shadow, now);
	h->flags |= NP_WATCH_HIT_VALUE;
	/* a trap reports the access done; an ISA that reports it before
	 * (arm64) only lets us see the value as it was */
	h->old_value = np_host_isa->watch_pc_after ? before : now;
	h->new_value = now;
	if (h->old_value != h->new_value)
		h->flags |= NP_WATCH_HIT_CHANGED;
}

static void run(struct np_watch *w, struct np_thread *t, uint32_t flags, void *uc)
{
	struct np_ctx ctx;
	struct np_watch_hit h;
	np_zero(&ctx, sizeof(ctx)); /* not "= {0}": that may call memset */
	np_zero(&h, sizeof(h));
	ctx.site = &w->token;
	ctx.kind = NP_CTX_ENTRY;
	np_host_regs_from_uc(&ctx.regs, uc);
	h.watch = w;
	h.ctx = &ctx;
	h.addr = w->addr;
	h.tid = t->tid;
	bump(&t->hits[w->slot]);
	fill_pc(w, flags, &h);
	fill_value(w, &h);
	w->fn(&h, w->data);
	np_host_regs_to_uc(&ctx.regs, uc); /* np_ctx_set_reg takes effect */
}

bool np_watch_trap(siginfo_t *si, void *uc)
{
	const struct perf_siginfo *p = (const void *)si;
	uint64_t data = p->data;
	if ((data >> 48) != NP_WATCH_MAGIC)
		return false;
	uint32_t idx = (uint16_t)data, gen = (uint32_t)(data >> 16);
	struct np_watch_entry *e = &np_watch_table[idx < NP_WATCH_MAX ? idx : 0];
	struct np_watch *w = atomic_load_explicit(&e->watch, memory_order_acquire);
	struct np_thread *t = w ? np_thread_self() : NULL;
	if (!w || idx >= NP_WATCH_MAX)
		return true; /* its watch is gone: nothing to run */
	if (!t) { /* no block for this thread (out of memory): counted */
		if (atomic_load(&e->gen) == gen) {
			atomic_fetch_add(&e->missed_no_block, 1);
			np_miss_why(NULL, NP_MISS_NO_THREAD);
		}
		return true;
	}
	if (atomic_load_explicit(&t->in_site, memory_order_relaxed)) {
		/* an access from a handler: counted, not reported */
		if (atomic_load(&e->gen) == gen) {
			bump(&t->missed[atomic_load(&e->slot)]);
			np_miss_why(t, NP_MISS_NESTED);
		}
		return true;
	}
	atomic_store_explicit(&t->in_site, &w->token, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst); /* pairs with membarrier() */
	/* published still (detach waits for in_site from here on), and the
	 * watch the signal was sent for, not a later one at the same index */
	if (atomic_load_explicit(&e->watch, memory_order_acquire) == w && w->gen == gen)
		run(w, t, p->flags, uc);
	atomic_store_explicit(&t->in_site, NULL, memory_order_release);
	return true;
}

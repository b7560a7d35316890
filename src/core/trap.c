/* SPDX-License-Identifier: MIT */
/*
 * The TRAP strategy and the breakpoint half of the patching protocol.
 *
 * One SIGTRAP per hit: the handler runs the site's handlers on a context
 * built from the ucontext, then either simulates the instruction under the
 * breakpoint or resumes at its out-of-line copy, which jumps back by
 * itself. A breakpoint that belongs to a JUMP region being written sends
 * the thread to that region's trampoline instead.
 *
 * The handler finds breakpoints in an immutable sorted table published
 * through an atomic pointer; writers swap it under the engine lock and free
 * the old one once no handler is reading (a reader count, only touched on
 * this already slow path). A SIGTRAP whose breakpoint has already been
 * removed (the thread trapped just before we restored the byte) is
 * recognised because the byte is no longer a breakpoint: the thread simply
 * re-executes the restored instruction. Anything else (the program's own
 * breakpoints, a SIGTRAP sent by kill) goes to the disposition the program
 * set (sigchain.c).
 */
#include "core/codemem.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/nolibc.h"
#include "core/sigchain.h"
#include "core/site.h"
#include "core/stop.h"
#include "core/trap.h"
#include "core/watch.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

struct trap_entry {
	uint64_t addr;
	struct np_region *region;
};

struct trap_table {
	size_t n;
	struct trap_entry e[];
};

static struct trap_table *_Atomic table;
/* Threads in the part of the handler that reads the table and regions,
 * and this thread's share of them (a handler's own code may trap). */
static _Atomic int readers;
static __thread int my_readers __attribute__((tls_model("initial-exec")));
/* Replaced tables and removed regions wait here until a moment with no
 * reader. Never waited for under the engine lock: a reader may be running
 * a probe's handler, which may be waiting for the lock (a fork, fork.c),
 * or be preempted. engine lock held. */
static void **retired;
static size_t nretired, capretired;

/* Free memory a trap handler may still be reading (an old table, a removed
 * region) once no handler runs: new handlers cannot find it any more.
 * Kept for good if there is no memory to remember it in. */
void np_trap_defer_free(void *old)
{
	if (atomic_load(&readers) == 0) {
		for (size_t i = 0; i < nretired; i++)
			free(retired[i]);
		nretired = 0;
		free(old);
		return;
	}
	if (nretired == capretired) {
		size_t cap = capretired ? capretired * 2 : 256;
		void **v = realloc(retired, cap * sizeof(*v));
		if (!v)
			return;
		retired = v;
		capretired = cap;
	}
	retired[nretired++] = old;
}

/* In a forked child: the other threads' handlers are not there. */
void np_trap_after_fork(void)
{
	atomic_store(&readers, my_readers);
}

static struct np_region *lookup(const struct trap_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t ? t->n : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->e[mid].addr == addr)
			return t->e[mid].region;
		if (t->e[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct np_region *np_trap_lookup(uint64_t addr)
{
	return lookup(atomic_load_explicit(&table, memory_order_acquire), addr);
}

/* r's trampoline, for the SIGTRAP handler to send threads to. Called as
 * r enters the trap table, which follows the write of its trampoline
 * (np_codemem_flush), never precedes it. The handler cannot read r->tramp
 * itself: it may run late, on a table it loaded before r last left it,
 * while a rebuild after a detach (np_region_refresh) has already set
 * r->tramp to a trampoline still being written, and tramp_off to its
 * blocks. A thread sent there ran zeros (e2e-torture, x86-64). */
static void publish(struct np_region *r)
{
	uint32_t seq = __atomic_load_n(&r->pub.seq, __ATOMIC_RELAXED);
	__atomic_store_n(&r->pub.seq, seq + 1, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&r->pub.tramp, r->tramp, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < NP_MAX_REGION_INSNS; i++)
		__atomic_store_n(&r->pub.off[i], r->tramp_off[i], __ATOMIC_RELAXED);
	__atomic_store_n(&r->pub.seq, seq + 2, __ATOMIC_RELEASE);
}

/* The published address of instruction i's block (i < 0: the start; else
 * an index from np_region_insn_index, below r->ninsn), or
 * 0 if r was never published. A seqlock read: the engine writes with no
 * call in between, so a retry waits a few stores at most. */
static uint64_t published_block(const struct np_region *r, int i)
{
	uint32_t seq;
	uint64_t at;
	do {
		while ((seq = __atomic_load_n(&r->pub.seq, __ATOMIC_ACQUIRE)) & 1)
			NP_CPU_RELAX();
		at = __atomic_load_n(&r->pub.tramp, __ATOMIC_RELAXED);
		if (at && i >= 0)
			at += __atomic_load_n(&r->pub.off[i], __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
	} while (__atomic_load_n(&r->pub.seq, __ATOMIC_RELAXED) != seq);
	return at;
}

/* Where a thread that trapped at 'at', in r's bytes, goes: the block of
 * its instruction (of the first, at an absorbed start that is none) in
 * r's published trampoline; for a TRAP, the out-of-line copy. 0: none
 * published. */
uint64_t np_trap_block(const struct np_region *r, uint64_t at)
{
	if (r->strategy != NP_STRATEGY_JUMP)
		return published_block(r, -1);
	int i = np_region_insn_index(r, at);
	return published_block(r, i < 0 ? 0 : i);
}

/* Publish a copy of the table where the entry at addr (if any) is gone,
 * entries of 'from' now lead to 'put' (or are gone when put is NULL), and
 * (addr -> put) is added when both are given. */
static int table_edit(uint64_t addr, struct np_region *put, const struct np_region *from)
{
	struct trap_table *old = atomic_load(&table);
	size_t n = old ? old->n : 0, j = 0;
	struct trap_table *t = malloc(sizeof(*t) + (n + 1) * sizeof(t->e[0]));
	if (!t)
		return -ENOMEM;
	if (put)
		publish(put);
	bool placed = !(addr && put);
	for (size_t i = 0; i < n; i++) {
		struct trap_entry e = old->e[i];
		if ((addr && e.addr == addr) || (from && e.region == from && !put))
			continue;
		if (from && e.region == from)
			e.region = put;
		if (!placed && e.addr > addr) {
			t->e[j++] = (struct trap_entry){addr, put};
			placed = true;
		}
		t->e[j++] = e;
	}
	if (!placed)
		t->e[j++] = (struct trap_entry){addr, put};
	t->n = j;
	atomic_store_explicit(&table, t, memory_order_seq_cst);
	np_trap_defer_free(old);
	return 0;
}

void np_trap_each_published(void (*fn)(uint64_t tramp, void *cookie), void *cookie)
{
	const struct trap_table *t = atomic_load(&table);
	for (size_t i = 0; t && i < t->n; i++)
		if (t->e[i].region)
			fn(__atomic_load_n(&t->e[i].region->pub.tramp, __ATOMIC_RELAXED), cookie);
}

/* A breakpoint at addr belongs to r: r's own start while it is being
 * patched, or the start of a region r absorbed (a thread that trapped there
 * just before the merge must go to r's block for that address, since the
 * byte now lies inside r's jump). */
int np_trap_table_put(uint64_t addr, struct np_region *r)
{
	return table_edit(addr, r, NULL);
}

int np_trap_table_drop(uint64_t addr)
{
	return table_edit(addr, NULL, NULL);
}

/* Every breakpoint of 'from' now belongs to 'to' (absorbed), or to nobody
 * (to == NULL: from is going away). */
int np_trap_table_move(const struct np_region *from, struct np_region *to)
{
	return table_edit(0, to, from);
}

/* Many edits in one copy of the table (a batch of attaches or detaches,
 * core/batch.c): entries for which drop() says so go, then (r->start -> r)
 * for each of add[0..nadd), which must be sorted by start, replaces any
 * entry at that address. */
int np_trap_table_edit_many(struct np_region *const *add, size_t nadd,
			    bool (*drop)(uint64_t addr, const struct np_region *r, void *cookie),
			    void *cookie)
{
	struct trap_table *old = atomic_load(&table);
	size_t n = old ? old->n : 0, j = 0, k = 0;
	struct trap_table *t = malloc(sizeof(*t) + (n + nadd) * sizeof(t->e[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < nadd; i++)
		publish(add[i]);
	for (size_t i = 0; i < n; i++) {
		struct trap_entry e = old->e[i];
		for (; k < nadd && add[k]->start < e.addr; k++)
			t->e[j++] = (struct trap_entry){add[k]->start, add[k]};
		if ((k < nadd && add[k]->start == e.addr) || (drop && drop(e.addr, e.region, cookie)))
			continue;
		t->e[j++] = e;
	}
	for (; k < nadd; k++)
		t->e[j++] = (struct trap_entry){add[k]->start, add[k]};
	t->n = j;
	atomic_store_explicit(&table, t, memory_order_seq_cst);
	np_trap_defer_free(old);
	return 0;
}

static int mem_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	np_copy(dst, (const void *)addr, len);
	return 0;
}

static int mem_write(void *cookie, uint64_t addr, const void *src, size_t len)
{
	(void)cookie;
	np_copy((void *)addr, src, len);
	return 0;
}

static const struct np_mem self_mem = {mem_read, mem_write, NULL};

__attribute__((no_sanitize("address"))) static void trap_hit(struct np_region *r, uint64_t at,
							      ucontext_t *uc)
{
	struct np_ctx ctx;

	/* not "= {...}": clang clears a struct this size with a call to memset
	 * (ASan builds: to the runtime's, which calls libc's), and the hit path
	 * calls no libc (core/nolibc.h) */
	np_zero(&ctx, sizeof(ctx));
	ctx.site = r->sites[0];
	ctx.kind = NP_CTX_ENTRY;
	np_host_regs_from_uc(&ctx.regs, uc);
	if (r->strategy == NP_STRATEGY_JUMP) {
		/* a JUMP patch in the making, or merged over this breakpoint:
		 * the trampoline is ready */
		uint64_t block = np_trap_block(r, at);
		ctx.regs.pc = block ? block : at; /* never published: try again */
		np_host_regs_to_uc(&ctx.regs, uc);
		return;
	}
	ctx.regs.pc = r->start;
	/* A TRAP being removed has lost its site before its breakpoint goes:
	 * the instruction alone, simulated or out of line. (Not through
	 * r->tramp blindly: a simulated instruction may have no out-of-line
	 * copy, when no trampoline memory was left in reach; a thread sent
	 * to address 0 died in e2e-torture's riscv64 batch storm.) */
	if (ctx.site)
		np__dispatch(&ctx);
	if (!ctx.redirect) {
		if (r->insn[0].cls != NP_INSN_SIMULATED ||
		    np_host_isa->simulate(&r->insn[0], &ctx.regs, &self_mem))
			ctx.regs.pc = np_trap_block(r, at); /* the out-of-line copy */
	}
	np_host_regs_to_uc(&ctx.regs, uc);
}

/* Is the breakpoint at 'at' the tail of an out-of-line copy that cannot
 * jump back (host/layout.h)? Then where to resume. */
static bool trap_back(uint64_t at, uint64_t *resume)
{
	uint64_t words[2], w = np_trap_back_words(at, np_host_isa->trap_len);
	if (!np_codemem_holds(at) || !np_codemem_holds(w + sizeof(words) - 1))
		return false;
	np_copy(words, (const void *)(uintptr_t)w, sizeof(words));
	if (words[1] != ~words[0])
		return false;
	*resume = words[0];
	return true;
}

enum trap_kind { TRAP_OURS, TRAP_GONE, TRAP_FOREIGN };

/* Whose breakpoint is at 'at'. The table lookup and the look at the byte
 * are two reads the engine may edit between: a breakpoint removed and put
 * back (detach, then attach at the same address) can show the old table
 * and the new byte. Writers publish the table before writing a breakpoint,
 * so a breakpoint byte with no entry is foreign only if the table did not
 * change while we looked. */
static enum trap_kind classify(uint64_t at, struct np_region **r)
{
	uint8_t trap[16], cur[16];
	size_t len = np_host_isa->trap_len;
	np_host_isa->emit_trap(trap);
	for (int tries = 0; tries < 1000; tries++) {
		const struct trap_table *t = atomic_load_explicit(&table, memory_order_acquire);
		if ((*r = lookup(t, at)))
			return TRAP_OURS;
		np_copy(cur, (const void *)at, len);
		if (!np_same(cur, trap, len))
			return TRAP_GONE; /* already removed: run the original */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&table, memory_order_acquire) == t)
			return TRAP_FOREIGN;
	}
	return TRAP_FOREIGN;
}

/* How deep this thread is in the SIGTRAP handler (a handler's own code may
 * trap: SA_NODEFER). Initial-exec: set before the handler calls anything,
 * for the stop signal's handler to read (stop.c). */
static __thread unsigned trap_level __attribute__((tls_model("initial-exec")));

unsigned np_trap_level(void)
{
	return trap_level;
}

/* Where the thread goes: 'uc' written, or true for the disposition the
 * program set (sigchain.c). */
__attribute__((no_sanitize("address"))) static bool trap_decide(siginfo_t *si, ucontext_t *uc)
{
	struct np_regs regs;
	struct np_region *r;

	if (np_host_trap_own(uc))
		return false;
	if (si->si_code <= 0) {
		/* sent by a process (kill, raise), not a breakpoint: the pc is
		 * not after one of ours, whatever the byte before it holds */
		return true;
	}
	if (si->si_code == NP_TRAP_PERF) /* a perf event's: ours is a watch */
		return !np_watch_trap(si, uc);
	np_host_regs_from_uc(&regs, uc);
	uint64_t at = regs.pc - np_host_isa->trap_pc_after;
	if (trap_back(at, &regs.pc)) { /* out of line, and back: no hit */
		np_host_regs_to_uc(&regs, uc);
		return false;
	}
	my_readers++;
	atomic_fetch_add(&readers, 1);
	enum trap_kind kind = classify(at, &r);
	if (kind == TRAP_OURS) {
		trap_hit(r, at, uc);
	} else if (kind == TRAP_GONE) {
		regs.pc = at;
		np_host_regs_to_uc(&regs, uc);
	}
	atomic_fetch_sub(&readers, 1);
	my_readers--;
	return kind == TRAP_FOREIGN;
}

/* Not instrumented by ASan: for a frame this large, clang's epilogue
 * clears the shadow with a call to libc's memset, and while a batch is
 * being placed every probed function, memset included, starts with a
 * breakpoint: the handler trapped in its own epilogue, forever.
 * A stop request (stop.c) that came while this handler ran is answered
 * here, once the thread's resume point is known, before a program's
 * handler that may not return; one that comes later waits until the
 * thread resumes, as sa_mask would have it. */
__attribute__((no_sanitize("address"))) static void sigtrap_handler(int sig, siginfo_t *si,
								     void *ucv)
{
	unsigned level = ++trap_level;
	atomic_signal_fence(memory_order_seq_cst);
	int saved_errno = *np_errno(); /* not errno: no libc call here */
	bool chain = trap_decide(si, ucv);
	*np_errno() = saved_errno;
	/* from here on a stop request waits for the return to 'uc' (sigreturn
	 * restores its mask), or is owed now */
	np_patch_block_stop();
	atomic_signal_fence(memory_order_seq_cst);
	trap_level = level - 1;
	np_patch_answer_owed(ucv, level);
	if (chain) {
		np_trap_chain(sig, si, ucv);
		*np_errno() = saved_errno;
	}
}

uint64_t np_trap_handler_entry(void)
{
	return (uint64_t)(uintptr_t)sigtrap_handler;
}

int np_trap_init(void)
{
	struct sigaction sa = {.sa_sigaction = sigtrap_handler,
			       .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER};
	struct sigaction prev;
	sigemptyset(&sa.sa_mask);
	/* A thread asked to move out of bytes being patched (stop.c) answers
	 * once its SIGTRAP is handled, from the pc the handler resumes at:
	 * asked inside the handler, it would show the handler's pc, and then
	 * resume at a pc inside the new bytes (a breakpoint just removed,
	 * under a jump now). */
	sigaddset(&sa.sa_mask, np_patch_signal());
	if (sigaction(SIGTRAP, &sa, &prev))
		return -errno;
	np_trap_chain_init(&prev);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Engine internals shared by src/core/ and the host runtime.
 *
 * Objects, from small to large:
 *   np_probe   what the user attached: handlers, data, a counter slot.
 *   np_site    one probed instruction address; holds the probes attached
 *              there as an immutable list swapped atomically (RCU style),
 *              so the hit path reads it without a lock.
 *   np_region  a run of whole instructions patched as one unit: for JUMP,
 *              the bytes the branch displaces (one or more sites share it);
 *              for TRAP, the one instruction under the breakpoint.
 *   np_thread  per-thread state claimed on a thread's first hit: recursion
 *              guard, hit/miss counters per probe slot, shadow stack.
 *
 * Everything the hit path touches is reachable without locks. Attach and
 * detach serialise on one engine mutex.
 */
#ifndef NP_INTERNAL_H
#define NP_INTERNAL_H

#include <nanoprobe/nanoprobe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "host/host.h" /* the host runtime's contract */
#include "plan/plan.h"

/* Counter slots per thread: as many probes as the command can name (its
 * records number them in 16 bits). A thread's block is mostly untouched
 * zero pages: only the slots it hits cost memory. */
#define NP_MAX_PROBES 65536
#define NP_SHADOW_DEPTH 16384  /* return probes outstanding per thread */
#define NP_MAX_THREAD_BLOCKS 4096 /* threads with state at once (thread.c) */
#define NP_MAX_REGION_INSNS NP_PLAN_MAX_INSNS /* instructions one region may displace */
#define NP_FD_HIGH 700         /* where kept descriptors go (np_fd_move_high) */

struct np_site;

/* Handler context. The trampolines build it on the stack: the layout is a
 * contract with src/host/<isa>/tramp.S (offsets checked at compile time). */
struct np_ctx {
	struct np_site *site; /* +0 */
	uint32_t kind;        /* +8: NP_CTX_ENTRY or NP_CTX_RETURN */
	uint32_t redirect;    /* +12: nonzero: resume at regs.pc/sp */
	struct np_regs regs;  /* +16 */
};
#define NP_CTX_REGS_OFF 16

#if defined(__SANITIZE_ADDRESS__)
#define NP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NP_ASAN 1
#endif
#endif

/*
 * A context a trampoline built on the thread's stack, below every frame
 * the compiler knows of. Under ASan its shadow may still hold a dead
 * frame's poison: a thread made after fork gets the stack of a thread
 * that did not come along, and a probe hit in its start-up (before ASan's
 * thread start clears the stack's shadow) would read its own context as
 * an overflow. The hit path owns these bytes; each entry from a
 * trampoline says so (ctx.c). Nothing in other builds.
 */
#ifdef NP_ASAN
void np_ctx_claim(struct np_ctx *ctx);
#else
static inline void np_ctx_claim(struct np_ctx *ctx)
{
	(void)ctx;
}
#endif
/* kind: low byte entry/return; higher bits say which registers a lean
 * trampoline left out of ctx (np_host_reg_captured). */
enum {
	NP_CTX_ENTRY = 0,
	NP_CTX_RETURN = 1,
	NP_CTX_CAPTURE_ARGS = 0x100, /* NP_PROBE_ARGS_ONLY entry */
	NP_CTX_CAPTURE_RET = 0x200,  /* the return trampoline */
	NP_CTX_ARMED = 0x400,        /* the entry trampoline pushed a shadow
				      * frame itself: it calls the function */
	NP_CTX_NO_FPU = 0x800,       /* a trampoline that saved no FP/vector
				      * state: its site's handlers were proven
				      * (or promised) not to touch it when it
				      * was built */
};
#define NP_CTX_KIND(ctx) ((ctx)->kind & 0xff)

struct np_probe {
	uint64_t addr;
	struct np_site *site;
	np_handler_fn on_entry, on_return;
	void *data;
	char *name;
	uint32_t slot;         /* counter slot in every np_thread */
	enum np_strategy requested;
	unsigned flags;
	uint64_t func_start;   /* bounds given by the caller, or 0 */
	size_t func_size;
	bool detached;
	bool fell_back;        /* AUTO, placed as TRAP once its queued jump
				* could not be written (probe.c) */
	bool uses_fpu;         /* the handlers may change vector state */
	bool internal;         /* the engine's own: its misses have no reason */
	uint64_t hits_base;    /* counts already in the slot when attached */
	uint64_t missed_base;
	_Atomic uint64_t missed_global; /* misses with no thread block */
	struct np_probe *next_in_site;
};

struct np_handler {
	np_handler_fn on_entry, on_return;
	void *data;
	struct np_probe *probe;
	uint32_t slot;
};

/* Immutable once published; replaced as a whole. */
struct np_hlist {
	uint32_t n;
	uint32_t nret; /* handlers with on_return */
	struct np_handler h[];
};

struct np_region;

struct np_site {
	uint32_t version;        /* bumped with every new handler list; the
				  * inline hit path compares it (offset 0) */
	uint64_t addr;
	struct np_hlist *_Atomic list;
	struct np_region *region;
	struct np_probe *probes; /* attach order, engine lock held */
	uint32_t gen;            /* bumped on reuse: validates shadow entries */
	bool func_entry;         /* addr is the start of its function, or
				  * the instruction after its landing pad */
	uint8_t entry_pad;       /* that pad: enum np_landing_pad */
	uint8_t pad_len;         /* bytes of pads before addr (entry: addr - pad_len) */
	uint8_t ret_pac;         /* the key the function signs its return
				  * address with (NP_PAD_PAC_A/B), else 0 */
	uint64_t func_end;       /* entry: where its function ends (shadow.c's
				  * same-slot proof), addr when unknown */
	bool live;
	bool args_only;          /* every probe here set NP_PROBE_ARGS_ONLY */
	unsigned fpu;            /* vector state the trampoline saves */
	struct np_site *hash_next; /* live sites by address (probe.c) */
};

enum np_fpu_save { NP_FPU_NONE = 0, NP_FPU_FULL = 1 };

struct np_region {
	uint64_t start, end;          /* displaced [start, end) */
	enum np_strategy strategy;    /* JUMP or TRAP */
	bool forced;                  /* the strategy was requested explicitly */
	uint8_t pun;                  /* the jump's last bytes, [end, end + pun),
				       * are the next instruction's first, left
				       * as they are (plan.c, np_plan_pun) */
	uint8_t pin;                  /* 0, or the jump's bytes from start + pin
				       * on must stay orig's: its trampoline lies
				       * where that holds (np_plan_pun_window) */
	bool queued;                  /* in a batch, not yet patched (batch.c) */
	uint8_t orig[32];             /* original bytes of [start, end) */
	uint8_t patch[32];            /* the bytes written there */
	unsigned ninsn;
	struct np_insn insn[NP_MAX_REGION_INSNS];
	uint32_t tramp_off[NP_MAX_REGION_INSNS]; /* where each insn's block starts */
	uint64_t tramp;               /* trampoline or out-of-line slot */
	size_t tramp_len;
	size_t tramp_cap;             /* the memory it was given */
	/* What the SIGTRAP handler sends threads to: tramp and tramp_off as
	 * they were when r last entered the trap table, which is always after
	 * its trampoline was written (trap.c, np_trap_block). */
	struct {
		uint32_t seq;         /* odd while the engine writes it */
		uint64_t tramp;
		uint32_t off[NP_MAX_REGION_INSNS];
	} pub;
	/* JUMP: the patch is jump_len bytes; jump_via != 0 means the long
	 * form through one of those registers (free at the site), for ISAs
	 * whose far jump needs one (np_isa.emit_jump_via: riscv64). */
	unsigned jump_len;
	uint64_t jump_via;
	uint64_t jumps_to;            /* where the patch in place jumps, 0: none */
	struct np_reloc_scratch scratch; /* what relocated code may clobber */
	struct np_site *sites[NP_MAX_REGION_INSNS]; /* per insn, or NULL */
};

/* Per-thread state. Claimed on a thread's first hit from a pool that the
 * control path keeps stocked, so the hit path never allocates. */
struct np_shadow_frame {
	uint64_t ret;  /* the real return address */
	uint64_t slot; /* where it lived on the stack (entry sp on x86); 0:
			* a hole, a frame that returned under others kept */
	struct np_site *site;
	uint32_t gen;
	uint32_t flags; /* the site's ret_pac (how a spill of ret is signed),
			 * NP_RET_FPU: its return saves the vector state */
	/* np_ctx_call_data: written by the entry handlers before the frame is
	 * pushed, so it is zeroed whenever a frame leaves the stack. */
	uint64_t data;
	/* What the slot holds while the frame is armed: the shared return
	 * trampoline, or the return point of the trampoline that called the
	 * function (x86-64 JUMP). Unwinders put ret back where they find it. */
	uint64_t expect;
};

#define NP_RET_PAC 0xffu
#define NP_RET_FPU 0x100u

struct np_thread {
	struct np_site *_Atomic in_site; /* non-NULL while handlers run */
	_Atomic int tid;
	uint32_t shadow_top;
	uint32_t index;
	/* Frames the inline paths may push: NP_SHADOW_DEPTH, or 0 while
	 * return probes are off (np_shadow_disarm); the C path then counts
	 * the miss. */
	_Atomic uint32_t shadow_limit;
	uint64_t ret_data; /* the returning frame's data, for its handlers */
	uint64_t hits[NP_MAX_PROBES];
	uint64_t missed[NP_MAX_PROBES];
	struct np_shadow_frame shadow[NP_SHADOW_DEPTH];
	/* What follows only C reads (shadow.c). */
	struct np_shadow_state {
		/* The thread's own stack, [home_lo, home_hi), where frames
		 * compare by address (set by the control path once home_ok). */
		_Atomic uint64_t home_lo, home_hi;
		_Atomic uint32_t home_ok; /* 0 unknown, 1 set, 2 none to be had */
		uint64_t tls;             /* an address in its static TLS */
		/* Frames below switch_floor were pushed before the thread last
		 * switched stacks (swapcontext): addresses say nothing of them. */
		uint32_t switch_floor;
		/* A full stack that nothing could be reclaimed from: its top
		 * frame then, so that the next push does not scan again. */
		uint64_t full_slot, full_ret;
		uint64_t why[NP_MISS_REASONS]; /* misses by reason */
		uint16_t order[NP_SHADOW_DEPTH]; /* scratch: frames sorted */
	} sh;
};

/* fd duplicated at NP_FD_HIGH or above (close-on-exec), the original
 * closed; fd itself if that fails. */
int np_fd_move_high(int fd);

/* The calling thread's block; claims one on first use, growing the pool
 * with one mmap if a burst of new threads emptied it (NULL only when out of
 * memory). Async-signal-safe; after the first use, one TLS load. */
struct np_thread *np_thread_self(void);
struct np_thread *np_thread_peek(void); /* no claim */
/* An entry handler redirected the call: no frame will carry its data. */
void np_thread_drop_call_data(struct np_ctx *ctx);
int np_thread_pool_init(void);
void np_thread_pool_stock(void);  /* control path: keep spare blocks */
uint64_t np_thread_sum_hits(uint32_t slot);
uint64_t np_thread_sum_missed(uint32_t slot);
/* Wait until no thread is running handlers of 'site' (after its list
 * changed and a membarrier made the change visible). */
void np_thread_wait_site(const struct np_site *site);
/* Is the thread tid running a probe's handlers (in_site)? For a thread
 * judged from outside rather than asked (stop.c). */
bool np_thread_in_handler(int tid);
/* The block of thread tid, NULL if it has none. */
const struct np_thread *np_thread_find(int tid);

/* The hit path: called by trampolines and the trap handler. */
void np__dispatch(struct np_ctx *ctx);
void np__ret_dispatch(struct np_ctx *ctx);
void np__shadow_arm(struct np_ctx *ctx); /* at an entry: hijack the return */
struct np_thread **np_thread_tls_slot(void);

/* The shadow stack (shadow.c). */
/* Push a frame for the call ctx enters (its entry handlers have run),
 * after dropping the frames proven dead; a miss if there is no room. */
void np_shadow_push(struct np_thread *t, struct np_ctx *ctx, struct np_site *site,
		    const struct np_hlist *l);
/* An unwinder starts on this thread at stack position pos: the real
 * return addresses of the frames it may walk back where they live now. */
void np_shadow_unwind(struct np_thread *t, uint64_t pos);
/* The thread switches stacks (swapcontext, setcontext). */
void np_shadow_switch(struct np_thread *t);
/* A block is claimed (thread.c) or found free (the control path). */
void np_shadow_reset(struct np_thread *t, bool claimed);
/* The bounds of threads' own stacks (stacks.c). Control path: learn those
 * of these blocks, and the main thread's once per process. */
void np_shadow_learn_stacks(struct np_thread *const *blocks, size_t n);
/* Does a lie on t's own stack, as far as is known? (any thread) */
bool np_stack_home(const struct np_thread *t, uint64_t a);
/* Return probes off from now on: every arm counts as missed. */
void np_shadow_disarm(const char *why);
bool np_shadow_disarmed(void);
/* A miss of the handlers with return handlers of l (on_return only: ret),
 * or of every handler, on thread t (NULL: none) for a reason. */
void np_miss_list(struct np_thread *t, const struct np_hlist *l, bool ret,
		  enum np_miss_reason why);
void np_miss_one(struct np_thread *t, const struct np_handler *h, enum np_miss_reason why);
/* The reason alone, where the miss is counted elsewhere (watches). */
void np_miss_why(struct np_thread *t, enum np_miss_reason why);
uint64_t np_thread_sum_why(enum np_miss_reason why);
uint64_t np_miss_no_thread(enum np_miss_reason why); /* with no thread block */
/* Every block, free or not (control path). */
void np_thread_each(void (*fn)(struct np_thread *t, void *cookie), void *cookie);
/* Owner-only counter bump: a plain add, readable by others. */
static inline void np_bump(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}
/* May this handler run where the trampoline saved no FP/vector state? A
 * handler that may touch it can meet such a trampoline: one built before
 * its probe joined the site, which a thread entered before the rebuilt
 * one was in (a return trampoline chosen at the call's entry, likewise).
 * It is not run there, its hit counted as missed: run, it would change
 * the program's registers. */
static inline bool np_handler_may_run(const struct np_handler *h, bool fpu_saved)
{
	return fpu_saved || !h->probe->uses_fpu;
}
/* Control path, engine lock not held (unwind.c): guard the unwinders and
 * stack switchers of the modules loaded since, once return probes are
 * asked for (returns: this call asks). -EOPNOTSUPP when a module's
 * unwinder cannot be found: return probes are then refused, and turned
 * off if any were in place (np_unwind_refusal says why). */
int np_unwind_guard_refresh(bool returns);
const char *np_unwind_refusal(void);

/* Sites and regions (engine lock held). */
struct np_site *np_site_get(uint64_t addr);
struct np_site *np_site_new(uint64_t addr);
void np_site_release(struct np_site *site);
struct np_region *np_region_find(uint64_t addr);       /* start <= addr < end */
struct np_region *np_region_overlapping(uint64_t start, uint64_t end);
/* The index of the regions in place (region_index.c). np_region_each calls
 * fn on every region overlapping [lo, hi), the latest linked first in each
 * page, until fn returns true (then it returns true); fn must not link or
 * unlink. */
int np_region_link(struct np_region *r); /* 0 or -ENOMEM */
void np_region_unlink(struct np_region *r);
bool np_region_each(uint64_t lo, uint64_t hi, bool (*fn)(struct np_region *r, void *cookie),
		    void *cookie);
/* Which of r's displaced instructions starts at pc, or -1. */
int np_region_insn_index(const struct np_region *r, uint64_t pc);
int np_region_place(struct np_site *site, struct np_probe *probe, const char *who);
int np_region_place_trap(struct np_site *site, struct np_probe *probe, const char *who);
int np_region_remove_site(struct np_site *site);
int np_region_refresh(struct np_region *region);
int np_region_refresh_after_detach(struct np_region *region); /* never fails */
int np_site_publish(struct np_site *site);

/* Batches (batch.c, engine lock held): between begin and end, region.c
 * queues the regions it places or removes, and one pass of the patching
 * protocol writes them all (at end, or at a flush when something must see
 * them in place first). A queued region that cannot be placed is undone
 * (np_region_abandon) and failed() is told about each of its sites;
 * np_batch_end returns the first error of a removal. */
void np_batch_begin(void (*failed)(struct np_site *site, int err));
int np_batch_end(void);
bool np_batch_active(void);
bool np_batch_pending(const struct np_region *r);
void np_batch_flush(void);
int np_batch_install(struct np_region *r, bool move_threads); /* r->patch */
int np_batch_remove(struct np_region *r, size_t len);         /* r->orig */
void np_region_abandon(struct np_region *r, int err,
		       void (*failed)(struct np_site *site, int err));
void np_region_forget(struct np_region *r); /* removed: unlink, retire */

/* Lock-free lookup of breakpoints, for the trap handler. */
struct np_region *np_trap_lookup(uint64_t addr);
int np_trap_table_put(uint64_t addr, struct np_region *region);
uint64_t np_trap_block(const struct np_region *r, uint64_t at);
int np_trap_table_drop(uint64_t addr);
int np_trap_table_move(const struct np_region *from, struct np_region *to);
int np_trap_table_edit_many(struct np_region *const *add, size_t nadd,
			    bool (*drop)(uint64_t addr, const struct np_region *r, void *cookie),
			    void *cookie);
int np_trap_init(void);
/* The end of an out-of-line copy that cannot jump back: a breakpoint and
 * where to go from it (at most NP_TRAP_BACK_TAIL bytes, written at pc).
 * Returns its length, or -ENOSPC. */
#define NP_TRAP_BACK_TAIL 40
int np_trap_back_tail(uint8_t *buf, size_t cap, uint64_t pc, uint64_t resume);
/* The stop signal may interrupt the SIGTRAP handler where a handler's
 * sa_mask is not honoured (qemu-riscv64 7.2): how deep the thread is in
 * it, and its entry (for stop.c, which then answers on the way out). */
unsigned np_trap_level(void);
uint64_t np_trap_handler_entry(void);
void np_trap_defer_free(void *mem);

/* Signals that are not ours (sigchain.c). np_sig_chain delivers one to
 * the disposition 'act' as the kernel would have (SA_RESETHAND writes
 * SIG_DFL into 'home'); 'refaults': returning re-executes the instruction
 * that raised it. The program's SIGTRAP disposition is kept behind the
 * engine's handler: np_trap_chain_swap reads and sets it (as sigaction
 * would; -EAGAIN before the engine's handler is installed), np_trap_chain
 * delivers to it. */
void np_sig_chain(const struct sigaction *act, struct sigaction *home, int sig, siginfo_t *si,
		  void *uc, bool refaults);
void np_trap_chain_init(const struct sigaction *prev);
int np_trap_chain_swap(const struct sigaction *act, struct sigaction *old);
void np_trap_chain(int sig, siginfo_t *si, void *uc);

/* Where an entry probe goes (entry.c): addr is a function's entry (the
 * bounds the caller gave, else the ELF symbol's); site is addr, or the
 * instruction after the entry's landing pads (arm64 bti c, paciasp). */
struct np_entry {
	uint64_t site;
	uint8_t pad;     /* the last pad's kind: enum np_landing_pad */
	uint8_t pad_len; /* site - addr */
	uint8_t ret_pac; /* the key the function signs its return address with */
	uint64_t func_end; /* the function's end, or its start when unknown */
};
bool np_entry_find(uint64_t addr, uint64_t func_start, size_t func_size, struct np_entry *out);

/* Function bounds (struct np_func_bounds: plan/plan.h). */
int np_symbol_bounds(uint64_t addr, struct np_func_bounds *out);
/* Room for one more element in the array *v (n used of *cap), doubling
 * it; false when out of memory (symbols.c). */
bool np_grow(void *v, size_t *cap, size_t n, size_t size);
/* addr is the entry of setjmp, vfork or another function that returns
 * twice (by its ELF symbol name). */
bool np_symbol_returns_twice(uint64_t addr);
/* The functions named in names[] (NULL-terminated) that the module mapped
 * at addr defines, local ones included: their addresses in out[] (0: none).
 * unnamed_unwinder: the module carries a stack unwinder of its own (a
 * static libgcc_eh, LLVM's libunwind) and no symbol table to find it by.
 * path gets the module's file. 0, or -errno. */
int np_module_functions(uint64_t addr, const char *const *names, uint64_t *out,
			bool *unnamed_unwinder, char *path, size_t path_len);
/* The GNU property FEATURE_1_AND bits of the ELF file mapped at addr
 * (arm64: 1 BTI, 2 PAC), 0 when none or not a file. */
uint32_t np_module_features(uint64_t addr);
/* Direct branches of the functions around addr (neighbors.c) that land in
 * (addr, addr + span): passed to add. */
void np_neighbor_targets(uint64_t addr, size_t span, void (*add)(void *, uint64_t),
			 void *cookie);
/* What the functions of the module mapped at addr do to each other's
 * registers (src/arch/regsum.h), for ISAs whose plans need free
 * registers; NULL when unknown (the analysis then assumes the least). */
struct np_regsum;
const struct np_regsum *np_neighbor_regsum(uint64_t addr);
/* The executable sections of the ELF file mapped at addr (stubs: only
 * its PLT sections), at run-time addresses: how many were written to
 * lo[], hi[] (at most max); 0 when unknown (no section headers). */
int np_symbol_sections(uint64_t addr, bool stubs, uint64_t *lo, uint64_t *hi, int max);
/* The .eh_frame_hdr search table of the module mapped at addr (fde.c):
 * false when it has none that can be read. */
struct np_fde_table {
	const int32_t *e;        /* pairs: FDE start, FDE; relative to base */
	uint64_t base;           /* runtime address of .eh_frame_hdr */
	uint32_t n;
	unsigned long long subs; /* modules unloaded so far (dl_phdr_info) */
};
bool np_fde_table(uint64_t addr, struct np_fde_table *t);
uint64_t np_fde_table_start(const struct np_fde_table *t, uint32_t i);
/* Where the code of entry i's FDE ends (its pc_range), 0 when unreadable. */
uint64_t np_fde_table_end(const struct np_fde_table *t, uint32_t i);
/* The FDE whose range holds addr: [start, end), and where the next FDE
 * starts (0: none). Says nothing of how its code is entered. */
struct np_fde_range {
	uint64_t start, end, next;
};
bool np_fde_around(uint64_t addr, struct np_fde_range *out);

/* Executable memory near code, never writable through its own mapping. */
uint64_t np_codemem_alloc(uint64_t near, size_t len, uint64_t reach);
/* len bytes starting in [lo, lo + size); 0 if no room can be found there. */
uint64_t np_codemem_alloc_in(uint64_t lo, uint64_t size, size_t len);
void np_codemem_retire(uint64_t addr, size_t len);
bool np_codemem_holds(uint64_t pc);
bool np_codemem_equals(uint64_t addr, const void *bytes, size_t len);
void np_codemem_note_tramp(uint64_t at, size_t len, uint64_t land);
void np_codemem_forget_tramps(bool (*gone)(uint64_t at, void *cookie), void *cookie);
uint64_t np_codemem_committed(void); /* bytes ever handed out (tests) */
/* Reclaiming retired trampolines (reclaim.c). */
void np_reclaim_call_begin(void); /* an API call that writes code begins */
uint64_t np_reclaim_take(size_t len, bool (*fits)(uint64_t at, size_t len, void *cookie),
			 void *cookie, uint64_t chunk);
/* One thread's state in a census (in the stop signal's handler, or from
 * outside while it is blocked), or a thread that cannot be looked at. */
void np_reclaim_look(const struct np_regs *regs, bool all_regs, const struct np_thread *t);
void np_reclaim_look_stack(uint64_t lo, uint64_t end, const struct np_thread *t);
void np_reclaim_unsure(void);
void np_reclaim_stats(uint64_t *in_limbo, uint64_t *free_bytes);
/* Each trampoline a trap-table entry sends a thread to (trap.c). */
void np_trap_each_published(void (*fn)(uint64_t tramp, void *cookie), void *cookie);
bool np_codemem_lands_inside(uint64_t start, uint64_t end);
bool np_codemem_leads_inside(uint64_t pc, uint64_t start, uint64_t end);
int np_code_write(uint64_t addr, const void *src, size_t len);
/* A trampoline's bytes: in a batch, gathered with its neighbours' into one
 * write, made before the next np_code_write. */
int np_codemem_fill(uint64_t addr, const void *src, size_t len);
int np_codemem_flush(void);
void np_code_begin(void); /* an API call that may write code starts */
bool np_code_mapped_exec(uint64_t addr, size_t len);

/* Engine state. */
/* The engine lock (fork.c), held by attach, detach and maintenance: 0, or
 * -EPERM in a child that shares its parent's memory (vfork), or
 * -ENOTRECOVERABLE in a child forked while another thread was changing
 * probes (both logged); nothing is held then. np_engine_unlock runs the
 * waits for handlers queued meanwhile, once the lock is free: no holder
 * waits for a handler, which may be forking (fork.c). */
int np_engine_lock(void);
void np_engine_unlock(void);
/* After the operation that holds the lock: a membarrier, every thread out
 * of site's handlers, then done(a, b), under the lock again if 'locked'
 * (done may be NULL: the wait alone, before the operation returns). */
typedef void np_quiesce_fn(void *a, void *b);
void np_quiesce_later(const struct np_site *site, np_quiesce_fn *done, void *a, void *b,
		      bool locked);
int np_fork_init(void);
/* A child that runs in its parent's memory (vfork, CLONE_VM)? Raw
 * syscalls only: the hit path asks it. */
bool np_fork_shares_memory(void);
/* In a forked child, before the engine runs there: drop what names the
 * parent's other threads (thread.c, trap.c, watch.c, sigchain.c;
 * code_write.c's np_code_after_fork). */
void np_thread_after_fork(void);
void np_trap_after_fork(void);
void np_sigchain_after_fork(void);
void np_watch_after_fork(void);
int np_engine_init(void);
bool np_in_handler(void);
void np_logf(enum np_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint32_t np_slot_alloc(void);
void np_slot_free(uint32_t slot);
void np_slot_bases(uint32_t slot, uint64_t *hits, uint64_t *missed);

/* Fault-safe, errno untouched (uread.c): all len bytes, or false. */
bool np_uread_quiet(void *dst, uint64_t addr, size_t len);
#endif

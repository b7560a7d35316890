/* SPDX-License-Identifier: MIT */
/*
 * The objects the engine (src/core/) and the host runtimes (src/host/<isa>/)
 * share: the handler context the trampolines build, the site, region and
 * thread blocks they read, with the offsets the assembly relies on checked
 * where it is written (src/host/<isa>/runtime.c). Part of the host contract:
 * host.h says what the runtime provides, this file what it works on.
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
#ifndef NP_HOST_LAYOUT_H
#define NP_HOST_LAYOUT_H

#include <nanoprobe/nanoprobe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "plan/plan.h"

/* Counter slots per thread: as many probes as the command can name (its
 * records number them in 16 bits). A thread's block is mostly untouched
 * zero pages: only the slots it hits cost memory. */
#define NP_MAX_PROBES 65536
#define NP_SHADOW_DEPTH 16384  /* return probes outstanding per thread */
#define NP_MAX_THREAD_BLOCKS 4096 /* threads with state at once (thread.c) */
#define NP_MAX_REGION_INSNS NP_PLAN_MAX_INSNS /* instructions one region may displace */

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
	/* JUMP of the hop form (src/plan/hop.c): the patch at start jumps to
	 * hop, dead bytes where the jump to the trampoline (jump_len bytes of
	 * the ISA's short form) is written; 0: none. */
	uint64_t hop;
	uint8_t hop_orig[8];          /* their original bytes */
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

/* What the trampolines (src/host/<isa>/tramp.S, and the code the runtimes
 * emit) read at fixed offsets, checked here, once for every host. */
_Static_assert(offsetof(struct np_ctx, regs) == NP_CTX_REGS_OFF, "ctx layout");
_Static_assert(offsetof(struct np_ctx, redirect) == 12, "ctx layout");
_Static_assert(sizeof(struct np_ctx) == 288, "ctx layout used by tramp.S");
_Static_assert(offsetof(struct np_thread, in_site) == 0,
	       "tramp.S: x86-64 cmpq $0, (block); arm64 ldr x10, [block]");
_Static_assert(offsetof(struct np_site, version) == 0,
	       "tramp.S: x86-64 cmpl $v, (site); arm64 ldr w11, [site]");
/* x86-64's inline return path (its tramp.S: T_*, F_*, S_GEN, CTX_ARMED) */
_Static_assert(offsetof(struct np_thread, shadow_top) == 12, "tramp.S: T_TOP");
_Static_assert(offsetof(struct np_thread, shadow_limit) == 20, "tramp.S: T_LIMIT");
_Static_assert(offsetof(struct np_thread, ret_data) == 24, "tramp.S: T_RET_DATA");
_Static_assert(offsetof(struct np_thread, shadow) == 1048608, "tramp.S: T_SHADOW");
_Static_assert(sizeof(struct np_shadow_frame) == 48, "tramp.S: FRAME_ADDR");
_Static_assert(offsetof(struct np_shadow_frame, ret) == 0 &&
		       offsetof(struct np_shadow_frame, slot) == 8 &&
		       offsetof(struct np_shadow_frame, site) == 16 &&
		       offsetof(struct np_shadow_frame, gen) == 24 &&
		       offsetof(struct np_shadow_frame, flags) == 28 &&
		       offsetof(struct np_shadow_frame, data) == 32 &&
		       offsetof(struct np_shadow_frame, expect) == 40,
	       "tramp.S: F_*");
_Static_assert(offsetof(struct np_site, gen) == 40, "tramp.S: S_GEN");
_Static_assert(NP_CTX_ARMED == 0x400, "tramp.S: CTX_ARMED");

/* The hit path: the engine's entries, called by trampolines and the trap
 * handler (the runtime's tramp.S calls them by name). */
void np__dispatch(struct np_ctx *ctx);
void np__ret_dispatch(struct np_ctx *ctx);
void np__shadow_arm(struct np_ctx *ctx); /* at an entry: hijack the return */
/* Where the calling thread's block pointer lives (its TLS slot). */
struct np_thread **np_thread_tls_slot(void);

/* The tail of an out-of-line copy that cannot jump back (src/host/tramp.c
 * writes it, src/core/trap.c reads it): a breakpoint at trap_at, then, at
 * the next 8-byte boundary after it, the address to resume at and its
 * complement. No other breakpoint runs in trampoline memory (no ISA
 * relocates one: it is refused as another debugger's), and the complement
 * tells a tail from what a bug might run instead (filler). The memory is
 * reclaimed only once no thread can be in it, so a thread still inside a
 * retired copy finds its way back as well. At most NP_TRAP_BACK_TAIL
 * bytes. */
#define NP_TRAP_BACK_TAIL 40
static inline uint64_t np_trap_back_words(uint64_t trap_at, unsigned trap_len)
{
	return (trap_at + trap_len + 7) & ~7ull;
}

#endif

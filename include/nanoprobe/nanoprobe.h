/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe: trap-free dynamic instrumentation for Linux user space.
 *
 * A probe runs a handler when a thread reaches an address (entry handler)
 * and, at a function entry, when that call returns (return handler). The
 * engine patches the code in place: a branch to a per-probe trampoline
 * (NP_STRATEGY_JUMP) where it can prove that safe, a breakpoint and one
 * signal per hit (NP_STRATEGY_TRAP) otherwise, and it refuses, with the
 * reason, a site it cannot patch without risking the program.
 *
 * Errors: functions returning a pointer return NULL and set errno;
 * functions returning int return 0 or -1 and set errno. Every failure is
 * also logged through the log callback (np_set_log_fn) with its reason.
 */
#ifndef NANOPROBE_H
#define NANOPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* g++ 12 warns of every field a C++ designated initializer leaves out
 * (-Wmissing-field-initializers, under -Wextra; later versions do not):
 * NP_PROBE_OPTS expands to one in the user's code. As for libc's headers,
 * what this header spells raises no warning there. */
#pragma GCC system_header
extern "C" {
#endif

#define NP_API __attribute__((visibility("default")))

/* NP_PROBE_OPTS(.on_entry = f, ...) and its kind make an options struct
 * with sz filled in whose address can be taken, &NP_PROBE_OPTS(...), for
 * the full expression, from C and from C++. C++ has no compound literals
 * (g++ takes them as an extension, but as rvalues whose address cannot be
 * taken): there the struct is a temporary, and the reference
 * np_opts_lvalue_ returns to it is an lvalue. Fields left out are zero in
 * both; designators must follow the order of the fields in C++. */
#ifdef __cplusplus
extern "C++" {
template <typename T> inline const T &np_opts_lvalue_(const T &opts)
{
	return opts;
}
}
#define NP_OPTS_(type, ...) np_opts_lvalue_(type{.sz = sizeof(type), __VA_ARGS__})
#else
#define NP_OPTS_(type, ...) ((struct type){.sz = sizeof(struct type), __VA_ARGS__})
#endif

#define NANOPROBE_VERSION_MAJOR 0
#define NANOPROBE_VERSION_MINOR 1

/* How a probe site is patched. AUTO is a request only: the engine picks
 * JUMP, else TRAP, and np_probe_strategy() reports which it chose. */
enum np_strategy {
	NP_STRATEGY_AUTO = 0,
	NP_STRATEGY_JUMP = 1, /* branch to a trampoline near the code */
	NP_STRATEGY_TRAP = 2, /* breakpoint, SIGTRAP, emulate or run out of line */
};

struct np_probe;
struct np_ctx;

/* Handlers run on the probed thread, with the probed program's registers
 * in ctx. They must be reentrant across threads. A handler that reaches a
 * probed function does not re-enter a handler on the same thread: the
 * nested hit is counted in np_probe_missed() instead. */
typedef void (*np_handler_fn)(struct np_ctx *ctx, void *data);

enum np_probe_flags {
	/* The handlers promise not to touch vector, x87 or MXCSR state, so the
	 * trampoline never saves it. Without the flag the engine decodes the
	 * handlers (every path, through direct calls and PLT slots) and saves
	 * the extended state (XSAVEC) unless it proves them vector-free: a
	 * counting handler gets the fast path, one that calls memset does not. */
	NP_PROBE_NO_FPU = 1u << 0,
	/* At a function entry, the handlers read only the arguments, the
	 * return value's register, pc and sp (as BPF trampolines allow): the
	 * trampoline then saves only the caller-saved registers, the cheapest
	 * JUMP probe there is. The other registers read as 0 in ctx and cannot be
	 * written. (A return handler sees every register the function
	 * returned with but, on x86-64, r12-r15, which read as 0: the return
	 * path keeps them without saving them.) */
	NP_PROBE_ARGS_ONLY = 1u << 1,
};

struct np_probe_opts {
	size_t sz; /* sizeof(struct np_probe_opts): lets the struct grow */
	np_handler_fn on_entry;  /* when the site is reached; may be NULL */
	np_handler_fn on_return; /* when the function returns; site must be a
					   * function entry; may be NULL */
	void *data;              /* passed to both handlers */
	enum np_strategy strategy;
	const char *name;        /* for log messages; may be NULL */
	/* Bounds of the function that contains addr. Zero: the engine finds
	 * them in the ELF symbol tables of the mapped module. */
	void *func_start;
	size_t func_size;
	unsigned flags; /* enum np_probe_flags */
};

#define NP_PROBE_OPTS(...) NP_OPTS_(np_probe_opts, __VA_ARGS__)

/* Place a probe at addr, an instruction boundary. NULL and errno on
 * failure: EINVAL (bad options, not an instruction boundary, on_return away
 * from a function entry), ENOEXEC (no executable mapping at addr),
 * EOPNOTSUPP (the site cannot be patched: reason logged), ENOMEM,
 * ENOSPC (65,536 probes attached already), E2BIG (more probes at one
 * address than its trampoline holds: 64 with entry and return handlers),
 * EDEADLK (called from a handler), EBUSY (conflicts with a forced strategy
 * already in place), EAGAIN (another thread could not be checked, or
 * stays where a jump would cut into its code: an AUTO probe then takes TRAP
 * instead). */
NP_API struct np_probe *np_probe_attach(void *addr, const struct np_probe_opts *opts);

/* Remove the probe. When it returns, no handler of this probe runs or will
 * run, and if it was the last probe at its site the original bytes are back.
 * Returns 0, or -1 with errno EDEADLK from a handler, EINVAL for NULL. */
NP_API int np_probe_detach(struct np_probe *probe);

/* Many probes at once (the shape of libbpf's uprobe_multi): what
 * np_probe_attach would do for each (addrs[i], opts[i]), in that order,
 * with the code patched for all of them in one pass of the live-patching
 * protocol (one serialisation of every core per step for the whole batch,
 * not per probe): 10,000 probes take tens of milliseconds. Probes are
 * placed independently: probes[i] is the handle, or NULL when that one was
 * refused, with its errno in errs[i] (0 for the others) if errs is given.
 * opts[i] may all point to one struct. Returns how many were attached, or
 * -1 with errno EINVAL (bad arguments), EDEADLK (called from a handler),
 * ENOMEM. */
struct np_probe_many_opts {
	size_t sz;                               /* sizeof(struct np_probe_many_opts) */
	size_t cnt;                              /* number of probes */
	void *const *addrs;                      /* cnt addresses */
	const struct np_probe_opts *const *opts; /* cnt options, one per address */
	struct np_probe **probes;                /* out: cnt handles */
	int *errs;                               /* out, optional: cnt errno values */
};
#define NP_PROBE_MANY_OPTS(...) NP_OPTS_(np_probe_many_opts, __VA_ARGS__)
NP_API int np_probe_attach_many(const struct np_probe_many_opts *opts);

/* np_probe_detach for each of probes[0..cnt) (NULL entries and probes
 * already detached are skipped), the code of all of them restored in one
 * pass of the protocol. Every probe is detached when it returns; 0, or -1
 * with errno from the first failure (the reason is logged), EDEADLK from
 * a handler, EINVAL. */
NP_API int np_probe_detach_many(struct np_probe *const *probes, size_t cnt);

/* Release the handle (detaching it first if needed). The counters below
 * stay readable between detach and free. */
NP_API void np_probe_free(struct np_probe *probe);

NP_API enum np_strategy np_probe_strategy(const struct np_probe *probe);
NP_API const char *np_strategy_name(enum np_strategy strategy);
NP_API void *np_probe_addr(const struct np_probe *probe);

/* Hits: entry handler calls (or return-probe arms when there is no entry
 * handler). Missed: handler calls that did not happen, for one of the
 * reasons below. */
NP_API uint64_t np_probe_hits(const struct np_probe *probe);
NP_API uint64_t np_probe_missed(const struct np_probe *probe);

/* Why a handler did not run. */
enum np_miss_reason {
	/* the probed code ran inside a handler on that thread (the recursion
	 * guard) */
	NP_MISS_NESTED = 0,
	/* no memory for the thread's per-thread state */
	NP_MISS_NO_THREAD = 1,
	/* a handler that may change vector registers met a trampoline built
	 * before it, which saves none */
	NP_MISS_VECTOR = 2,
	/* return: 16,384 calls with return probes were in flight on the
	 * thread (deep recursion) */
	NP_MISS_SHADOW_FULL = 3,
	/* return: the call was left without returning: longjmp, siglongjmp,
	 * a stack switch it never came back from */
	NP_MISS_LEFT = 4,
	/* return: a stack unwinder walked over the call: a C++ exception,
	 * thread cancellation or exit, backtrace() */
	NP_MISS_UNWOUND = 5,
	/* return: return probes are off since a module was loaded whose own
	 * unwinder cannot be found (stripped, with a static libgcc_eh) */
	NP_MISS_UNGUARDED = 6,
	NP_MISS_REASONS = 7,
};
/* Misses of every probe in the process for that reason since the engine
 * started (the engine's own probes, on unwinders, left out). */
NP_API uint64_t np_missed_by(enum np_miss_reason reason);

/* Housekeeping for the control path (never from a handler): give the
 * per-thread state of exited threads back and keep a spare ready for every
 * thread of the program that has none yet, so that its first hit finds one
 * (the hit path never allocates: a thread that finds none counts as
 * missed). np_probe_attach does it too; a program that starts
 * threads in bursts while probes are attached calls it now and then (the
 * nanoprobe agent does, every 10 ms). */
NP_API void np_maintain(void);

/* --- Handler context ---------------------------------------------------- */

/* Integer/pointer argument i (0-based) of the platform calling convention,
 * read at a function entry; arguments past the registers come from the
 * stack. */
NP_API uint64_t np_ctx_arg(const struct np_ctx *ctx, unsigned i);
NP_API uint64_t np_ctx_retval(const struct np_ctx *ctx);
NP_API uint64_t np_ctx_pc(const struct np_ctx *ctx);
NP_API uint64_t np_ctx_sp(const struct np_ctx *ctx);
/* The probe's address, also in a return handler (where pc is the return
 * address). */
NP_API uint64_t np_ctx_func(const struct np_ctx *ctx);
NP_API bool np_ctx_is_return(const struct np_ctx *ctx);
/* One word that travels with a call from its entry to its return (what
 * Frida calls invocation data, kretprobes' data area): what an entry
 * handler stores here, the return handler of the same call reads. It is
 * shared by the probes of one site and starts at 0 on every call. NULL
 * outside a probe with a return handler, or when the call could not be
 * tracked (its return handler then does not run either). */
NP_API uint64_t *np_ctx_call_data(struct np_ctx *ctx);

/* General registers by number (np_reg_lookup) for this host's ISA. */
NP_API int np_reg_lookup(const char *name); /* -1 if unknown */
NP_API const char *np_reg_name(int reg);
NP_API uint64_t np_ctx_reg(const struct np_ctx *ctx, int reg);
/* Writes take effect when the handler returns. The stack pointer is read
 * only. Returns 0, or -1 with errno EINVAL. */
NP_API int np_ctx_set_reg(struct np_ctx *ctx, int reg, uint64_t value);

/* In a return handler: the value the caller sees. */
NP_API int np_ctx_set_retval(struct np_ctx *ctx, uint64_t value);
/* In an entry handler at a function entry: skip the function, the caller
 * sees value returned. -1 with errno EINVAL elsewhere. */
NP_API int np_ctx_override_return(struct np_ctx *ctx, uint64_t value);

/* Reading the program's memory from a handler: a pointer argument may be
 * NULL, freed or garbage, and reading it must not crash the program. The
 * reads are async-signal-safe. A failure sets errno on the probed thread:
 * a handler that may fail restores errno for the program. A thread that
 * blocks SIGSEGV or SIGBUS when it reads a bad address dies as if it had
 * faulted itself (the kernel cannot deliver a blocked fault). */

/* Copy len bytes from addr, which may be unmapped or unreadable, without
 * crashing: 0, or -1 with errno EFAULT (dst then holds the bytes read
 * before the fault). No syscall when the memory is readable, once
 * np_fault_guard_refresh() has found the guard in place; otherwise one
 * process_vm_readv(), whose refusal under a seccomp filter (EPERM, ENOSYS)
 * is also passed on in errno. errno is left alone on success. */
NP_API int np_read_user(void *dst, uint64_t addr, size_t len);
/* Copy a NUL-terminated string of at most len - 1 bytes (always
 * NUL-terminated when len > 0): its length (len - 1 when cut short), or -1
 * with errno as for np_read_user (dst then holds the readable prefix). */
NP_API long np_read_user_str(char *dst, uint64_t addr, size_t len);
/* Install the fault guard, the engine's SIGSEGV and SIGBUS handler (first
 * call), or check that it is still installed: a program may replace it
 * (Python's faulthandler, a JVM), and reads then fall back to the syscall.
 * Returns whether reads take the fast path. Control path only: call it
 * after the program has set its signal handlers, and from time to time.
 * Faults that are not the engine's go to the handler the program had
 * before, or kill the program as they would have without nanoprobe. */
NP_API bool np_fault_guard_refresh(void);

/* --- Watchpoints -------------------------------------------------------- */

/* A watchpoint runs a handler when a thread of the process writes (or
 * reads, or executes) memory: the CPU's debug registers, placed through
 * perf_event_open(PERF_TYPE_BREAKPOINT) on every thread, the threads
 * created later included (the kernel copies the event into each new
 * thread; nothing of ours runs on thread creation). One SIGTRAP per
 * access: microseconds (15 in the VM of docs/performance.md). Each thread
 * has few debug registers (np_watch_slots(): 4 on x86-64, shared by every
 * type); a watch that cannot be placed on every thread is refused. Linux
 * 5.13 or later (perf_event_attr.sigtrap). See docs/design.md. */
enum np_watch_type {
	NP_WATCH_WRITE = 1, /* stores */
	NP_WATCH_RW = 3,    /* loads and stores */
	NP_WATCH_EXEC = 4,  /* the instruction at addr is executed */
};

enum np_watch_hit_flags {
	/* pc is the accessing instruction. Without it pc is where the thread
	 * resumes (the instruction could not be found: see docs/design.md). */
	NP_WATCH_HIT_PC_EXACT = 1u << 0,
	/* old_value and new_value hold the watched bytes (writes, reads). */
	NP_WATCH_HIT_VALUE = 1u << 1,
	/* new_value differs from old_value: certainly a store. */
	NP_WATCH_HIT_CHANGED = 1u << 2,
};

struct np_watch;

struct np_watch_hit {
	struct np_watch *watch;
	struct np_ctx *ctx; /* the thread's registers after the access (its pc:
			     * where it resumes); np_ctx_reg and friends work */
	uint64_t addr;      /* the watched address */
	uint64_t pc;        /* the instruction that accessed it */
	int tid;
	unsigned flags;     /* enum np_watch_hit_flags */
	/* The watched bytes, zero-extended. old_value: what the previous hit
	 * of this watch left (the value at attach for the first); new_value:
	 * the memory as this handler read it. Two threads storing at once
	 * both trap; each handler reads memory after both stores may have
	 * landed, so the second-to-read may see the other's value: the hits
	 * still chain (each old_value is the new_value of the hit before it,
	 * in the order handlers read), and no store goes uncounted. */
	uint64_t old_value, new_value;
};

/* Runs on the accessing thread, in its SIGTRAP handler: async-signal-safe
 * code only. A store to the watched memory from the handler is not
 * reported again (counted in np_watch_missed). */
typedef void (*np_watch_fn)(const struct np_watch_hit *hit, void *data);

struct np_watch_opts {
	size_t sz;         /* sizeof(struct np_watch_opts) */
	void *data;        /* passed to the handler */
	const char *name;  /* for log messages; may be NULL */
};

#define NP_WATCH_OPTS(...) NP_OPTS_(np_watch_opts, __VA_ARGS__)

/* Watch [addr, addr + len). len: what the hardware watches (x86-64: 1, 2,
 * 4 or 8 bytes at an address aligned to len; arm64: 1 to 8 bytes within
 * one aligned 8-byte word); ignored for NP_WATCH_EXEC, where addr is an
 * instruction. NULL and errno on failure, the reason logged, nothing left
 * placed: EINVAL (a length or alignment the hardware cannot watch, nothing
 * mapped at addr, not executable for EXEC, bad arguments), ENOSPC (some
 * thread has no free debug register: the other watches of this process,
 * or a debugger, hold them all), EAGAIN (threads kept appearing while the
 * watch was placed), EBUSY (another watch covers some of the same bytes:
 * an access would raise one signal for both), EOPNOTSUPP (no hardware breakpoints here: an
 * emulator, a kernel without them or before 5.13), EACCES (perf events
 * forbidden: perf_event_paranoid, seccomp), EMFILE, ENOMEM, EDEADLK (from
 * a handler). */
NP_API struct np_watch *np_watch_attach(void *addr, size_t len, enum np_watch_type type,
					np_watch_fn handler, const struct np_watch_opts *opts);
/* Remove it from every thread. When this returns no handler of it runs.
 * 0, or -1 with errno EINVAL (NULL), EDEADLK (from a handler). */
NP_API int np_watch_detach(struct np_watch *watch);
/* Detach if needed and release the handle. */
NP_API void np_watch_free(struct np_watch *watch);
/* Handler calls; hits lost to a nested access (from a handler, or on a
 * thread the engine could not track). */
NP_API uint64_t np_watch_hits(const struct np_watch *watch);
NP_API uint64_t np_watch_missed(const struct np_watch *watch);
/* Debug registers per thread for watches of this type, as the kernel
 * reports them, the ones this process's watches hold included; -1 with
 * errno (as np_watch_attach) when there are none to use. */
NP_API int np_watch_slots(enum np_watch_type type);

/* --- Logging ------------------------------------------------------------ */

enum np_log_level { NP_LOG_ERROR = 0, NP_LOG_WARN = 1, NP_LOG_INFO = 2, NP_LOG_DEBUG = 3 };
typedef void (*np_log_fn)(enum np_log_level level, const char *msg, void *user);
/* Route the engine's messages; NULL restores the default (stderr, warnings
 * and errors only, or every level with NANOPROBE_DEBUG=1). */
NP_API void np_set_log_fn(np_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* NANOPROBE_H */

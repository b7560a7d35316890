/* SPDX-License-Identifier: MIT */
/*
 * The host contract: what each host's runtime (src/host/<isa>/runtime.c,
 * tramp.S, uread.S) gives the engine. The engine calls the host only
 * through these; a new host implements every function below not marked
 * "default", and may replace a default (src/host/defaults.c, weak) with
 * its own.
 *
 * What the runtime must provide, by concern:
 *   registers   np_host_regs_from_uc/_to_uc, np_host_uc_shape,
 *               np_host_reg_captured
 *   trampolines np_host_pieces (host/pieces.h): the bytes of each piece
 *               of a site block, which the one layout routine
 *               (src/host/tramp.c: np_host_build_tramp, np_host_tramp_size)
 *               puts in order; default: np_host_tramp_scratch
 *   returns     np_host_ret_slot/_get/_set/_key, np_host_ret_trampoline,
 *               np_host_ret_in_memory, np_host_return_now;
 *               default: np_host_ret_sign, np_host_ret_strip
 *   code writes np_host_patch_in_place, np_host_code_written;
 *               default: np_host_code_prot
 *   traps       np_host_trap_own
 *   the clock   NP_HOST_COUNTER; default: np_host_counter_check (none)
 *   the rest    np_host_init, np_host_syscall, and uread.S's fault-safe
 *               copies with their fixup table
 *
 * The objects it works on (struct np_ctx, np_site, np_region, np_thread)
 * are laid out in host/layout.h, the other half of the contract; the
 * engine's services a runtime may call are declared at the end of this
 * file. A runtime includes these two headers (and core/nolibc.h for the
 * hit path's libc replacements), nothing else of the engine.
 */
#ifndef NP_HOST_H
#define NP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nanoprobe/nanoprobe.h>

struct np_isa;
struct np_regs;
struct np_ctx;
struct np_region;

extern const struct np_isa *np_host_isa;
/* The host's ISA, chosen when the library is built: the one the runtime in
 * src/host/<host>/ (runtime.c, tramp.S, uread.S) is written for. */
#if defined(__x86_64__)
#define NP_HOST_ISA np_isa_x86_64
#define NP_HOST_ELF_MACHINE 62 /* EM_X86_64 */
#define NP_CPU_RELAX() __builtin_ia32_pause() /* spin-wait hint */
/* The counter core/clock.c scales: the TSC, unordered (clock.c says why). */
#define NP_HOST_COUNTER() __builtin_ia32_rdtsc()
#elif defined(__aarch64__)
#define NP_HOST_ISA np_isa_arm64
#define NP_HOST_ELF_MACHINE 183 /* EM_AARCH64 */
#define NP_CPU_RELAX() __asm__ volatile("yield")
/* none: np_host_counter_check says so, and the vDSO reads cntvct_el0 */
#define NP_HOST_COUNTER() 0ull
#elif defined(__riscv) && __riscv_xlen == 64
#define NP_HOST_ISA np_isa_riscv64
#define NP_HOST_ELF_MACHINE 243 /* EM_RISCV */
#define NP_CPU_RELAX() __asm__ volatile(".insn i 0x0f, 0, x0, x0, 0x010") /* pause */
/* none: np_host_counter_check says so, and the vDSO reads the time CSR */
#define NP_HOST_COUNTER() 0ull
#else
#error "nanoprobe has no runtime for this host CPU"
#endif

/* Host runtime (src/host/<host>/runtime.c). */
struct ucontext_t;
void np_host_regs_from_uc(struct np_regs *regs, const void *uc);
void np_host_regs_to_uc(const struct np_regs *regs, void *uc);
/* Where a signal frame's ucontext keeps, in bytes from its saved pc, the
 * interrupted stack pointer, uc_link and uc_stack: the kernel's layout,
 * which libc's ucontext_t repeats. stack_scan.c tells a signal frame by it.
 * Each runtime.c defines it with NP_UC_SHAPE(its pc field, its sp field). */
struct np_uc_shape {
	long sp, link, stack;
};
#define NP_UC_OFF(field, from) ((long)offsetof(ucontext_t, field) - (long)offsetof(ucontext_t, from))
#define NP_UC_SHAPE(pc, sp) {NP_UC_OFF(sp, pc), NP_UC_OFF(uc_link, pc), NP_UC_OFF(uc_stack, pc)}
extern const struct np_uc_shape np_host_uc_shape;
/* Build the trampoline of a region into buf (at address at): the layout
 * of src/host/tramp.c, the same on every host. */
int np_host_build_tramp(struct np_region *region, uint8_t *buf, size_t cap, uint64_t at);
size_t np_host_tramp_size(const struct np_region *region);
/* The out-of-line copy of a TRAP region's instruction that cannot jump
 * back (no trampoline memory within a jump's reach, no free register to
 * jump through): it ends with the breakpoint tail of layout.h instead.
 * Its room, and the builder, as above. */
int np_host_build_trap_back(struct np_region *region, uint8_t *buf, size_t cap, uint64_t at);
size_t np_host_trap_back_size(const struct np_region *region);
/* Return probes. At a function entry, the slot names where the return
 * address lives (x86-64: its stack address; arm64: x30, and the slot is the
 * entry sp that identifies the frame); get/set read and replace the return
 * address there. In the return trampoline, np_host_ret_key gives the same
 * slot value back for the frame returning (x86-64: sp - 8 after the ret;
 * arm64: sp, which a return leaves as it was at the entry). */
uint64_t np_host_ret_slot(const struct np_ctx *ctx);
uint64_t np_host_ret_get(const struct np_ctx *ctx);
void np_host_ret_set(struct np_ctx *ctx, uint64_t value);
uint64_t np_host_ret_key(const struct np_ctx *ctx);
uint64_t np_host_ret_trampoline(bool fpu);
/* Return address ret as a frame whose entry sp is slot keeps it, where
 * the function signs it (arm64 pac-ret: key 'pac', np_landing_pad): what
 * an unwinder must find in the frame. ret by default. */
uint64_t np_host_ret_sign(uint64_t ret, uint64_t slot, unsigned pac);
/* A return address as found in a frame, as code address: arm64 strips the
 * pointer-authentication code a pac-ret function signed it with. The word
 * by default. */
uint64_t np_host_ret_strip(uint64_t word);
int np_host_init(void);
bool np_host_ret_in_memory(void);
/* How code is written: through /proc/self/mem (false), or with aligned
 * stores into the briefly writable page (true); then, after every write,
 * the host's cache maintenance for those bytes. */
bool np_host_patch_in_place(void);
/* Protection bits the code page at addr has beyond what /proc/self/maps
 * shows, which a brief mprotect must give back (arm64: PROT_BTI, guarded
 * pages). 0 by default. */
int np_host_code_prot(uint64_t addr);
void np_host_code_written(uint64_t addr, size_t len);
/* A SIGTRAP the runtime raised itself (arm64: the redirect routine, which
 * needs every register of ctx loaded, pc and sp included): handled here
 * when it returns true. */
bool np_host_trap_own(void *uc);
/* Does ctx hold the program's value of reg, given how it was built? */
bool np_host_reg_captured(uint32_t kind, int reg);
/* A system call without libc: the hit path must not call a libc function
 * that may itself be probed before its thread has state (infinite
 * recursion: c:syscall). Returns what the kernel returns (-errno). */
long np_host_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
/* May core/clock.c read NP_HOST_COUNTER for CLOCK_MONOTONIC, as the
 * kernel says? 0, or -EOPNOTSUPP with the reason in why. By default no:
 * the vDSO is read (arm64's and riscv64's reads their counter itself,
 * with the kernel's work-arounds for counters that misbehave). */
int np_host_counter_check(char *why, size_t len);
/* Make ctx resume at the caller with 'value' returned (function entry). */
void np_host_return_now(struct np_ctx *ctx, uint64_t value);
/* Fault-safe copies (src/host/<host>/uread.S). Each load of src that may
 * fault is listed in the table with the pc to resume at, registers as
 * they were before the load; the table ends with a zero entry. */
struct np_uread_fixup {
	uint64_t insn, fixup;
};
extern const struct np_uread_fixup np_host_uread_extable[];
/* Bytes not copied: 0, or how many remain from the faulting byte on. */
size_t np_host_uread(void *dst, uint64_t src, size_t len);
/* Copies up to a NUL (not stored) or max bytes: the count copied, or
 * -(count + 1) when the next load faulted. */
long np_host_uread_str(char *dst, uint64_t src, size_t max);

/* What the engine gives the runtime (defined in src/core/). */
void np_logf(enum np_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Executable memory near code (codemem.c): len bytes within reach of
 * near, never writable through its own mapping; 0 when none. */
uint64_t np_codemem_alloc(uint64_t near, size_t len, uint64_t reach);
/* len bytes of code written at addr (codemem.c: made after the pending
 * trampoline writes of a batch). 0 or -errno. */
int np_code_write(uint64_t addr, const void *src, size_t len);
/* The GNU property FEATURE_1_AND bits of the ELF file mapped at addr
 * (arm64: 1 BTI, 2 PAC), 0 when none or not a file (symbols.c). */
uint32_t np_module_features(uint64_t addr);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The per-ISA contract.
 *
 * Every folder src/arch/<isa>/ holds the same files and fills one
 * struct np_isa. Everything reachable from it is pure: it works on
 * (bytes, pc) values and a register file, makes no syscall, touches no
 * global state, and so is compiled and unit-tested on every host for every
 * ISA. Only src/host/<host>/runtime.c and the trampoline templates know the
 * machine they run on.
 *
 * Instructions fall in three classes, as in the kernel's probes:
 *   REJECTED   never displaced nor stepped: the site is refused with reason;
 *   OUT_OF_LINE copied (relocated) into a slot or trampoline and run there;
 *   SIMULATED  the trap handler performs its effect on the register file.
 * A simulated instruction can also run out of line; the class records the
 * cheapest safe way for the trap path.
 */
#ifndef NP_ARCH_H
#define NP_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* qsort, which must not be given NULL even with no elements (its base is
 * declared nonnull: UBSan reports it, in the traced program's stderr): an
 * array never allocated is empty, and sorted. */
static inline void np_qsort(void *base, size_t n, size_t size,
			    int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(base, n, size, cmp);
}

enum np_insn_class {
	NP_INSN_REJECTED = 0,
	NP_INSN_OUT_OF_LINE = 1,
	NP_INSN_SIMULATED = 2,
};

enum np_insn_flag {
	NP_INSN_BRANCH = 1u << 0,   /* direct pc-relative jump/call; target set */
	NP_INSN_COND = 1u << 1,     /* conditional: may fall through */
	NP_INSN_CALL = 1u << 2,     /* pushes/links a return address */
	NP_INSN_RET = 1u << 3,      /* function return */
	NP_INSN_INDIRECT = 1u << 4, /* indirect jump or call (target unknown) */
	NP_INSN_PCREL = 1u << 5,    /* pc-relative data operand; target = address */
	NP_INSN_NOFALL = 1u << 6,   /* never falls through: jmp, ret, ud2, hlt */
	NP_INSN_PADDING = 1u << 7,  /* nop or trap: may be alignment padding */
	NP_INSN_SYSTEM = 1u << 8,   /* syscall or other privileged/system form */
	NP_INSN_JUMPTABLE = 1u << 9, /* indirect jump through a table the
				      * decoder recognised: table/stride set */
	/* Exclusive-monitor pairs (riscv lr/sc, arm64 ldxr/stxr): a trap or
	 * a jump between the two clears the reservation, so every site from
	 * the load-reserved to its store-conditional is refused. */
	NP_INSN_LOAD_RESERVED = 1u << 10,
	NP_INSN_STORE_COND = 1u << 11,
};

struct np_insn {
	uint64_t pc;
	uint64_t target;     /* branch target, or pc-relative data address */
	uint32_t flags;      /* enum np_insn_flag */
	uint8_t len;         /* bytes */
	uint8_t cls;         /* enum np_insn_class */
	uint16_t sim;        /* ISA-private simulator id (0: none) */
	const char *reason;  /* static: why REJECTED, or why not SIMULATED */
};

/*
 * The register file seen by handlers, trampolines, simulators and the
 * trap handler. Index meanings are per ISA (x86-64: hardware encoding
 * order rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15; arm64: x0..x30,
 * sp as 31; riscv64: x0..x31). The layout is fixed: trampolines build it
 * on the stack, so offsets below are part of the contract with assembly.
 */
#define NP_NGPR 32
struct np_regs {
	uint64_t gpr[NP_NGPR]; /* offset 0 */
	uint64_t pc;           /* offset 256 */
	uint64_t flags;        /* offset 264: x86 rflags; arm64 PSTATE (NZCV in
				* bits 31..28); unused elsewhere */
};
#define NP_REGS_PC_OFF 256
#define NP_REGS_FLAGS_OFF 264
#define NP_REGS_SIZE 272

/* Memory access for simulators: in-process it is a plain copy, in unit
 * tests a buffer. 0 or -EFAULT. */
struct np_mem {
	int (*read)(void *cookie, uint64_t addr, void *dst, size_t len);
	int (*write)(void *cookie, uint64_t addr, const void *src, size_t len);
	void *cookie;
};

/* Where relocated code goes and what it must do at its end. */
struct np_reloc {
	const uint8_t *src; /* original instruction bytes */
	size_t src_len;     /* whole instructions only */
	uint64_t src_pc;    /* where src lives in the program */
	uint8_t *dst;       /* output buffer */
	size_t dst_cap;
	uint64_t dst_pc;    /* where dst will execute */
	uint64_t resume_pc; /* jump here afterwards (usually src_pc + src_len);
			     * 0: no jump back is appended */
};

/* Registers (bit i: np_regs.gpr[i]) relocated code may clobber, for ISAs
 * that need one to reach far (riscv64, arm64): 'scratch' must be dead at
 * every instruction of the source (np_freereg_over()), 'resume' dead at
 * resume_pc, for the jump back. x86-64 never needs one. */
struct np_reloc_scratch {
	uint64_t scratch;
	uint64_t resume;
};

/*
 * What a scan of a function's branches reports (np_isa.branch_targets).
 * An indirect jump the scan cannot resolve says where its target comes
 * from: loaded_at is the pc of the load that read it from memory as a
 * whole pointer, unchanged since (the jump's own memory operand: its own
 * pc), or 0 when it is computed (a sum, a register of unknown origin).
 * The planner knows where loaded pointers can point (docs/design.md,
 * "Indirect jumps"); a computed target may be anywhere.
 */
struct np_branch_sink {
	/* control may go from the instruction at from to target */
	void (*target)(void *cookie, uint64_t from, uint64_t target);
	/* the instruction at from forms the code or data address addr (lea,
	 * adr, adrp+add, auipc+addi, an absolute immediate); NULL: not asked */
	void (*formed)(void *cookie, uint64_t from, uint64_t addr);
	/* the indirect jump at from is not resolved, or the bytes at from do
	 * not decode (loaded_at 0); NULL: not asked */
	void (*unresolved)(void *cookie, uint64_t from, uint64_t loaded_at);
	void *cookie;
};

/*
 * What one instruction does to the stack pointer and to the frame pointer
 * (x86-64 rbp, arm64 x29, riscv64 s0), both taken before it: the stack
 * pointer stays, moves by sp_delta (push, pop, sub, stp with writeback),
 * becomes the frame pointer plus sp_delta (leave, mov %rbp,%rsp), or
 * becomes something else; the frame pointer stays, becomes the stack
 * pointer plus fp_delta (mov %rsp,%rbp, add x29, sp, #16), or something
 * else. Calls leave the stack pointer as they found it, for the code
 * after them.
 */
enum np_frame_op {
	NP_FRAME_KEEP = 0,
	NP_FRAME_ADD,     /* sp only: sp + delta */
	NP_FRAME_FROM,    /* the other register + delta */
	NP_FRAME_UNKNOWN, /* any other write */
};
struct np_frame_effect {
	uint8_t sp, fp; /* enum np_frame_op */
	int32_t sp_delta, fp_delta;
};

/* The general registers one instruction reads and writes (bit i:
 * np_regs.gpr[i]), for the free-register analysis (src/arch/freereg.h).
 * Reads may over-approximate; writes must be certain (a write on only
 * some paths, a conditional move, is no write). A call reports what the
 * instruction itself does; the analysis adds the calling convention. */
struct np_reg_use {
	uint64_t read;
	uint64_t written;
};

/* Where one argument of a USDT probe is at the probe's nop (src/arch/usdt.h):
 * the compiler chose a register, memory or a constant. */
enum np_usdt_kind {
	NP_USDT_CONST = 1, /* the value is disp */
	NP_USDT_REG,       /* register base, its bits from shift up */
	NP_USDT_MEM,       /* size bytes at base + index * scale + disp */
};
#define NP_USDT_NOREG (-1)

enum np_usdt_flag {
	/* MEM: the address is relative to a symbol the note names (x86
	 * gs(%rip), a non-PIC arr(,%rax,8)): its address is to be added */
	NP_USDT_SYMBOL = 1u << 0,
};

struct np_usdt_arg {
	uint8_t kind;      /* enum np_usdt_kind */
	uint8_t size;      /* the value's bytes: 1, 2, 4 or 8 */
	uint8_t is_signed; /* sign-extended from size bytes, else zero-extended */
	uint8_t scale;     /* MEM: the index's factor, 1, 2, 4 or 8 */
	int8_t base;       /* REG, MEM: np_regs.gpr index or NP_USDT_NOREG */
	int8_t index;      /* MEM: np_regs.gpr index or NP_USDT_NOREG */
	uint8_t shift;     /* REG: the value's lowest bit (x86 %ah: 8) */
	uint8_t flags;     /* enum np_usdt_flag */
	int64_t disp;      /* MEM: added to the address; CONST: the value */
};

/* stapsdt's limit: <sys/sdt.h> has macros for up to 12 arguments. */
#define NP_USDT_MAX_ARGS 12

/* A part of an argument's text (a symbol's name), by offset and length. */
struct np_usdt_span {
	uint16_t off, len;
};

struct np_isa {
	const char *name;     /* "x86_64", "arm64", "riscv64" */
	unsigned jump_len;    /* bytes the JUMP patch writes */
	unsigned trap_len;    /* bytes of the breakpoint instruction */
	unsigned trap_pc_after; /* the pc a breakpoint's SIGTRAP reports is this
				 * many bytes past the breakpoint: x86 int3 is a
				 * trap (pc after it), arm64 brk and riscv ebreak
				 * are exceptions reported at their own address */
	unsigned max_insn;    /* longest instruction */
	unsigned insn_align;  /* instruction alignment (1 on x86) */
	/* The breakpoint is one byte, and so fits over the first byte of any
	 * instruction: a longer patch goes in behind a breakpoint on its
	 * first byte (the cross-modifying code protocol, batch.c's
	 * breakpoint_first). Otherwise patches as long as the breakpoint are
	 * written word by word (word_write.c). */
	bool breakpoint_first;
	/* The length perf_event_attr.bp_len gives an instruction breakpoint
	 * (the kernel's convention: sizeof(long) on x86-64, the instruction's
	 * on arm64); 0 when the ISA has no watchpoints. */
	uint8_t watch_exec_len;
	uint64_t jump_reach;  /* +/- range of the JUMP patch */
	const char *jump_name;     /* the JUMP patch, as users read it: "jmp rel32" */
	const char *jump_via_name; /* emit_jump_via's: "auipc+jalr"; NULL: none */

	/* Decode and classify one instruction. 0, or -EILSEQ (invalid),
	 * -ENODATA (avail too short). */
	int (*decode)(const uint8_t *code, size_t avail, uint64_t pc, struct np_insn *out);
	/* Disassembly text (AT&T on x86, as objdump prints). Length or -errno. */
	int (*format)(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap);
	/* Relocate r->src to r->dst. Returns bytes written, or -ERANGE (a
	 * target cannot be reached from dst_pc), -ENOSPC (dst_cap), -EILSEQ,
	 * -EOPNOTSUPP (a form that cannot be relocated). */
	int (*relocate)(const struct np_reloc *r);
	/* Perform a SIMULATED instruction: update regs (pc included) and
	 * memory. 0, -EFAULT (memory), -EOPNOTSUPP (not simulated). */
	int (*simulate)(const struct np_insn *insn, struct np_regs *regs, const struct np_mem *mem);
	/* Emit the JUMP patch at 'from' going to 'to' (jump_len bytes). */
	int (*emit_jump)(uint8_t *buf, uint64_t from, uint64_t to);
	/* Emit the breakpoint (trap_len bytes). */
	int (*emit_trap)(uint8_t *buf);
	/* A jump shorter than the JUMP patch, for a site where jump_len bytes
	 * do not fit: hop_len bytes at 'from' to a hop, dead bytes of the
	 * program nearby where a JUMP patch (emit_jump) to the trampoline is
	 * written (x86-64: jmp rel8, reaching -128..+127 from its end).
	 * hop_len bytes, or -ERANGE when 'to' is out of its reach. hop_len 0
	 * and NULL on ISAs of fixed-size instructions: a jump to a hop would
	 * be as long as the JUMP patch. */
	unsigned hop_len;
	const char *hop_name; /* as users read it: "jmp rel8 + hop" */
	int (*emit_hop)(uint8_t *buf, uint64_t from, uint64_t to);
	/* Emit an absolute or pc-relative jump of any reach, as short as the
	 * distance allows. Bytes written or -ENOSPC. */
	int (*emit_jump_any)(uint8_t *buf, size_t cap, uint64_t from, uint64_t to);

	/* The branches of [code, code+len) (a whole function at pc), to sink:
	 * every address control can reach other than by falling through
	 * (direct branch and call targets, the entries of jump tables the ISA
	 * code recognises, their contents read through mem), every code
	 * address the function forms, and every indirect jump it cannot
	 * resolve. Returns how many those are (>= 0), or -errno. */
	int (*branch_targets)(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
			      const struct np_branch_sink *sink);
	/* What the instruction at code does to the stack pointer and the
	 * frame pointer, for the stack heights of a function (src/plan/).
	 * 0, or -EILSEQ / -ENODATA as decode. */
	int (*frame_effect)(const uint8_t *code, size_t avail, uint64_t pc,
			    struct np_frame_effect *out);

	/* 0 when the code at fn (a handler) provably never touches vector,
	 * x87 or MXCSR state on any path, 1 otherwise; code read through mem. */
	int (*vector_state_used)(uint64_t fn, const struct np_mem *mem);

	/* Calling convention: argument registers, return register. */
	unsigned nargs_reg;
	const uint8_t *arg_regs;
	uint8_t ret_reg, sp_reg;
	/* The frame pointer, whose chain a stack walk follows (x86-64 rbp,
	 * arm64 x29, riscv64 s0), and the red zone: how many bytes below sp
	 * the code may keep values in without moving sp (the System V ABI's
	 * 128 on x86-64; none on arm64 and riscv64). */
	uint8_t fp_reg;
	uint8_t red_zone;
	const char *const *reg_names; /* NP_NGPR entries, NULL where none */

	/* For the free-register analysis (src/arch/freereg.h); NULL/0 when
	 * the ISA does not provide it. 0 or -EILSEQ/-ENODATA as decode. */
	int (*reg_use)(const uint8_t *code, size_t avail, uint64_t pc, struct np_reg_use *out);
	/* A jump of any reach through one register of 'scratch' when the
	 * short form (emit_jump) cannot reach: riscv64 auipc+jalr, arm64
	 * adrp+add+br. Bytes written, -ERANGE (no register and too far),
	 * -ENOSPC. NULL on ISAs whose emit_jump_any needs no register. */
	/* relocate() with scratch registers (NULL: the ISA needs none). */
	int (*relocate_via)(const struct np_reloc *r, const struct np_reloc_scratch *s);
	int (*emit_jump_via)(uint8_t *buf, size_t cap, uint64_t from, uint64_t to, uint64_t scratch);
	uint64_t call_clobbered; /* registers a call may write (caller-saved) */
	uint64_t call_always;    /* of those, what every call may write, whatever
				  * its callee: what linker veneers and stubs
				  * use (arm64 x16, x17), which no caller keeps
				  * live across a call nor callee reads */
	uint64_t ret_regs;       /* the registers a result comes back in */
	uint64_t entry_dead;     /* dead at a function entry by the calling
				  * convention: caller-saved, not arguments,
				  * less the ISA's known exceptions */
	uint64_t scratch_ok;     /* registers that may ever serve as scratch */
	/* Live patching: must every other thread be stopped while the len
	 * bytes at addr, now 'old', become 'new'? True when another hart may
	 * not fetch the change whole (riscv64: more than one aligned
	 * instruction parcel or word changes). NULL: never; the core's
	 * breakpoint-first protocol suffices (x86-64). */
	bool (*patch_needs_stop)(const uint8_t *old, const uint8_t *new_, size_t len, uint64_t addr);
	/* The target of a jump or call the ISA writes as two instructions,
	 * the first at code (riscv auipc+jalr: the assembler's call and tail
	 * when the linker could not relax them to jal), or 0. NULL on ISAs
	 * whose direct jumps and calls are one instruction. */
	uint64_t (*pair_target)(const uint8_t *code, size_t avail, uint64_t pc);
	uint64_t millicode_link; /* a call linking through one of these is
				  * millicode, which keeps no convention
				  * (riscv t0: __riscv_save_N) */

	/* Watchpoints (src/core/watch_hit.c). watch_pc_after: a data
	 * watchpoint's SIGTRAP reports the pc after the accessing instruction
	 * (x86: data breakpoints are traps), which is then found by walking
	 * instruction lengths from its function's start. insn_length: the
	 * length of the instruction at code, -EILSEQ or -ENODATA; it runs in
	 * the SIGTRAP handler, so no libc, no globals. NULL when every
	 * instruction is max_insn bytes long. */
	bool watch_pc_after;
	int (*insn_length)(const uint8_t *code, size_t avail);
	/* Can one debug register watch the len bytes at addr (a data watch:
	 * write or read-write)? 0, or -EINVAL with the hardware's rule in
	 * why (cap bytes). NULL: the ISA has no data watchpoints. */
	int (*watch_shape)(uint64_t addr, size_t len, char *why, size_t cap);

	/* Is the instruction at a function's entry a landing pad that an
	 * indirect call must find there (arm64 bti c, paciasp)? An entry
	 * probe is then placed on the instruction after it (probe.c); the
	 * kind says what the pad did to the state (enum np_landing_pad).
	 * NULL: the ISA has none that matter. */
	unsigned (*landing_pad)(const uint8_t *code, size_t avail);

	/* The operand of one USDT argument, as the ISA's assembler wrote it
	 * into a stapsdt note ("%edi" of "-4@%edi"): out's kind, base,
	 * index, scale, shift, disp and flags; a symbol's place in text in
	 * *sym. 0, or -EINVAL with a static reason in *why (src/arch/usdt.h
	 * parses the rest). */
	int (*usdt_operand)(const char *text, size_t len, struct np_usdt_arg *out,
			    struct np_usdt_span *sym, const char **why);
};

/* 1 to 8 bytes inside one aligned doubleword: arm64's DBGWCR byte select,
 * and the rule riscv64 keeps (watch_shape.c). */
int np_watch_shape_doubleword(uint64_t addr, size_t len, char *why, size_t cap);
/* Whether isa's debug registers can watch len bytes at addr: an execute
 * watchpoint (exec) needs an instruction address, a data one the ISA's
 * watch_shape. 0, or -EINVAL / -EOPNOTSUPP with the reason in why. The
 * engine's rule, which the command checks a spec by before it starts
 * anything. */
int np_watch_shape_check(const struct np_isa *isa, uint64_t addr, size_t len, bool exec,
			 char *why, size_t cap);

/* What a landing pad at a function entry leaves behind. */
enum np_landing_pad {
	NP_PAD_NONE = 0,
	NP_PAD_BTI = 1,   /* bti: nothing */
	NP_PAD_PAC_A = 2, /* paciasp: x30 signed with key A, sp the modifier */
	NP_PAD_PAC_B = 3, /* pacibsp: the same with key B */
};

extern const struct np_isa np_isa_x86_64;
extern const struct np_isa np_isa_arm64;
extern const struct np_isa np_isa_riscv64;
/* The ISA this code is compiled for: the command's, which is that of the
 * processes it traces (the engine has np_host_isa). */
#if defined(__x86_64__)
#define NP_ISA_NATIVE np_isa_x86_64
#elif defined(__aarch64__)
#define NP_ISA_NATIVE np_isa_arm64
#elif defined(__riscv) && __riscv_xlen == 64
#define NP_ISA_NATIVE np_isa_riscv64
#endif

#endif /* NP_ARCH_H */

/* SPDX-License-Identifier: MIT */
/*
 * The planner: which strategy a probe gets at a site, and why.
 *
 * One implementation, run by three hosts: the engine when it places a
 * probe in a live process (src/core/plan_host.c), and the command's `list`
 * and `analyze` over a file's bytes (tools/nanoprobe/symbols/plan_file.c). It is
 * pure like the ISA code under it (src/arch/): it works on a struct np_isa
 * and what the host hands it, makes no syscall, keeps no global state, so
 * any host plans for any ISA and the unit tests run every ISA on every
 * host (tests/unit/plan/). Whatever differs between an ISA's plans comes
 * from its descriptor (jump_len, jump_reach, emit_jump_via, the register
 * masks, the form names), never from its name.
 *
 * What a plan needs, and who gives it:
 *   - the function around the site: its bounds (struct np_func_bounds),
 *     its bytes as the program has them without any probe's patch, and
 *     its data (jump tables) through np_plan_host.read;
 *   - what else occupies the area: the regions already placed
 *     (np_plan_host.region), which a jump may absorb, and which a TRAP
 *     placed by request forbids;
 *   - branches from the neighbouring functions into the site's bytes
 *     (np_plan_host.neighbor_targets; targets.c scans a module for them);
 *   - the code pointers the module holds and forms into the function
 *     (np_plan_host.held_targets), where its jumps through pointers
 *     loaded from memory may land;
 *   - what the module does to its registers (np_plan_host.module, as the
 *     free-register analysis takes it: src/arch/regsum.h makes it from
 *     the module's code), asked only when a plan lacks a free register;
 *   - how a plan is put in place (struct np_plan_realise): the engine
 *     allocates a trampoline and installs it; a file checks it against a
 *     model of where trampolines go (model.c).
 *
 * The answer (np_plan_site) is the engine's fixed order: JUMP by the short
 * form, else by the long form through a free register (ISAs with
 * emit_jump_via), else TRAP, simulated or out of line (its copy jumping
 * back, or ending with a second breakpoint where it cannot), else refused;
 * each with the reason the strategies before it were not taken.
 *
 * Files: view.c (the function's bytes, targets and free registers),
 * heights.c (its stack heights, where unresolved jumps may land), plan.c
 * (the bytes a jump or a breakpoint displaces), site.c (the order),
 * model.c (a file's trampoline places), targets.c (a module's branches
 * and held code pointers).
 */
#ifndef NP_PLAN_H
#define NP_PLAN_H

#include "arch/arch.h"
#include "arch/freereg.h"

#define NP_PLAN_MAX_INSNS 16         /* instructions one plan may displace */
#define NP_PLAN_MAX_FN_BYTES (4u << 20) /* the most bytes one view holds */
#define NP_PLAN_NEIGHBOR_SPAN 32     /* bytes after a site a plan may displace */
#define NP_PLAN_WHY 224              /* a site's reason, with all its parts */

/* Function bounds. */
struct np_func_bounds {
	uint64_t start, end;  /* the function, [start, end) */
	uint64_t limit;       /* first address owned by something else */
	bool known;
	bool called;          /* start is an ELF symbol's entry, reached by calls
			       * (not GCC's .cold part): the calling convention
			       * holds there */
};

/* A region already in place, as a plan sees it. */
struct np_plan_region {
	uint64_t start, end; /* the bytes it displaces */
	unsigned pun;        /* its jump's last bytes, [end, end + pun), are
			      * the next instruction's first (np_plan_pun) */
	bool forced_trap;    /* a breakpoint placed by request: a jump must not
			      * absorb it */
	bool hop;            /* [start, end) is another region's hop (hop.c):
			      * nothing may be placed over it */
	bool hop_site;       /* a jump to a hop: a jump must not absorb it (its
			      * hop would be left behind) */
};

/* What the host knows beyond the function's bytes. Any callback may be
 * NULL: nothing is placed, no neighbour is known, no module summary. */
struct np_plan_host {
	/* The code as the program has it, every probe's patch undone, and
	 * its data. 0 or -errno. */
	int (*read)(void *cookie, uint64_t addr, void *dst, size_t len);
	/* The region with the lowest start that overlaps [start, end). */
	bool (*region)(void *cookie, uint64_t start, uint64_t end, struct np_plan_region *out);
	/* The direct branches of the module's other functions that land in
	 * (lo, hi), each passed to add. */
	void (*neighbor_targets)(void *cookie, uint64_t lo, uint64_t hi,
				 void (*add)(void *to, uint64_t target), void *to);
	/* The code pointers the module holds that land in (lo, hi): the
	 * words of its segments, its relocations (targets.c's
	 * np_targets_add_held), and the addresses its other functions form
	 * there (np_targets_each_formed), each passed to add. True when they
	 * are known: an indirect jump through a pointer loaded from memory
	 * then lands only on one of them, or on one the function forms
	 * itself (docs/design.md, "Indirect jumps"). */
	bool (*held_targets)(void *cookie, uint64_t lo, uint64_t hi,
			     void (*add)(void *to, uint64_t target), void *to);
	/* What the rest of the module does to the registers of the function
	 * at start (called: entered by calls only), for the free-register
	 * analysis (src/arch/freereg.h): true with *env filled, which must
	 * stay valid while the view lives; false when unknown. */
	bool (*module)(void *cookie, uint64_t start, bool called, struct np_freereg_env *env);
	void *cookie;
};

/* ------------------------------------------------------------------ */
/* The function around a site (view.c)                                 */

enum np_view_flag {
	/* ask for the module's summaries at once rather than when a plan
	 * lacks a register (analyze shows the free registers they give) */
	NP_VIEW_MODULE = 1u << 0,
	/* analyse the free registers even on an ISA whose plans need none
	 * (x86-64), for the figures */
	NP_VIEW_REGISTERS = 1u << 1,
};

/* A branch of the function (direct, or a jump table's entry), and an
 * indirect jump it could not resolve, as the ISA's scan reports them. */
struct np_fn_edge {
	uint64_t from, to;
};
struct np_fn_jump {
	uint64_t pc, loaded_at; /* np_branch_sink.unresolved's */
};

struct np_fn_view {
	const struct np_isa *isa;
	const struct np_plan_host *host;
	unsigned flags;
	struct np_func_bounds fb;
	uint64_t base;   /* address of code[0] */
	uint8_t *code;   /* original bytes of [base, base + len) */
	size_t len;
	uint64_t *targets; /* where control lands other than by falling through
			    * (sorted once the view is loaded) */
	size_t ntargets, cap;
	struct np_fn_edge *edges; /* the function's own, sorted by from */
	size_t nedges, edge_cap;
	struct np_fn_jump *jumps; /* the indirect jumps the scan left unresolved */
	size_t njumps, jump_cap;
	uint64_t *pointers; /* code pointers the module holds, or forms in
			     * other functions, into this one (sorted) */
	size_t npointers, pointer_cap;
	bool lost;       /* out of memory: a target may be missing */
	bool held;       /* the host knows the pointers */
	bool use_pointers; /* a jump is resolved by them: they are targets */
	int unresolved;  /* indirect jumps that may land anywhere of their
			  * stack height (one through a loaded pointer, where
			  * the pointers are known, does not) */
	int32_t *sp;     /* per boundary: the stack pointer less the entry's,
			  * or NP_HEIGHT_UNKNOWN; NULL: not analysed */
	int32_t *jump_sp; /* the heights the unresolved jumps are taken at,
			   * sorted; NULL with unresolved: not all known */
	size_t njump_sp;
	struct np_freereg fr; /* registers free where, when have_fr */
	bool have_fr;
	struct np_freereg_env env; /* the module's, once asked, when have_env */
	bool have_env, asked_module;
	/* the instruction boundaries from the entry (a linear sweep), the
	 * last where decoding stops: known bounds only; and each one's
	 * NP_INSN_LOAD_RESERVED and NP_INSN_STORE_COND flags */
	uint64_t *bounds;
	uint32_t *bound_flags;
	size_t nbounds;
};

/* The view of the function fb bounds around addr: its bytes (to 64 bytes
 * past its end, for padding), the branch targets in it and from its
 * neighbours, its free registers. With fb->known false, a window of 64
 * bytes at addr (up to fb->limit), in which nothing is known. 0, -EINVAL
 * (addr outside the function), -E2BIG, -ENOMEM or the read's -errno.
 * Free it with np_fn_view_free() whatever it returned. */
int np_fn_view_load(struct np_fn_view *v, const struct np_isa *isa, const struct np_plan_host *host,
		    const struct np_func_bounds *fb, uint64_t addr, unsigned flags);
void np_fn_view_free(struct np_fn_view *v);
/* Analyse the free registers again with the module's summaries: true
 * when the view learnt something (an ISA whose plans need registers, a
 * module that has them, not asked before). */
bool np_fn_view_use_module(struct np_fn_view *v);
int np_fn_view_decode(const struct np_fn_view *v, uint64_t pc, struct np_insn *in);
/* The index of the boundary at pc in v->bounds, or v->nbounds. */
size_t np_fn_view_index(const struct np_fn_view *v, uint64_t pc);
/* Is addr an instruction boundary of the function (linear sweep)? */
bool np_fn_view_is_boundary(const struct np_fn_view *v, uint64_t addr);
/* The instruction just before addr, or 0: addr is the entry, or the
 * bounds are unknown. */
uint64_t np_fn_view_previous(const struct np_fn_view *v, uint64_t addr);
/* The first instruction boundary at or after addr (a linear sweep from
 * the entry), or 0 when none is known. */
uint64_t np_fn_view_boundary_from(const struct np_fn_view *v, uint64_t addr);
/* Of the instructions that start in [from, addr), is the last that loads
 * reserved or stores conditionally a load? False when the bounds are
 * unknown. */
bool np_fn_view_reserved_open(const struct np_fn_view *v, uint64_t from, uint64_t addr);
/* Registers free at pc (within isa->scratch_ok); 0 where unknown. */
uint64_t np_fn_view_free_at(const struct np_fn_view *v, uint64_t pc);
/* May an indirect jump of the function whose targets are unknown land at
 * pc, an instruction boundary? False only where pc's stack height is
 * known and none of those jumps is taken at that height (heights.c). */
bool np_fn_view_jump_may_land(const struct np_fn_view *v, uint64_t pc);

#define NP_HEIGHT_UNKNOWN INT32_MIN
/* The stack pointer at pc less the entry's, or NP_HEIGHT_UNKNOWN. */
int32_t np_fn_view_height(const struct np_fn_view *v, uint64_t pc);

/* The stack heights of the function's instruction boundaries (heights.c):
 * v->sp and v->jump_sp. 0 or -ENOMEM. */
int np_fn_view_heights(struct np_fn_view *v);
/* The first address control may land on in [lo, hi), other than by
 * falling through: a branch target, or a held pointer where a jump of the
 * function is resolved by them; 0 when none. */
uint64_t np_fn_view_lands_in(const struct np_fn_view *v, uint64_t lo, uint64_t hi);

/* ------------------------------------------------------------------ */
/* The bytes a patch displaces (plan.c)                                */

/* The JUMP forms: the short patch (emit_jump, within jump_reach); on
 * ISAs whose longer jump needs a free register (emit_jump_via: riscv64
 * auipc+jalr, arm64 adrp+add+br) the long one through a register free at
 * the site; and on ISAs with a jump shorter than the patch (emit_hop:
 * x86-64 jmp rel8) that jump to a hop, dead bytes nearby that hold the
 * short patch to the trampoline (hop.c). */
enum np_jump_form { NP_JUMP_SHORT, NP_JUMP_LONG, NP_JUMP_HOP };

struct np_plan {
	uint64_t start, end; /* displaced [start, end) */
	unsigned ninsn;
	struct np_insn insn[NP_PLAN_MAX_INSNS];
	enum np_jump_form form;
	unsigned jump_len;    /* JUMP: bytes the patch writes */
	uint64_t via;         /* JUMP long form: registers free at the site */
	uint64_t hop;         /* JUMP hop form: where the short patch to the
			       * trampoline goes, jump_len bytes of the ISA's
			       * (the hop); 0 otherwise */
	struct np_reloc_scratch scratch; /* free over the displaced bytes, and
					  * where the jump back lands */
	bool merged;      /* it covers regions already in place */
	bool no_register; /* refused for want of a free register only */
	bool no_hop;      /* refused for want of a hop in reach only (hop.c) */
	unsigned pun;     /* bytes of the jump past end, left as they are */
	unsigned pin;     /* 0, or the jump's bytes from here on must stay the
			   * code's own (a punned jump, or one replacing it) */
	char why[160];
};

/* The jump of this form at addr, or at the instruction before where none
 * fits at addr. 0, or -EOPNOTSUPP with p->why. */
int np_plan_jump(const struct np_fn_view *v, uint64_t addr, enum np_jump_form form,
		 struct np_plan *p);
/* The jump of this form at the instruction before addr, taking addr in
 * (np_plan_jump's fallback): 0, or -EOPNOTSUPP with p->why. */
int np_plan_jump_before(const struct np_fn_view *v, uint64_t addr, enum np_jump_form form,
			struct np_plan *p);
/* The hop of p, a plan of the hop form whose bytes are chosen: dead bytes
 * in reach of its jump, of no other region (hop.c). 0 with p->hop, or
 * -EOPNOTSUPP with p->why. */
int np_plan_hop(const struct np_fn_view *v, struct np_plan *p);
/* The breakpoint at addr: 0, or -EOPNOTSUPP with p->why. */
int np_plan_trap(const struct np_fn_view *v, uint64_t addr, struct np_plan *p);
/* The plan p, ending on the call it would displace instead (x86): 0, or
 * -EOPNOTSUPP when p does not end with a call 4 bytes in. */
int np_plan_pun(const struct np_isa *isa, const struct np_plan *p, struct np_plan *out);
/* Where a trampoline must start for a jump at start whose bytes from pin
 * on are the code's own (orig: the original bytes from start). */
void np_plan_pun_window(uint64_t start, const uint8_t *orig, unsigned pin, uint64_t *lo,
			uint64_t *size);
/* Where new trampoline memory for code at 'near' is best placed. */
uint64_t np_plan_chunk_aim(const struct np_isa *isa, uint64_t near);
/* How far from the site a trampoline of this form may be placed. */
uint64_t np_plan_reach(const struct np_isa *isa, enum np_jump_form form);
/* The long form's length at addr (0: the ISA has none). */
unsigned np_plan_long_len(const struct np_isa *isa, uint64_t addr);
/* The name of a jump form on an ISA: "jmp rel32", "auipc+jalr", "jmp
 * rel8 + hop"... (NULL: the ISA has no such form) */
const char *np_plan_form_name(const struct np_isa *isa, enum np_jump_form form);
/* Why no strategy fits the site at pc whatever the plan: it does not
 * decode, the ISA rejects it, or it lies in an exclusive sequence. 0 (in
 * decoded), or -EOPNOTSUPP with the reason in why. */
int np_plan_site_refusal(const struct np_fn_view *v, uint64_t pc, struct np_insn *in, char *why,
			 size_t len);

/* ------------------------------------------------------------------ */
/* The strategy of a site, in the engine's order (site.c)              */

enum np_site_kind { NP_SITE_JUMP, NP_SITE_TRAP_SIM, NP_SITE_TRAP_OOL, NP_SITE_REFUSED };

/* What the caller asks for: AUTO's order, or one strategy alone. */
enum np_plan_want { NP_WANT_AUTO, NP_WANT_JUMP, NP_WANT_TRAP };

struct np_site_plan {
	uint64_t pc;
	unsigned len;            /* the instruction's bytes; 0: it does not decode */
	enum np_site_kind kind;
	struct np_plan plan;     /* JUMP: the jump placed (plan.form); TRAP: the
				  * breakpoint's */
	uint64_t place;          /* a model's: the trampoline or the copy assumed */
	bool trap_back;          /* TRAP out of line: the copy cannot jump back and
				  * ends with a breakpoint (a second trap per hit) */
	char why[NP_PLAN_WHY];   /* TRAP: why not JUMP; refused: why not */
};

/* How a host puts a plan in place: the engine installs it (region.c), a
 * file checks it against a model (model.c). Each returns 0, or -errno with
 * its reason in why (len bytes); -ERANGE says a free register might have
 * helped (a relocation or a jump back out of reach), and the planner asks
 * the module's summaries before it gives up. */
struct np_plan_realise {
	/* the JUMP s->plan, of form s->plan.form */
	int (*jump)(void *cookie, const struct np_fn_view *v, struct np_site_plan *s, char *why,
		    size_t len);
	/* the breakpoint s->plan (s->kind: simulated or out of line); with
	 * trap_back, the out-of-line copy may end with a breakpoint instead
	 * of a jump back */
	int (*trap)(void *cookie, const struct np_fn_view *v, struct np_site_plan *s,
		    bool trap_back, char *why, size_t len);
	void *cookie;
};

/* The strategy of the site at pc: 0 with s->kind JUMP or TRAP_*, put in
 * place by r; or -errno with s->kind REFUSED. s->why says why not JUMP
 * (and why not TRAP, refused). */
int np_plan_site(struct np_fn_view *v, uint64_t pc, enum np_plan_want want,
		 const struct np_plan_realise *r, struct np_site_plan *s);

/* ------------------------------------------------------------------ */
/* Where a file's trampolines would go (model.c)                       */

/* A file cannot tell where free address space will be: assume the page
 * below the module and the page after it, which the engine's allocator
 * tries first (within np_plan_reach of a site), and a place beyond the
 * short form's reach for the long one. */
struct np_plan_places {
	uint64_t below, above;
	uint64_t far; /* 0: far beyond the site by the ISA's reach */
};
/* Plans put in place over the model of these places (kept by the caller). */
struct np_plan_realise np_plan_model(const struct np_plan_places *places);

/* ------------------------------------------------------------------ */
/* A module's branches into its functions (targets.c)                  */

/* Addresses, sorted, each once. */
struct np_targets {
	uint64_t *v;
	size_t n, cap;
	uint64_t code_lo, code_hi; /* where formed addresses are kept */
};
/* Decode each function of a module, [starts[i], starts[i + 1]) (starts
 * sorted; the last 64 bytes; at most 64 KiB each), through mem, and add
 * the branches that leave it to t, and the code addresses it forms in
 * another (tagged NP_TARGET_FORMED); a function that runs past what mem
 * can read (the last one's guessed end, a segment's end) is decoded up to
 * there. 0, or the first failure: -ENOMEM, or the read's -errno for a
 * function of which not a byte could be read (t then holds the targets of
 * the others: not all the module's). */
int np_targets_add_module(struct np_targets *t, const struct np_isa *isa,
			  const struct np_mem *mem, const uint64_t *starts, size_t n);
/* The same one function at a time: the end np_targets_add_module takes
 * for the i-th of the n starts; the function [start, end) decoded, its
 * outward branches added to t unsorted (0 or the first failure, as
 * above), and the addresses it forms in t's code range (below); then t
 * from index 'sorted' on sorted into what was before it. */
uint64_t np_targets_function_end(const uint64_t *starts, size_t n, size_t i);
int np_targets_add_function(struct np_targets *t, const struct np_isa *isa,
			    const struct np_mem *mem, uint64_t start, uint64_t end);
void np_targets_sort(struct np_targets *t, size_t sorted);
/* Where the module's n functions (starts sorted) lie: the addresses they
 * form are kept in t only there (np_targets_add_function; add_module sets
 * it itself). */
void np_targets_code_range(struct np_targets *t, const uint64_t *starts, size_t n);
/* Add v[0, n) to t. 0, or -ENOMEM (t keeps what it had). */
int np_targets_merge(struct np_targets *t, const uint64_t *v, size_t n);
/* Add the code pointers held in [lo, hi) to t: its aligned 8-byte words,
 * read through mem, whose value lies in [code_lo, code_hi). 0, -ENOMEM or
 * the read's -errno (t keeps what it found). */
int np_targets_add_held(struct np_targets *t, const struct np_mem *mem, uint64_t lo, uint64_t hi,
			uint64_t code_lo, uint64_t code_hi);
/* Add those of v[n] that lie in [code_lo, code_hi): 0 or -ENOMEM. */
int np_targets_add_values(struct np_targets *t, const uint64_t *v, size_t n, uint64_t code_lo,
			  uint64_t code_hi);
/* Each target in (lo, hi), passed to add. */
void np_targets_each(const struct np_targets *t, uint64_t lo, uint64_t hi,
		     void (*add)(void *to, uint64_t target), void *to);
/* Addresses np_targets_add_module found formed in one function and
 * pointing into another are kept with this tag (above every address). */
#define NP_TARGET_FORMED (1ull << 63)
/* Each address formed in (lo, hi), untagged, passed to add. */
void np_targets_each_formed(const struct np_targets *t, uint64_t lo, uint64_t hi,
			    void (*add)(void *to, uint64_t target), void *to);
void np_targets_free(struct np_targets *t);
/* The function starts of the .eh_frame_hdr search table at hdr (as GNU
 * ld and lld write it), read through mem: *starts (malloc'd, sorted) and
 * *n. 0, -ENOEXEC (another encoding), -ENOMEM or the read's -errno. */
int np_eh_frame_hdr_starts(const struct np_mem *mem, uint64_t hdr, uint64_t **starts, size_t *n);
/* Is this the search table's header (its first 4 bytes) that
 * np_eh_frame_hdr_starts reads? */
bool np_eh_frame_hdr_known(const uint8_t h[4]);

#endif

/* SPDX-License-Identifier: MIT */
/* Decoding the function around a site and planning the displaced bytes. */
#ifndef NP_PLAN_H
#define NP_PLAN_H
#include "arch/freereg.h"
#include "core/internal.h"

struct fn_view {
	struct np_func_bounds fb;
	uint64_t base;   /* address of code[0] */
	uint8_t *code;   /* original bytes of [base, fb.limit) */
	size_t len;
	uint64_t *targets;
	size_t ntargets, cap;
	int unresolved;
	struct np_freereg fr; /* registers free where: ISAs that need them */
	bool have_fr;
	/* the module's register summaries (src/arch/regsum.h), live views
	 * only and from np_fn_view_use_module() on; NULL: the analysis
	 * assumes the least of the module */
	const struct np_regsum *sums;
};

struct plan {
	uint64_t start, end;
	unsigned ninsn;
	struct np_insn insn[NP_MAX_REGION_INSNS];
	unsigned jump_len;    /* JUMP: bytes the patch writes */
	uint64_t via;         /* JUMP long form: registers free at the site */
	struct np_reloc_scratch scratch; /* free over the displaced bytes, and
					  * where the jump back lands */
	bool merged;      /* it covers regions already in place */
	bool no_register; /* refused for want of a free register only */
	unsigned pun;     /* bytes of the jump past end, left as they are */
	unsigned pin;     /* 0, or the jump's bytes from here on must stay the
			   * code's own (a punned jump, or one replacing it) */
	char why[160];
};

/* The two JUMP forms: the short patch (emit_jump, within jump_reach), and
 * on ISAs whose longer jump needs a free register (emit_jump_via: riscv64
 * auipc+jalr) the long one through a register free at the site. */
enum np_jump_form { NP_JUMP_SHORT, NP_JUMP_LONG };

#define NP_MAX_FN_BYTES (4u << 20) /* the most bytes one view holds */

int np_fn_view_load(struct fn_view *v, uint64_t addr, uint64_t fstart, size_t fsize);
void np_fn_view_analyse(struct fn_view *v, const struct np_mem *mem);
/* Analyse the free registers again with the module's summaries (live
 * views, ISAs whose long jump needs a register): for a long form refused
 * for want of a register. True when the view learnt something. */
bool np_fn_view_use_module(struct fn_view *v);
void np_fn_view_free(struct fn_view *v);
int np_fn_view_decode(const struct fn_view *v, uint64_t pc, struct np_insn *in);
bool np_fn_view_is_boundary(const struct fn_view *v, uint64_t addr);
int np_plan_jump(const struct fn_view *v, uint64_t addr, enum np_jump_form form, struct plan *p);
/* How far from the site a trampoline of this form may be placed. */
uint64_t np_plan_reach(enum np_jump_form form);
int np_plan_trap(const struct fn_view *v, uint64_t addr, struct plan *p);
/* The plan p, ending on the call it would displace instead (x86): 0, or
 * -EOPNOTSUPP when p does not end with a call 3 or 4 bytes in. */
int np_plan_pun(const struct plan *p, struct plan *out);
/* Where new trampoline memory for code at 'near' is best placed. */
uint64_t np_plan_chunk_aim(uint64_t near);
/* Where a trampoline must start for a jump at start whose bytes from pin
 * on are the code's own (orig: the original bytes from start). */
void np_plan_pun_window(uint64_t start, const uint8_t *orig, unsigned pin, uint64_t *lo,
			uint64_t *size);
int np_read_original(uint64_t addr, uint8_t *buf, size_t len);

/*
 * Planning over a file's bytes instead of live memory (describe.c), for
 * the CLI's `list`: what a probe would get, with nothing attached.
 */
/* The ISA whose plans this build can make for an ELF e_machine, or NULL. */
const struct np_isa *np_describe_isa(unsigned machine);
/* The view of the function fb bounds (known; limit may exceed end), its
 * bytes and jump tables read through mem at file vaddrs. 0 or -errno. */
int np_fn_view_from_file(struct fn_view *v, const struct np_func_bounds *fb,
			 const struct np_mem *mem);
/* The strategy AUTO would choose at addr: *chosen is JUMP, else TRAP
 * with why saying why not JUMP; -EOPNOTSUPP with TRAP's reason in why
 * when neither fits. */
int np_describe_site(const struct fn_view *v, uint64_t addr, enum np_strategy *chosen, char *why,
		     size_t len);
#endif

/* SPDX-License-Identifier: MIT */
/* Decoding the function around a site and planning the displaced bytes. */
#ifndef NP_PLAN_H
#define NP_PLAN_H
#include "core/internal.h"

struct fn_view {
	struct np_func_bounds fb;
	uint64_t base;   /* address of code[0] */
	uint8_t *code;   /* original bytes of [base, fb.limit) */
	size_t len;
	uint64_t *targets;
	size_t ntargets, cap;
	int unresolved;
};

struct plan {
	uint64_t start, end;
	unsigned ninsn;
	struct np_insn insn[NP_MAX_REGION_INSNS];
	char why[160];
};

#define NP_MAX_FN_BYTES (4u << 20) /* the most bytes one view holds */

int np_fn_view_load(struct fn_view *v, uint64_t addr, uint64_t fstart, size_t fsize);
void np_fn_view_analyse(struct fn_view *v, const struct np_mem *mem);
void np_fn_view_free(struct fn_view *v);
int np_fn_view_decode(const struct fn_view *v, uint64_t pc, struct np_insn *in);
bool np_fn_view_is_boundary(const struct fn_view *v, uint64_t addr);
int np_plan_jump(const struct fn_view *v, uint64_t addr, struct plan *p);
int np_plan_trap(const struct fn_view *v, uint64_t addr, struct plan *p);
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

/* SPDX-License-Identifier: MIT */
/*
 * Workloads whose callers keep values in caller-saved registers across
 * calls, as GCC's -fipa-ra (on at -O2) compiles them: each calls small
 * functions of its own file that it knows leave some caller-saved
 * registers alone, and keeps loop bounds, accumulators and pointers there
 * rather than in callee-saved registers it would have to save. A probe
 * that changes any register the callee did not is visible in the result.
 *
 * Each workload writes its results as text into out (deterministic: no
 * addresses, no time) and lists the functions to probe, itself first.
 */
#ifndef NP_IPA_CALLERS_H
#define NP_IPA_CALLERS_H

#include <stddef.h>

/* A callee that stays a callee of its own (no inlining, no clone with
 * another convention), so that its caller relies on what its bytes
 * write. clang has no noclone and does no interprocedural register
 * allocation: noinline alone. */
#if defined(__clang__)
#define NOIPA_CALLEE __attribute__((noinline))
#else
#define NOIPA_CALLEE __attribute__((noinline, noclone))
#endif

struct ipa_out {
	char text[4096];
	size_t len;
};

void ipa_printf(struct ipa_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct ipa_workload {
	const char *name;
	void (*run)(struct ipa_out *o, long scale);
	void *const *funcs; /* NULL-terminated */
	const char *const *func_names;
};

extern const struct ipa_workload ipa_loop, ipa_pressure, ipa_vector;

#endif

/* SPDX-License-Identifier: MIT */
/* `list` over a file's bytes (describe.c), for the host's ISA. */
#ifndef NP_CORE_DESCRIBE_H
#define NP_CORE_DESCRIBE_H
#include "core/internal.h" /* np_host_isa, enum np_strategy */
#include "plan/plan.h"

/* The ISA whose plans this build can make for an ELF e_machine, or NULL. */
const struct np_isa *np_describe_isa(unsigned machine);
/* Plans put in place as a file cannot tell otherwise: every one fits (a
 * running process nearly always has room for a trampoline within reach). */
extern const struct np_plan_realise np_describe_realise;
#endif

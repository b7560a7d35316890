/* SPDX-License-Identifier: MIT */
/* libtarget.so: a shared library for api.c to probe. */
#ifndef NP_E2E_LIBTARGET_H
#define NP_E2E_LIBTARGET_H

#include <stdint.h>

uint64_t lib_mix(uint64_t a, uint64_t b);
/* lib_mix's code in the library, not a PLT entry in the executable. */
void *lib_mix_address(void);
extern uint64_t lib_calls;

#endif

/* SPDX-License-Identifier: MIT */
/* A fake memory for the ISA unit tests (every ISA's): the np_mem that
 * simulators, jump-table readers and vector scans read and write. */
#ifndef NP_TEST_FAKE_MEM_H
#define NP_TEST_FAKE_MEM_H

#include <stdint.h>

#include "arch/arch.h"

/* buf stands for [base, base + sizeof(buf)). */
struct fake_mem {
	uint64_t base;
	uint8_t buf[4096];
};

/* Clear m and place it at base; then fake_mem_ops(m) reads and writes it. */
void fake_mem_init(struct fake_mem *m, uint64_t base);
struct np_mem fake_mem_ops(struct fake_mem *m);
void fake_put64(struct fake_mem *m, uint64_t addr, uint64_t v);
uint64_t fake_get64(const struct fake_mem *m, uint64_t addr);
void fake_put32(struct fake_mem *m, uint64_t addr, uint32_t v);

#endif

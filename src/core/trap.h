/* SPDX-License-Identifier: MIT */
/* Breakpoints: the lock-free table the SIGTRAP handler reads (trap.c). */
#ifndef NP_CORE_TRAP_H
#define NP_CORE_TRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_region;

struct np_region *np_trap_lookup(uint64_t addr);
int np_trap_table_put(uint64_t addr, struct np_region *region);
uint64_t np_trap_block(const struct np_region *r, uint64_t at);
int np_trap_table_drop(uint64_t addr);
int np_trap_table_move(const struct np_region *from, struct np_region *to);
int np_trap_table_edit_many(struct np_region *const *add, size_t nadd,
			    bool (*drop)(uint64_t addr, const struct np_region *r, void *cookie),
			    void *cookie);
int np_trap_init(void);
/* The stop signal may interrupt the SIGTRAP handler where a handler's
 * sa_mask is not honoured (qemu-riscv64 7.2): how deep the thread is in
 * it, and its entry (for stop.c, which then answers on the way out). */
unsigned np_trap_level(void);
uint64_t np_trap_handler_entry(void);
void np_trap_defer_free(void *mem);
/* Each trampoline a trap-table entry sends a thread to (trap.c). */
void np_trap_each_published(void (*fn)(uint64_t tramp, void *cookie), void *cookie);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * core/trap.c, np_trap_block: a thread that meets one of our breakpoints
 * is sent to the trampoline its region had when it last entered the trap
 * table, not to r->tramp. A SIGTRAP handler may run late, on a table it
 * loaded before the region left it, while a rebuild after a detach has
 * already set r->tramp (and tramp_off) to a trampoline not yet written:
 * threads sent there ran zeros (e2e-torture, x86-64, t_short+1 and +4).
 */
#include <stdlib.h>

#include "core/trap.h"
#include "host/layout.h"
#include "test.h"

#define START 0x10000ull /* the region's bytes: any address, never run */
#define OLD 0x20000ull   /* its trampolines: any addresses, never run */
#define NEW 0x30000ull

static struct np_region *jump_region(void)
{
	struct np_region *r = calloc(1, sizeof(*r));
	CHECK(r != NULL);
	r->start = START;
	r->end = START + 8;
	r->strategy = NP_STRATEGY_JUMP;
	r->ninsn = 2;
	r->insn[0].pc = START;
	r->insn[1].pc = START + 3;
	r->tramp = OLD;
	r->tramp_off[0] = 0;
	r->tramp_off[1] = 40;
	return r;
}

/* A rebuild (region.c, build) sets these before the bytes are written. */
static void rebuild(struct np_region *r)
{
	r->tramp = NEW;
	r->tramp_off[1] = 56;
}

TEST(a_region_never_in_the_table_sends_nowhere)
{
	struct np_region *r = jump_region();
	CHECK_EQ(np_trap_block(r, START), 0);
	free(r);
}

TEST(a_rebuilt_trampoline_is_not_used_before_the_region_enters_the_table_again)
{
	struct np_region *r = jump_region();
	CHECK_EQ(np_trap_table_put(START, r), 0);
	CHECK_EQ(np_trap_block(r, START), OLD);
	CHECK_EQ(np_trap_block(r, START + 3), OLD + 40);
	CHECK_EQ(np_trap_table_drop(START), 0);

	rebuild(r); /* what a late handler, on the old table, finds in r */
	CHECK_EQ(np_trap_block(r, START), OLD);
	CHECK_EQ(np_trap_block(r, START + 3), OLD + 40); /* not the new block */

	CHECK_EQ(np_trap_table_put(START, r), 0); /* written, then put */
	CHECK_EQ(np_trap_block(r, START), NEW);
	CHECK_EQ(np_trap_block(r, START + 3), NEW + 56);
	CHECK_EQ(np_trap_table_drop(START), 0);
	free(r);
}

TEST(an_absorbed_start_goes_to_the_first_block)
{
	struct np_region *r = jump_region();
	struct np_region *absorbed = jump_region();
	absorbed->start = START + 5;
	CHECK_EQ(np_trap_table_put(absorbed->start, absorbed), 0);
	CHECK_EQ(np_trap_table_move(absorbed, r), 0); /* r absorbs it: r published */
	CHECK_EQ(np_trap_lookup(START + 5), r);
	CHECK_EQ(np_trap_block(r, START + 5), OLD);
	CHECK_EQ(np_trap_table_move(r, NULL), 0);
	free(absorbed);
	free(r);
}

TEST(a_batch_publishes_every_region_it_adds)
{
	struct np_region *r[2] = {jump_region(), jump_region()};
	r[1]->start = START + 64;
	r[1]->insn[0].pc = START + 64;
	r[1]->tramp = NEW;
	CHECK_EQ(np_trap_table_edit_many(r, 2, NULL, NULL), 0);
	CHECK_EQ(np_trap_block(r[0], START), OLD);
	CHECK_EQ(np_trap_block(r[1], START + 64), NEW);
	CHECK_EQ(np_trap_table_drop(START), 0);
	CHECK_EQ(np_trap_table_drop(START + 64), 0);
	free(r[0]);
	free(r[1]);
}

TEST_MAIN()

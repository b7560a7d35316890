/* SPDX-License-Identifier: MIT */
/*
 * Writing one region's patch over code that other threads are running.
 *
 * x86 fetches instructions byte by byte and a core may hold stale bytes in
 * its pipeline, so a multi-byte patch is written breakpoint first:
 *   1. write the breakpoint on the first byte; serialise every core;
 *   2. move any thread stopped strictly inside the bytes about to change to
 *      the equivalent address in the new code (it entered before step 1);
 *   3. write the tail; serialise;  4. write the first byte; serialise.
 * A thread reaching the first byte between 1 and 4 traps, and the trap
 * handler sends it where the finished patch would have (trap.c).
 * "Serialise" is np_sync_cores (code_write.c); step 2 is
 * np_threads_move_out (stop.c), which finds where each thread is without
 * signalling the ones blocked in a system call.
 *
 * Two cases take the other threads out of the way for the whole write
 * instead (np_threads_stop, patch_stopped below): a patch another hart may
 * not fetch whole, which the ISA names (np_isa.patch_needs_stop: riscv64's
 * auipc+jalr), and one over bytes where a retired trampoline jumps back,
 * where a thread still on that way would land inside the new jump.
 * A patch no longer than the breakpoint has nothing inside it to land on
 * and goes through word_write.c. batch.c applies the same steps to many
 * regions at once.
 */
#include "core/codemem.h"
#include "core/region_write.h"
#include "core/code_write.h"
#include "core/maps.h"
#include "core/site.h"
#include "core/stop.h"
#include "core/word_write.h"
#include "host/host.h"
#include "host/layout.h"

#include <string.h>

/* A thread at instruction i of the region goes to its block in the new
 * trampoline (or, when the region is being removed, nowhere: it cannot be
 * inside an instruction of the original code). */
static uint64_t to_trampoline(void *cookie, uint64_t pc)
{
	const struct np_region *r = cookie;
	int i = np_region_insn_index(r, pc);
	return i < 0 ? pc : r->tramp + r->tramp_off[i];
}

/* Does the code hold r's jump now? (In a signal handler too: the code is
 * readable, it is compared in place.) */
static bool holds_jump(const struct np_region *r)
{
	const volatile uint8_t *code = (const volatile uint8_t *)(uintptr_t)r->start;
	bool patched = r->jumps_to && r->jump_len <= sizeof(r->patch);
	for (unsigned i = 0; patched && i < r->jump_len; i++)
		patched = code[i] == r->patch[i];
	return patched;
}

/* Where a thread stopped strictly inside the bytes being replaced goes.
 * In the original code (the jump goes in): to its instruction's block in
 * the new trampoline. Inside a jump of several instructions (riscv
 * auipc+jalr, being re-pointed or removed): where that jump was going,
 * as it would have. */
static uint64_t out_of_patch(void *cookie, uint64_t pc)
{
	const struct np_region *r = cookie;
	if (holds_jump(r))
		return pc < r->start + r->jump_len ? r->jumps_to : pc;
	return to_trampoline(cookie, pc);
}

/* Steps 3 and 4 above, at any address whose first tl bytes hold a
 * breakpoint already: the bytes after it, then its own, each serialised. */
static int write_under_trap(uint64_t at, const uint8_t *bytes, size_t len)
{
	size_t tl = np_host_isa->trap_len;
	int err;
	if ((err = np_code_write(at + tl, bytes + tl, len - tl)))
		return err;
	np_sync_cores();
	if ((err = np_code_write(at, bytes, tl)))
		return err;
	np_sync_cores();
	return 0;
}

/* Steps 1 to 4 above. When the threads cannot be moved out (step 2), the
 * first byte goes back and nothing has changed. */
static int write_bp_first(struct np_region *r, const uint8_t *bytes, size_t len, bool move_threads)
{
	uint8_t trap[16], first[16];
	size_t tl = np_host_isa->trap_len;
	int err;

	np_host_isa->emit_trap(trap);
	if ((err = np_code_read(r->start, first, tl)) || (err = np_code_write(r->start, trap, tl)))
		return err;
	np_sync_cores();
	if (move_threads &&
	    (err = np_threads_move_out(r->start, r->start + len, to_trampoline, r, NULL))) {
		np_code_write(r->start, first, tl);
		np_sync_cores();
		return err;
	}
	return write_under_trap(r->start, bytes, len);
}

/* A patch another hart may not fetch whole (np_isa.patch_needs_stop), or
 * one over where a retired trampoline lands: the other threads wait in a
 * signal handler while it is written, breakpoint first for the threads
 * left in system calls. Nothing between stop and resume may take a lock a
 * stopped thread could hold (malloc's): the map cache and /proc/self/mem
 * are primed by the reads before. */
static int patch_stopped(struct np_region *r, const uint8_t *bytes, size_t len)
{
	struct np_map m;
	int err = np_maps_lookup(r->start, &m);
	/* A thread on its way through a trampoline that jumps back inside the
	 * bytes (one built for an instruction there, since retired) cannot be
	 * moved: it is let go on and the stop tried again a little later
	 * (np_threads_stop_clear). Not when the original code goes back (it
	 * lands on an instruction), nor when r's jump is only re-pointed
	 * (nothing lands inside a jump in place: it went in under this rule).
	 * (On the batch path the region's jump is already in r->patch: it is
	 * not in the code, so holds_jump says no.) */
	bool restore = len <= sizeof(r->orig) && memcmp(bytes, r->orig, len) == 0;
	bool new_code = !restore && !holds_jump(r);
	if (!err &&
	    !(err = np_threads_stop_clear(r->start, r->start + len, out_of_patch, r, new_code))) {
		err = write_bp_first(r, bytes, len, false);
		np_threads_resume();
	}
	return err;
}

/* Would a thread coming back from some trampoline (a retired one: live
 * regions do not overlap) land strictly inside bytes that these change?
 * Not when the original code goes back, nor when r's jump is only
 * re-pointed (nothing lands inside a jump in place: it went in under this
 * rule). From the first byte on which the new bytes are the code's own
 * (the call a punned jump ends on, plan.c) a thread lands on what it
 * expects. */
bool np_patch_lands_inside(const struct np_region *r, const uint8_t *bytes, size_t len)
{
	size_t keep = len;
	if (len > sizeof(r->orig) || memcmp(bytes, r->orig, len) == 0 || holds_jump(r))
		return false;
	while (keep > 0 && bytes[keep - 1] == r->orig[keep - 1])
		keep--;
	return np_codemem_lands_inside(r->start, r->start + keep);
}

int np_patch_region(struct np_region *r, const uint8_t *bytes, size_t len, bool move_threads)
{
	uint8_t cur[sizeof(r->patch)];
	size_t tl = np_host_isa->trap_len;

	if (len == tl) {
		int err;
		np_patch_words(&r, &bytes, 1, &err);
		return err;
	}
	if (np_host_isa->patch_needs_stop && len <= sizeof(cur) &&
	    np_code_read(r->start, cur, len) == 0 &&
	    np_host_isa->patch_needs_stop(cur, bytes, len, r->start))
		return patch_stopped(r, bytes, len);
	/* written while the other threads wait, once none is on its way back
	 * there (x86-64, and arm64's long form: one word, a b or a brk,
	 * has nothing inside it to land on) */
	if (np_patch_lands_inside(r, bytes, len))
		return patch_stopped(r, bytes, len);
	return write_bp_first(r, bytes, len, move_threads);
}

/*
 * A hop (src/plan/hop.c): the jump to the trampoline, jump_len bytes the
 * program never runs, where the region's short jump at its start leads.
 * Written before that jump goes in and after it is re-pointed: dead bytes
 * then, where no thread is; later a jump in place that a thread having
 * taken the short jump may be about to run (at its first byte, never
 * inside: it is one instruction). So breakpoint first all the same; a
 * thread meeting the breakpoint is sent on by the trap handler, through
 * the entry the caller put at the hop, to the region's trampoline (trap.c,
 * np_trap_block: block 0).
 */
int np_patch_hop(struct np_region *r, const uint8_t *bytes)
{
	uint8_t trap[16];
	size_t tl = np_host_isa->trap_len, len = np_host_isa->jump_len;
	int err;

	np_host_isa->emit_trap(trap);
	if ((err = np_code_write(r->hop, trap, tl)))
		return err;
	np_sync_cores();
	return write_under_trap(r->hop, bytes, len);
}

/* A thread at the hop has taken the short jump but run none of the
 * displaced instructions: the site, holding them again, is where it goes. */
static uint64_t hop_to_site(void *cookie, uint64_t pc)
{
	const struct np_region *r = cookie;
	return pc == r->hop ? r->start : pc;
}

/*
 * The hop's original bytes back, once the short jump to it is gone (the
 * region's start restored and every core serialised): no thread can take
 * that jump any more, but one that took it before may wait at the hop's
 * first byte. It is moved to the site (np_threads_move_out moves the pcs
 * strictly inside its range: one byte before the hop makes the hop's
 * first byte one of them); then nothing is at the hop or on its way
 * there, and the padding goes back as plain bytes.
 */
int np_restore_hop(struct np_region *r)
{
	size_t len = np_host_isa->jump_len;
	int err = np_threads_move_out(r->hop - 1, r->hop + len, hop_to_site, r, NULL);
	if (err)
		return err;
	if ((err = np_code_write(r->hop, r->hop_orig, len)))
		return err;
	np_sync_cores();
	return 0;
}

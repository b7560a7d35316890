/* SPDX-License-Identifier: MIT */
/*
 * Patches no longer than the breakpoint, written in two steps through it.
 *
 * On arm64 every patch but the long jump is one word, and a TRAP is one
 * breakpoint on every ISA (x86 int3, arm64 brk, riscv64 c.ebreak). The Arm ARM (B2.2.5) lets another thread run a word being
 * replaced only when the old and the new word are both one of b, bl, brk,
 * nop (and a few system forms). So a word goes in two steps, through the
 * breakpoint: the current word to brk, then brk to the new word; a thread
 * that meets the breakpoint meanwhile is sent on by the trap handler (the
 * region is in the trap table while its jump is written). A step that the
 * ISA says another thread may not execute concurrently
 * (np_isa.patch_needs_stop: on arm64 an arbitrary word to brk, brk back to
 * one; on riscv64 anything but one aligned parcel) is written with
 * every other thread stopped (stop.c); brk to b and b to brk are not.
 * Each step is taken for every word of a batch at once, so a batch stops
 * the threads once per step that needs it, not once per probe.
 *
 * Nothing here is one ISA's: what differs between them is asked of the
 * ISA descriptor (trap_len, emit_trap, patch_needs_stop; NULL on x86-64,
 * whose one-byte int3 never needs a stop). Longer patches go through
 * region_write.c's breakpoint-first protocol.
 */
#include "core/word_write.h"
#include "core/code_write.h"
#include "core/stop.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct word_step {
	struct np_region *r;
	const uint8_t *to;
	size_t len;
	uint8_t from[16];
	uint8_t before[16]; /* what the word held before the first step */
	int *err;
};

static bool step_needs_stop(const struct word_step *w)
{
	return np_host_isa->patch_needs_stop &&
	       np_host_isa->patch_needs_stop(w->from, w->to, w->len, w->r->start);
}

/* Every step of v whose word changes, written; cores synchronised once. */
static void write_words(struct word_step *v, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	bool stop = false, any = false;
	for (size_t i = 0; i < n; i++) {
		if (*v[i].err || !memcmp(v[i].from, v[i].to, v[i].len))
			continue;
		any = true;
		if (step_needs_stop(&v[i])) {
			stop = true;
			lo = v[i].r->start < lo ? v[i].r->start : lo;
			hi = v[i].r->start + v[i].len > hi ? v[i].r->start + v[i].len : hi;
		}
	}
	if (!any)
		return;
	/* nothing lies strictly inside one word: no thread to move, no landing */
	int err = stop ? np_threads_stop(lo, hi, NULL, NULL, false) : 0;
	for (size_t i = 0; i < n; i++) {
		if (*v[i].err || !memcmp(v[i].from, v[i].to, v[i].len))
			continue;
		if (err && step_needs_stop(&v[i]))
			*v[i].err = err;
		else
			*v[i].err = np_code_write(v[i].r->start, v[i].to, v[i].len);
	}
	np_sync_cores();
	if (stop && !err)
		np_threads_resume();
}

/* A word whose second step failed (its threads could not be stopped)
 * after the first put the breakpoint in: the word it replaced goes back,
 * where that needs no stop (a b being removed), so that the trap table
 * can forget it. Else it stays behind its breakpoint, as the region it
 * still is (a TRAP that could not be removed). */
static void roll_back(struct word_step *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int ignored = 0;
		bool in_trap = *v[i].err && memcmp(v[i].before, v[i].from, v[i].len);
		if (!in_trap)
			continue;
		v[i].to = v[i].before;
		v[i].err = &ignored;
		if (!step_needs_stop(&v[i]))
			write_words(&v[i], 1);
	}
}

void np_patch_words(struct np_region *const *r, const uint8_t *const *bytes, size_t n, int *errs)
{
	size_t tl = np_host_isa->trap_len;
	uint8_t trap[16];
	struct word_step *v = calloc(n ? n : 1, sizeof(*v));
	np_host_isa->emit_trap(trap);
	for (size_t i = 0; i < n; i++) {
		errs[i] = v ? 0 : -ENOMEM;
		if (v)
			v[i] = (struct word_step){.r = r[i], .to = trap, .len = tl, .err = &errs[i]};
		if (v && !(errs[i] = np_code_read(r[i]->start, v[i].from, tl)) &&
		    (!memcmp(bytes[i], trap, tl) || !memcmp(v[i].from, trap, tl)))
			v[i].to = v[i].from; /* already there, or brk is the new word: one step */
	}
	if (!v)
		return;
	write_words(v, n); /* to the breakpoint */
	for (size_t i = 0; i < n; i++) {
		memcpy(v[i].before, v[i].from, tl);
		if (!errs[i] && v[i].to == trap)
			memcpy(v[i].from, trap, tl);
		v[i].to = bytes[i];
	}
	write_words(v, n); /* to the new word */
	roll_back(v, n);
	free(v);
}

/* SPDX-License-Identifier: MIT */
/*
 * Where an entry probe goes, and what the runtime must know about the
 * entry's branch protection (arm64 BTI and PAC, -mbranch-protection).
 *
 * A function that can be called indirectly starts with a landing pad
 * (bti c, or paciasp, an implicit bti c), and an indirect call into a
 * guarded page that finds anything else there faults (Arm ARM D8.4): so
 * neither the JUMP's branch nor a breakpoint may replace it. The probe
 * goes on the instruction after the pad instead. It sees what the entry
 * saw (arguments, stack), except that after paciasp x30 holds the return
 * address signed with key A (pacibsp: B) and the entry sp: a return probe
 * must put the return trampoline there signed the same way (entry->pad).
 *
 * A function may also sign its return address later than its entry (gcc
 * puts paciasp after a bti c and a few instructions, or where a
 * shrink-wrapped prologue starts). What it then spills while it calls
 * others is signed, so whoever puts the real return address back in its
 * frame for an unwinder must sign it too: entry->ret_pac, the key the
 * function signs with, found by looking for the instruction.
 */
#include "core/code_write.h"
#include "core/modules.h"

#include <string.h>

#define SCAN_MAX 16384 /* bytes: a prologue is near the start */

static bool at_entry(uint64_t addr, uint64_t func_start, uint64_t *end)
{
	struct np_func_bounds fb;
	if (func_start) {
		return func_start == addr;
	}
	if (np_symbol_bounds(addr, &fb) || fb.start != addr)
		return false;
	*end = fb.end;
	return true;
}

/* The first pointer-authentication pad of the function: the key it signs
 * its return address with. */
static unsigned signing_key(const struct np_isa *isa, uint64_t start, uint64_t end)
{
	static uint8_t code[SCAN_MAX]; /* engine lock held */
	size_t len = end - start < SCAN_MAX ? end - start : SCAN_MAX;
	if (np_code_read(start, code, len))
		return NP_PAD_NONE;
	for (size_t i = 0; i + isa->max_insn <= len; i += isa->insn_align) {
		unsigned kind = isa->landing_pad(code + i, len - i);
		if (kind == NP_PAD_PAC_A || kind == NP_PAD_PAC_B)
			return kind;
	}
	return NP_PAD_NONE;
}

bool np_entry_find(uint64_t addr, uint64_t func_start, size_t func_size, struct np_entry *out)
{
	const struct np_isa *isa = np_host_isa;
	uint64_t end = func_start + func_size;

	memset(out, 0, sizeof(*out));
	out->site = addr;
	if (!at_entry(addr, func_start, &end))
		return false;
	out->func_end = end > addr ? end : addr;
	if (!isa->landing_pad)
		return true;
	/* bti c; paciasp at most, and an instruction must follow */
	for (int i = 0; i < 2 && out->site + 2 * isa->max_insn <= end; i++) {
		uint8_t code[16];
		unsigned kind;
		if (np_code_read(out->site, code, isa->max_insn) ||
		    !(kind = isa->landing_pad(code, isa->max_insn)))
			break;
		if (kind != NP_PAD_BTI)
			out->pad = (uint8_t)kind;
		out->site += isa->max_insn;
	}
	out->pad_len = (uint8_t)(out->site - addr);
	out->ret_pac = (uint8_t)(out->pad ? out->pad : signing_key(isa, addr, end));
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * What a thread's registers and the words above its stack pointer say,
 * for a patch about to replace the bytes [start, end).
 *
 * A thread is asked where it is before code changes under it (stop.c),
 * or, when it waits in a system call, looked at from outside (tasks.c
 * gives its pc and stack pointer). Its pc alone does not tell everything:
 *   - it may be on its way through a trampoline that jumps back strictly
 *     inside the bytes (one built for an instruction there, since
 *     retired), with the way back in a register or a word on its stack;
 *   - a signal handler of the program's may have interrupted it inside
 *     the bytes, and that pc lies in the signal frame above, where no one
 *     may change it.
 * Both are found by scanning a window of the stack, fault-safe, from the
 * stop signal's handler (so not instrumented by ASan) or from outside.
 * The scan is a window, not a proof: each question says what a word it
 * cannot read, or a stale one, counts as.
 */
#include "core/codemem.h"
#include "core/stack_scan.h"
#include "core/thread.h"
#include "host/host.h"
#include "host/layout.h"

#include <signal.h>
#include <stddef.h>

/* The words just above a thread's stack pointer, STACK_LOOK bytes of
 * them or up to the end of the stack, each given to 'look' until it says
 * stop. This and its helpers run in the stop signal's handler (stop.c):
 * not instrumented by ASan, like it. Read fault-safe (np_read_user: the
 * SIGSEGV guard works in that handler, which leaves SIGSEGV and SIGBUS
 * unblocked). 2 KiB missed
 * the signal frame of a program's handler under ASan (e2e-landing's
 * storm); how deep a handler's frames go is the program's: a window, not
 * a proof. */
#define STACK_LOOK 16384
__attribute__((no_sanitize("address"))) static bool
any_stack_word(uint64_t sp, bool (*look)(uint64_t word, uint64_t at, void *cookie), void *cookie)
{
	uint64_t words[32];
	sp &= ~(uint64_t)7;
	for (uint64_t at = sp; at < sp + STACK_LOOK;) {
		size_t n = sizeof(words) / sizeof(words[0]);
		if (np_read_user(words, at, sizeof(words))) /* the stack may end here */
			for (n = 0; n < sizeof(words) / sizeof(words[0]) &&
				    !np_read_user(&words[n], at + 8 * n, 8);
			     n++)
				;
		for (size_t i = 0; i < n; i++)
			if (look(words[i], at + 8 * i, cookie))
				return true;
		if (n < sizeof(words) / sizeof(words[0]))
			return false;
		at += sizeof(words);
	}
	return false;
}

/* The range a trampoline must not lead back into, for leads_inside. */
struct way_back {
	uint64_t start, end;
	bool seen; /* a word in trampoline memory at all */
};

__attribute__((no_sanitize("address"))) static bool leads_inside(uint64_t word, uint64_t at,
								   void *cookie)
{
	struct way_back *w = cookie;
	(void)at;
	w->seen |= np_codemem_holds(word);
	return np_codemem_leads_inside(word, w->start, w->end);
}

/* Could a thread be on its way through a trampoline that jumps back
 * strictly inside (start, end) (one built for an instruction there, since
 * retired)? In one, or with a return address into one in a register or
 * among the words just above its stack pointer: the save code (riscv:
 * np_rv_site_rest keeps the block's return address 552 bytes above its
 * sp, but until its first store only in ra; arm64's shared code has it in
 * x30 likewise), np__dispatch and the handlers. A thread in a handler
 * whose trampoline is not found that way counts too. Conservative: a
 * stale word counts as well. gpr is NULL for a thread seen from outside
 * (blocked in a system call: its registers cannot be read without
 * interrupting the call). */
__attribute__((no_sanitize("address"))) bool
np_stack_way_back_seen(uint64_t pc, const uint64_t *gpr, uint64_t sp, bool in_handler,
		       uint64_t start, uint64_t end)
{
	struct way_back w = {start, end, false};
	if (np_codemem_leads_inside(pc, start, end))
		return true;
	for (int i = 0; gpr && i < NP_NGPR; i++)
		if (leads_inside(gpr[i], 0, &w))
			return true;
	return any_stack_word(sp, leads_inside, &w) || (in_handler && !w.seen);
}

__attribute__((no_sanitize("address"))) bool
np_patch_on_way_back(const struct np_regs *regs, uint64_t start, uint64_t end)
{
	struct np_thread *t = np_thread_peek();
	bool in_handler = t && atomic_load(&t->in_site);
	return np_stack_way_back_seen(regs->pc, regs->gpr, regs->gpr[np_host_isa->sp_reg],
				      in_handler, start, end);
}

/* Is the word at 'at' the pc of a trampoline's context (struct np_ctx, on
 * the stack of a thread running a probe's handlers)? Its site pointer
 * names that address. */
__attribute__((no_sanitize("address"))) static bool ctx_pc_slot(uint64_t word, uint64_t at)
{
	const uint64_t back = offsetof(struct np_ctx, regs.pc) - offsetof(struct np_ctx, site);
	uint64_t site, addr;
	return at >= back && np_read_user(&site, at - back, sizeof(site)) == 0 && site &&
	       np_read_user(&addr, site + offsetof(struct np_site, addr), sizeof(addr)) == 0 &&
	       addr == word;
}

/* Could the word at 'at' be the pc a signal frame returns to? Around it
 * the kernel (and qemu-user) writes uc_link, always 0, and the interrupted
 * stack pointer: just above the frame, or anywhere when the frame is on
 * the alternate stack its uc_stack records. A word that cannot be read
 * counts. */
#define SIGFRAME_REACH (1u << 20) /* frame to interrupted sp: SVE/SME and
				   * AVX-512 state fit many times over */
__attribute__((no_sanitize("address"))) static bool sigframe_pc_slot(uint64_t at)
{
	const struct np_uc_shape *s = &np_host_uc_shape;
	uint64_t link, sp;
	stack_t ss;
	if (np_read_user(&link, at + (uint64_t)s->link, sizeof(link)) ||
	    np_read_user(&sp, at + (uint64_t)s->sp, sizeof(sp)) ||
	    np_read_user(&ss, at + (uint64_t)s->stack, sizeof(ss)))
		return true;
	return link == 0 && ((sp > at && sp - at < SIGFRAME_REACH) ||
			     at - (uint64_t)(uintptr_t)ss.ss_sp < ss.ss_size);
}

bool np_inside_moves(const struct np_inside *in, uint64_t pc)
{
	return in->map && pc > in->start && pc < in->end && in->map(in->cookie, pc) != pc;
}

/* The pc of a program's signal frame, strictly inside the bytes? Other
 * copies of such an address are not waited for: the pc in the context of
 * a thread running the handlers of a probe there, and spills of it in the
 * engine's C frames (both go on through a trampoline). Taken for signal
 * frames, they made a patch over a busy site wait for its handler to end
 * and give up (EAGAIN; AUTO fell back to TRAP). */
__attribute__((no_sanitize("address"))) static bool moved_by_map(uint64_t word, uint64_t at,
								   void *in)
{
	return np_inside_moves(in, word) && !ctx_pc_slot(word, at) && sigframe_pc_slot(at);
}

/* Is this thread in a signal handler (of the program's) that interrupted
 * it strictly inside the bytes? The stop's handler (stop.c) sees and
 * moves only the pc it interrupted itself; the one the outer handler returns to lies in
 * that handler's signal frame, just above. A thread found so cannot be
 * moved (a word that only looks like that pc must not be changed): the
 * patch waits until it has left its handler. Return addresses are never
 * strictly inside a region (a displaced call comes last), so stale words
 * rarely count. */
__attribute__((no_sanitize("address"))) bool
np_stack_interrupted_inside(uint64_t sp, const struct np_inside *in)
{
	return in->map && any_stack_word(sp, moved_by_map, (void *)in);
}

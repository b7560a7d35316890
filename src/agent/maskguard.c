/* SPDX-License-Identifier: MIT */
/*
 * An injected agent's guard on the program's mask calls.
 *
 * A thread that blocks SIGTRAP dies at the first breakpoint it meets: the
 * kernel forces the signal on and resets its handler first (signals.c).
 * A preloaded agent interposes the program's sigprocmask and
 * pthread_sigmask; an injected one comes after libc in the lookup order
 * and cannot. The command unblocks SIGTRAP, SIGSEGV and SIGBUS in the
 * threads that exist (tools/nanoprobe/inject/masks.c); this covers the threads
 * that block them during the session: jemalloc makes its background
 * threads with every signal blocked, around pthread_create, and one born
 * during a 'count -p PID c:*' of redis-server died at the breakpoint a
 * jump goes in behind.
 *
 * So, while a session of an injected agent runs, an entry probe of the
 * agent's own on each of them hands the call a copy of the set without
 * those signals, nor the one the engine stops threads with (a thread that
 * blocks it makes every other wait), when it blocks signals (SIG_BLOCK,
 * SIG_SETMASK). What
 * the program reads back is the mask it really has. After the session
 * the command blocks them again where a thread has the mask it left, or
 * one made from it.
 *
 * Hit path: no libc, no allocation (the copy is per thread, in TLS).
 */
#include "agent/agent.h"
#include "arch/arch.h"   /* struct np_isa */
#include "core/embed.h"
#include "core/nolibc.h" /* np_errno */
#include "host/host.h"   /* np_host_isa */

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#define TLS_IE __attribute__((tls_model("initial-exec")))

/* the kernel's sigset: the first word of libc's; and the signal the
 * engine stops threads with, which a thread must take to answer */
static uint64_t guarded;

static __thread uint64_t copy[sizeof(sigset_t) / sizeof(uint64_t)] TLS_IE;
static struct np_probe *guards[2];

/* how, set, old: the same for sigprocmask and pthread_sigmask. (A signal
 * handler of the program's that changes its mask between this and the
 * system call would reuse the copy: a window of a few instructions.) */
static void guard_mask(struct np_ctx *ctx, void *data)
{
	(void)data;
	uint64_t how = np_ctx_arg(ctx, 0), set = np_ctx_arg(ctx, 1);
	int saved_errno = *np_errno(); /* np_read_user may set it */
	if (!set || (how != SIG_BLOCK && how != SIG_SETMASK) ||
	    np_read_user(copy, set, sizeof(copy)) || !(copy[0] & guarded)) {
		*np_errno() = saved_errno;
		return; /* a bad set is the call's to refuse (EFAULT) */
	}
	copy[0] &= ~guarded;
	np_ctx_set_reg(ctx, np_host_isa->arg_regs[1], (uint64_t)(uintptr_t)copy);
}

void np_agent_guard_masks(void)
{
	static const char *const names[] = {"pthread_sigmask", "sigprocmask"};
	guarded = 1ull << (SIGTRAP - 1) | 1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1) |
		  1ull << (np_patch_signal() - 1);
	for (int i = 0; i < 2; i++) {
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = guard_mask, .name = names[i],
						       .flags = NP_PROBE_NO_FPU);
		guards[i] = fn ? np_probe_attach(fn, &o) : NULL;
	}
}

void np_agent_unguard_masks(void)
{
	for (int i = 0; i < 2; i++) {
		np_probe_free(guards[i]);
		guards[i] = NULL;
	}
}

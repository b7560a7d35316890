/* SPDX-License-Identifier: MIT */
/*
 * Signals that are not ours, and the dispositions we stand in front of.
 *
 * The engine installs handlers for SIGTRAP (breakpoints) and, for
 * np_read_user, SIGSEGV and SIGBUS. Each meets signals that belong to the
 * program: its own int3 or brk, a fault in its own code, a kill(). Those
 * go to the disposition the program had, with the effects the kernel
 * would have given them without us: the handler's mask, SA_RESETHAND,
 * the default action (which for a fault the kernel forces even when the
 * signal is ignored).
 *
 * For SIGTRAP the program may also set its disposition after the engine
 * installed its handler. An agent that interposes sigaction hands that to
 * np_trap_chain_swap, which keeps it here instead of letting it replace
 * the engine's handler. The SIGTRAP handler reads it without a lock: two
 * slots and a generation; a writer fills the slot not in use, then
 * publishes it, and a reader retries when a writer moved on meanwhile (a
 * handler that interrupted a writer on its own thread reads the slot not
 * being written, so it never waits for it).
 *
 * This runs inside signal handlers, possibly under a probe on any libc
 * function: raw system calls only.
 */
#include "arch/arch.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/nolibc.h"
#include "core/sigchain.h"
#include "host/host.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#define KSIGSET_SIZE 8 /* the kernel's sigset_t: the first word of libc's */

static unsigned long sigbit(int sig)
{
	return 1ul << (sig - 1);
}

static void raw_sigmask(int how, unsigned long set)
{
	np_host_syscall(SYS_rt_sigprocmask, how, (long)&set, 0, KSIGSET_SIZE, 0, 0);
}

/* SIG_DFL through the kernel directly: a zeroed kernel sigaction (no
 * flags, empty mask) has the same meaning in every ISA's layout, and no
 * interposed sigaction sees it. */
static void raw_default(int sig)
{
	long ksa[4] = {0};
	np_host_syscall(SYS_rt_sigaction, sig, (long)ksa, 0, KSIGSET_SIZE, 0, 0);
}

static void raw_raise(int sig)
{
	long pid = np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	long tid = np_host_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
	raw_sigmask(SIG_UNBLOCK, sigbit(sig));
	np_host_syscall(SYS_tgkill, pid, tid, sig, 0, 0, 0);
}

void np_sig_chain(const struct sigaction *act, struct sigaction *home, int sig, siginfo_t *si,
		  void *uc, bool refaults)
{
	struct sigaction a;
	np_copy(&a, act, sizeof(a));
	bool from_kernel = si->si_code > 0; /* a trap or a fault, not kill() */

	if (a.sa_handler == SIG_IGN && !from_kernel)
		return;
	if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN) {
		/* A fault that re-executes when we return takes the default
		 * action by itself; anything else is sent again. */
		raw_default(sig);
		if (!(from_kernel && refaults))
			raw_raise(sig);
		return;
	}
	if (a.sa_flags & SA_RESETHAND) /* the next one takes the default */
		__atomic_store_n(&home->sa_handler, SIG_DFL, __ATOMIC_RELAXED);
	/* The mask the kernel would have set for that handler (ours have an
	 * empty sa_mask and SA_NODEFER, so this only adds); sigreturn puts
	 * the program's mask back. */
	unsigned long mask;
	np_copy(&mask, &a.sa_mask, sizeof(mask));
	if (!(a.sa_flags & SA_NODEFER))
		mask |= sigbit(sig);
	raw_sigmask(SIG_BLOCK, mask);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		a.sa_handler(sig);
}

/* --- the program's SIGTRAP disposition ---------------------------------------- */

static struct sigaction trap_slot[2];
static _Atomic unsigned trap_gen;      /* trap_slot[trap_gen & 1] is current */
static _Atomic bool trap_kept;         /* the engine's handler is installed */
static pthread_mutex_t trap_writer = PTHREAD_MUTEX_INITIALIZER;

static void trap_publish(const struct sigaction *act)
{
	unsigned g = atomic_load_explicit(&trap_gen, memory_order_relaxed);
	np_copy(&trap_slot[(g + 1) & 1], act, sizeof(*act));
	atomic_store_explicit(&trap_gen, g + 1, memory_order_release);
}

void np_trap_chain_init(const struct sigaction *prev)
{
	pthread_mutex_lock(&trap_writer);
	trap_publish(prev);
	atomic_store(&trap_kept, true);
	pthread_mutex_unlock(&trap_writer);
}

/* In a forked child: a thread of the parent's may have held the writers'
 * lock at the fork. What it was writing went to the slot not yet
 * published, so the one the readers use is whole. */
void np_sigchain_after_fork(void)
{
	pthread_mutex_init(&trap_writer, NULL);
}

int np_trap_chain_swap(const struct sigaction *act, struct sigaction *old)
{
	if (!atomic_load(&trap_kept))
		return -EAGAIN;
	pthread_mutex_lock(&trap_writer);
	unsigned g = atomic_load_explicit(&trap_gen, memory_order_relaxed);
	if (old)
		np_copy(old, &trap_slot[g & 1], sizeof(*old));
	if (act)
		trap_publish(act);
	pthread_mutex_unlock(&trap_writer);
	return 0;
}

void np_trap_chain(int sig, siginfo_t *si, void *uc)
{
	for (;;) {
		unsigned g = atomic_load_explicit(&trap_gen, memory_order_acquire);
		struct sigaction a;
		np_copy(&a, &trap_slot[g & 1], sizeof(a));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&trap_gen, memory_order_relaxed) != g)
			continue; /* a writer may have reused the slot we read */
		/* x86's int3 reports the pc after it: returning does not trap
		 * again. arm64's brk and riscv's ebreak do. */
		np_sig_chain(&a, &trap_slot[g & 1], sig, si, uc, np_host_isa->trap_pc_after == 0);
		return;
	}
}

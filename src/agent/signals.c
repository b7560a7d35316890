/* SPDX-License-Identifier: MIT */
/*
 * The program's signal calls, seen by the agent first.
 *
 * A TRAP probe is a breakpoint: the thread that reaches it takes a
 * SIGTRAP, which the engine's handler turns into the probe's work. Two
 * ordinary things a program does would make that breakpoint kill it (the
 * kernel forces a blocked SIGTRAP, or one with the default disposition,
 * to its default action):
 *   - block SIGTRAP: servers block every signal in their worker threads
 *     and wait for signals in one thread, or install handlers with a full
 *     sa_mask, and a TRAP probe in code those threads run would end them;
 *   - set SIGTRAP's disposition after the engine installed its handler
 *     (a debug-break helper, a runtime that uses breakpoints itself).
 * So, while the agent is preloaded, the program's sigprocmask,
 * pthread_sigmask, sigsuspend and sigaction never block SIGTRAP, nor the
 * signal the engine moves threads out of patched bytes with; and its
 * SIGTRAP dispositions are kept behind the engine's handler, which
 * delivers to them the SIGTRAPs that are not ours (core/sigchain.c).
 *
 * What the program reads back from the masks is what it set: the
 * protected signals it asked to block are remembered per thread and shown
 * in the old masks it gets. Not hidden: a handler's sa_mask read back
 * through sigaction lacks them, and a thread created while its creator had
 * them "blocked" starts without that memory.
 *
 * Only preloading interposes: an agent injected with dlopen comes after
 * libc in the lookup order. The agent's own calls (np_agent_busy) pass
 * through unchanged, and its work here is marked as its own so that probes
 * on libc do not count it as the program's.
 */
#include "agent/agent.h"
#include "core/embed.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS_IE __attribute__((tls_model("initial-exec")))

typedef int mask_fn(int how, const sigset_t *set, sigset_t *old);

static struct {
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	mask_fn *sigprocmask, *pthread_sigmask;
	int (*sigsuspend)(const sigset_t *);
	sighandler_t (*signal)(int, sighandler_t);
	sighandler_t (*sysv_signal)(int, sighandler_t);
} real;

static void find_real(void)
{
	real.sigaction = dlsym(RTLD_NEXT, "sigaction");
	real.sigprocmask = (mask_fn *)dlsym(RTLD_NEXT, "sigprocmask");
	real.pthread_sigmask = (mask_fn *)dlsym(RTLD_NEXT, "pthread_sigmask");
	real.sigsuspend = dlsym(RTLD_NEXT, "sigsuspend");
	real.signal = dlsym(RTLD_NEXT, "signal");
	real.sysv_signal = dlsym(RTLD_NEXT, "sysv_signal");
}

static void resolve(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	np_agent_busy++;
	pthread_once(&once, find_real);
	np_agent_busy--;
}

/* The signals the program may not block, as a list. */
static int protected_signals(int out[2])
{
	out[0] = SIGTRAP;
	out[1] = np_patch_signal();
	return out[1] == SIGTRAP ? 1 : 2;
}

/* The protected signals the calling thread asked to block (bit sig - 1). */
static __thread unsigned long asked TLS_IE;

/* set without the protected signals into *copy; their bits in set. */
static unsigned long strip(const sigset_t *set, sigset_t *copy)
{
	int sigs[2], n = protected_signals(sigs);
	unsigned long bits = 0;
	*copy = *set;
	for (int i = 0; i < n; i++)
		if (sigismember(set, sigs[i]) == 1) {
			bits |= 1ul << (sigs[i] - 1);
			sigdelset(copy, sigs[i]);
		}
	return bits;
}

static void show_asked(sigset_t *old, unsigned long bits)
{
	int sigs[2], n = protected_signals(sigs);
	for (int i = 0; i < n; i++)
		if (bits & (1ul << (sigs[i] - 1)))
			sigaddset(old, sigs[i]);
}

/* sigprocmask and pthread_sigmask: same arguments, different error
 * conventions (-1 and errno, or the error number); 0 is success for both. */
static int mask_call(mask_fn *fn, int how, const sigset_t *set, sigset_t *old)
{
	if (np_agent_busy)
		return fn(how, set, old);
	sigset_t copy;
	unsigned long bits = 0, before = asked;
	if (set) {
		np_agent_busy++;
		bits = strip(set, &copy);
		np_agent_busy--;
		set = &copy;
	}
	int ret = fn(how, set, old);
	if (ret != 0)
		return ret;
	if (set && how == SIG_BLOCK)
		asked |= bits;
	else if (set && how == SIG_UNBLOCK)
		asked &= ~bits;
	else if (set && how == SIG_SETMASK)
		asked = bits;
	if (old) {
		np_agent_busy++;
		show_asked(old, before);
		np_agent_busy--;
	}
	return 0;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	resolve();
	return mask_call(real.sigprocmask, how, set, old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	resolve();
	return mask_call(real.pthread_sigmask, how, set, old);
}

EXPORT int sigsuspend(const sigset_t *mask)
{
	resolve();
	sigset_t copy;
	if (!np_agent_busy) {
		np_agent_busy++;
		strip(mask, &copy);
		np_agent_busy--;
		mask = &copy;
	}
	return real.sigsuspend(mask);
}

/* The program sets SIGTRAP's disposition: kept behind the engine's handler
 * once that is installed. 0, or -EAGAIN when it is not (yet). */
static int keep_trap_disposition(const struct sigaction *act, struct sigaction *old)
{
	np_agent_busy++;
	int err = np_trap_chain_swap(act, old);
	np_agent_busy--;
	return err;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	resolve();
	if (np_agent_busy)
		return real.sigaction(sig, act, old);
	struct sigaction copy;
	if (act) {
		copy = *act;
		np_agent_busy++;
		strip(&act->sa_mask, &copy.sa_mask);
		np_agent_busy--;
		act = &copy;
	}
	if (sig == SIGTRAP && keep_trap_disposition(act, old) == 0)
		return 0;
	int ret = real.sigaction(sig, act, old);
	if (ret == 0 && act && (sig == SIGSEGV || sig == SIGBUS)) {
		np_agent_busy++;
		np_fault_guard_refresh(); /* np_read_user: is its guard still ours? */
		np_agent_busy--;
	}
	return ret;
}

/* signal() and its relatives set a disposition through libc's internal
 * sigaction, which no interposer sees: SIGTRAP's is taken here. */
static sighandler_t handler_call(int sig, sighandler_t handler, int flags,
				 sighandler_t (*fn)(int, sighandler_t))
{
	if (sig != SIGTRAP || np_agent_busy || handler == SIG_ERR)
		return fn(sig, handler);
	struct sigaction act = {.sa_handler = handler, .sa_flags = flags}, old;
	sigemptyset(&act.sa_mask);
	if (keep_trap_disposition(&act, &old))
		return fn(sig, handler);
	return old.sa_handler;
}

EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	resolve();
	return handler_call(sig, handler, SA_RESTART, real.signal);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	resolve();
	return handler_call(sig, handler, SA_RESTART, real.signal);
}

EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	resolve();
	return handler_call(sig, handler, SA_RESETHAND | SA_NODEFER, real.sysv_signal);
}

/* What signal() is in a program built for strict ISO C (glibc's header
 * redirects it). */
EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	return sysv_signal(sig, handler);
}

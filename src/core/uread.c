/* SPDX-License-Identifier: MIT */
/*
 * Fault-safe reads of the program's memory, for handlers that follow a
 * pointer argument (a string, +8(%di)) that may be bad.
 *
 * As the kernel's copy_from_user does with its exception table: the copy
 * routines of src/host/<host>/uread.S load the source with instructions
 * listed in np_host_uread_extable, each with a fixup address. A SIGSEGV or
 * SIGBUS whose pc is one of those loads is ours: the handler moves the pc
 * to the fixup, which returns how far the copy got, and the read fails
 * with EFAULT. The pc decides, not si_addr: a non-canonical address on
 * x86-64 raises #GP, which arrives as SIGSEGV with si_addr 0. A readable
 * source costs no more than a copy loop, no syscall.
 *
 * Any other fault belongs to the program and is passed on as the kernel
 * would have delivered it without us: to the handler the program had set
 * before the guard went in (its sa_mask, SA_NODEFER and SA_RESETHAND
 * honoured), or, under SIG_DFL or SIG_IGN, the default disposition is put
 * back and the faulting instruction runs again, so the program dies of the
 * same signal at the same place, with the same core dump.
 *
 * The guard only works while it is the installed handler. A program that
 * sets its own later (Python's faulthandler, a JVM) would get our faults
 * and die of them, so reads take the fast path only while a flag says the
 * guard is in place; np_fault_guard_refresh() (control path: one
 * sigaction query per signal) sets that flag. Otherwise reads go through
 * process_vm_readv() on our own pid: one syscall, but the kernel does the
 * faulting. Residual window: between the program replacing the handler and
 * the next refresh, a bad read would reach the program's handler. An agent
 * that interposes sigaction can close it by refreshing from there.
 *
 * Also residual: the kernel kills a thread that faults with the signal
 * blocked (its mask is not visible without a syscall), so a handler that
 * reads a bad address on a thread blocking SIGSEGV/SIGBUS, or in a signal
 * handler whose sa_mask blocks them, takes the program down.
 */
#include "arch/arch.h"
#include "core/engine.h"
#include "core/nolibc.h"
#include "core/sigchain.h"
#include "host/host.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* No ISA we target gives user space more than 56 bits (x86-64 with LA57,
 * riscv64 Sv57; arm64 stops at 52): beyond that lies the kernel half or a
 * non-canonical hole, refused without a fault. Unmapped holes below it
 * (non-canonical on a 4-level x86-64) fault and are caught like any
 * other bad address. */
#define USER_TOP (1ull << 56)
#define PAGE_MIN 4096 /* every page size is a multiple of it */

static const int guarded[2] = {SIGSEGV, SIGBUS};
static struct sigaction prev[2]; /* what the program had: we chain to it */
static atomic_bool guard_ok;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static uint64_t fixup_for(uint64_t pc)
{
	for (const struct np_uread_fixup *f = np_host_uread_extable; f->insn; f++)
		if (f->insn == pc)
			return f->fixup;
	return 0;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct np_regs regs;

	np_host_regs_from_uc(&regs, uc);
	uint64_t fix = si->si_code > 0 ? fixup_for(regs.pc) : 0;
	if (fix) {
		regs.pc = fix;
		np_host_regs_to_uc(&regs, uc);
		return;
	}
	struct sigaction *pa = &prev[sig == SIGBUS];
	np_sig_chain(pa, pa, sig, si, uc, true);
}

static void install(void)
{
	struct sigaction sa = {.sa_sigaction = on_fault,
			       .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER};
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 2; i++) {
		struct sigaction old;
		/* prev is filled before our handler can run; the swap's own
		 * answer then wins, should the program have raced us. */
		sigaction(guarded[i], NULL, &prev[i]);
		if (sigaction(guarded[i], &sa, &old) == 0)
			prev[i] = old;
		else
			np_logf(NP_LOG_ERROR, "cannot install the %s handler: %s",
				guarded[i] == SIGSEGV ? "SIGSEGV" : "SIGBUS", strerror(errno));
	}
}

static bool is_ours(int sig)
{
	struct sigaction cur;
	return sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == on_fault;
}

NP_API bool np_fault_guard_refresh(void)
{
	pthread_once(&install_once, install);
	bool ok = is_ours(SIGSEGV) && is_ours(SIGBUS);
	if (!ok && atomic_load(&guard_ok))
		np_logf(NP_LOG_WARN, "the program replaced the SIGSEGV/SIGBUS handler: "
				     "user memory reads now cost a syscall");
	atomic_store(&guard_ok, ok);
	return ok;
}

static bool user_range(uint64_t addr, size_t len)
{
	return addr < USER_TOP && len <= USER_TOP - addr;
}

/* Without the guard, the kernel copies. It stops at the first unreadable
 * page, so dst holds the readable prefix, as on the fast path. Returns
 * the bytes read; errno is set when short. Raw system calls, not libc's
 * wrappers: the patching code's stop handler reads stacks through here
 * while breakpoints are in place, and with every libc function probed a
 * wrapper may be one of them (a breakpoint there, with SIGTRAP blocked,
 * kills the program: seen under ASan, whose SIGSEGV handler turns the
 * guard off). */
static size_t vm_read(void *dst, uint64_t addr, size_t len)
{
	struct iovec local = {dst, len}, remote = {(void *)addr, len};
	long pid = np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	long n = np_host_syscall(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
	if (n < 0) { /* the kernel's -errno: set it as libc's wrapper did */
		*np_errno() = (int)-n;
		return 0;
	}
	if ((size_t)n < len)
		*np_errno() = EFAULT;
	return (size_t)n;
}

/* For the engine's own look at the stack (shadow.c): the whole of it or
 * false, errno left as it was. */
bool np_uread_quiet(void *dst, uint64_t addr, size_t len)
{
	if (!user_range(addr, len))
		return false;
	if (atomic_load_explicit(&guard_ok, memory_order_relaxed))
		return np_host_uread(dst, addr, len) == 0;
	struct iovec local = {dst, len}, remote = {(void *)addr, len};
	long pid = np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	return np_host_syscall(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0) ==
	       (long)len;
}

static int fail_efault(void)
{
	*np_errno() = EFAULT;
	return -1;
}

NP_API int np_read_user(void *dst, uint64_t addr, size_t len)
{
	if (len == 0)
		return 0;
	if (!user_range(addr, len))
		return fail_efault();
	if (!atomic_load_explicit(&guard_ok, memory_order_relaxed))
		return vm_read(dst, addr, len) == len ? 0 : -1;
	return np_host_uread(dst, addr, len) ? fail_efault() : 0;
}

static long str_fast(char *dst, uint64_t addr, size_t max)
{
	long n = np_host_uread_str(dst, addr, max);
	if (n < 0)
		*np_errno() = EFAULT;
	return n;
}

/* One page at a time, so that a string ending just before an unreadable
 * page is read whole. */
static long str_slow(char *dst, uint64_t addr, size_t max)
{
	size_t done = 0;
	while (done < max) {
		size_t chunk = PAGE_MIN - ((addr + done) & (PAGE_MIN - 1));
		if (chunk > max - done)
			chunk = max - done;
		size_t n = vm_read(dst + done, addr + done, chunk);
		const char *nul = np_find_byte(dst + done, '\0', n);
		if (nul)
			return nul - dst;
		if (n < chunk)
			return -(long)(done + n) - 1;
		done += chunk;
	}
	return (long)done;
}

NP_API long np_read_user_str(char *dst, uint64_t addr, size_t len)
{
	if (len == 0)
		return 0;
	if (!user_range(addr, 1)) {
		dst[0] = '\0';
		return fail_efault();
	}
	/* Past USER_TOP nothing is mapped: a fault comes first. */
	size_t max = len - 1 < USER_TOP - addr ? len - 1 : USER_TOP - addr;
	long n = atomic_load_explicit(&guard_ok, memory_order_relaxed)
			 ? str_fast(dst, addr, max)
			 : str_slow(dst, addr, max);
	if (n < 0) {
		dst[-n - 1] = '\0';
		return -1;
	}
	dst[n] = '\0';
	return n;
}

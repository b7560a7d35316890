/* SPDX-License-Identifier: MIT */
/*
 * Patching code that other threads are running.
 *
 * x86 fetches instructions byte by byte and a core may hold stale bytes in
 * its pipeline, so a multi-byte patch is written breakpoint first:
 *   1. write the breakpoint on the first byte; serialise every core;
 *   2. move any thread stopped strictly inside the bytes about to change to
 *      the equivalent address in the new code (it entered before step 1);
 *   3. write the tail; serialise;  4. write the first byte; serialise.
 * A thread reaching the first byte between 1 and 4 traps, and the trap
 * handler sends it where the finished patch would have (trap.c).
 *
 * "Serialise" is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE):
 * every core running one of our threads executes a core-serialising
 * instruction before the call returns. Without it (old kernels) an
 * mprotect() of a page we own forces the TLB-shootdown IPI that has the
 * same effect on the cores that run our threads.
 *
 * Step 2 finds where each thread is without stopping the ones blocked in
 * a syscall: /proc/self/task/TID/syscall gives their user pc. Running
 * threads get a signal whose handler looks at its own saved pc and moves
 * it when needed; a thread that blocks the signal makes the patch fail
 * with EAGAIN rather than risk it.
 */
#include "core/internal.h"

#include <dirent.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static bool have_sync_core, have_expedited;
static void *ipi_page;
static int fixup_sig;

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

/* Touch-then-mprotect: the TLB shootdown interrupts every core that runs
 * this mm, and interrupt return serialises. */
static void ipi_fallback(void)
{
	*(volatile char *)ipi_page = 1;
	mprotect(ipi_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ);
	mprotect(ipi_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
}

void np_sync_cores(void)
{
	if (!have_sync_core || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		ipi_fallback();
}

void np_barrier_threads(void)
{
	if (!have_expedited || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		ipi_fallback();
}

/* --- moving threads out of bytes being replaced ---------------------------- */

static struct {
	uint64_t start, end;
	uint64_t (*map)(void *cookie, uint64_t pc);
	void *cookie;
	_Atomic int acks;
} req;

/* Runs with every signal blocked, while breakpoints are in place: a
 * breakpoint here would kill the thread. Not instrumented by ASan, whose
 * epilogue for a frame this large calls libc's memset (see trap.c). */
__attribute__((no_sanitize("address"))) static void fixup_handler(int sig, siginfo_t *si,
								   void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	struct np_regs regs;
	np_host_regs_from_uc(&regs, uc);
	if (regs.pc > req.start && regs.pc < req.end && req.map) {
		regs.pc = req.map(req.cookie, regs.pc);
		np_host_regs_to_uc(&regs, uc);
	}
	atomic_fetch_add(&req.acks, 1);
}

/* 1: blocked with a known pc outside the range, 0: must be asked. */
static int blocked_outside(int tid, uint64_t start, uint64_t end)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 1; /* thread gone */
	char *line = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!line || strncmp(line, "running", 7) == 0)
		return 0;
	char *last = strrchr(line, ' ');
	uint64_t pc = last ? strtoull(last + 1, NULL, 16) : 0;
	return !(pc > start && pc < end) && pc != 0;
}

/* Wait until 'want' acks arrived; a thread that exited counts as done. */
static int wait_acks(int want, const int *tids, int n)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(&req.acks) < want) {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec < 2)
			continue;
		int gone = 0;
		for (int i = 0; i < n; i++) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/self/task/%d", tids[i]);
			gone += access(path, F_OK) != 0;
		}
		if (atomic_load(&req.acks) + gone >= want)
			return 0;
		np_logf(NP_LOG_WARN, "a thread does not answer signal %d (is it blocked?)", fixup_sig);
		return -EAGAIN;
	}
	return 0;
}

#define MAX_ASK 4096

int np_threads_move_out(uint64_t start, uint64_t end, uint64_t (*map)(void *, uint64_t),
			void *cookie)
{
	static int tids[MAX_ASK]; /* engine lock held */
	pid_t pid = getpid();
	int self = (int)syscall(SYS_gettid), n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	req.start = start;
	req.end = end;
	req.map = map;
	req.cookie = cookie;
	atomic_store(&req.acks, 0);
	/* Ask every running thread at once: on a loaded machine each signal
	 * waits for its thread to be scheduled, so one at a time is slow. */
	struct dirent *e;
	while ((e = readdir(d)) && n < MAX_ASK) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == self || blocked_outside(tid, start, end))
			continue;
		if (syscall(SYS_tgkill, pid, tid, fixup_sig) == 0)
			tids[n++] = tid;
		else if (errno != ESRCH)
			n = -errno;
		if (n < 0)
			break;
	}
	closedir(d);
	int err = n < 0 ? n : wait_acks(n, tids, n);
	req.map = NULL;
	return err;
}

/* --- the protocol ------------------------------------------------------------ */

struct patch_map {
	const struct np_region *region;
};

/* A thread at instruction i of the region goes to its block in the new
 * trampoline (or, when the region is being removed, nowhere: it cannot be
 * inside an instruction of the original code). */
static uint64_t to_trampoline(void *cookie, uint64_t pc)
{
	const struct np_region *r = cookie;
	int i = np_region_insn_index(r, pc);
	return i < 0 ? pc : r->tramp + r->tramp_off[i];
}

/* A patch no longer than the breakpoint (arm64: every patch is one word).
 * The Arm ARM (B2.2.5) lets another thread run a word being replaced only
 * when the old and the new word are both one of b, bl, brk, nop (and a
 * few system forms). So an ordinary instruction becomes a branch through
 * a breakpoint: the old word to brk, then brk to b; a thread that meets
 * the breakpoint meanwhile is sent on by the trap handler (the region is
 * in the trap table while its jump is written). The first store, from an
 * arbitrary word to brk, is the kernel's own uprobe step; the Arm ARM
 * would have the other threads stopped for it (docs/arm64.md). */
static int patch_word(struct np_region *r, const uint8_t *bytes, size_t len, const uint8_t *trap)
{
	uint8_t cur[16];
	int err;
	if (len == np_host_isa->trap_len && memcmp(bytes, trap, len) != 0 &&
	    np_code_read(r->start, cur, len) == 0 && memcmp(cur, trap, len) != 0) {
		if ((err = np_code_write(r->start, trap, len)))
			return err;
		np_sync_cores();
	}
	err = np_code_write(r->start, bytes, len);
	np_sync_cores();
	return err;
}

int np_patch_region(struct np_region *r, const uint8_t *bytes, size_t len, bool move_threads)
{
	uint8_t trap[16], first[16];
	size_t tl = np_host_isa->trap_len;
	int err;

	np_host_isa->emit_trap(trap);
	if (len <= tl)
		return patch_word(r, bytes, len, trap);
	if ((err = np_code_read(r->start, first, tl)) || (err = np_code_write(r->start, trap, tl)))
		return err;
	np_sync_cores();
	if (move_threads &&
	    (err = np_threads_move_out(r->start, r->start + len, to_trampoline, r))) {
		np_code_write(r->start, first, tl);
		np_sync_cores();
		return err;
	}
	if ((err = np_code_write(r->start + tl, bytes + tl, len - tl)))
		return err;
	np_sync_cores();
	if ((err = np_code_write(r->start, bytes, tl)))
		return err;
	np_sync_cores();
	return 0;
}

static int pick_signal(void)
{
	const char *env = getenv("NANOPROBE_SIGNAL");
	int sig = env ? atoi(env) : SIGRTMAX - 3;
	return sig > 0 && sig <= SIGRTMAX ? sig : SIGRTMAX - 3;
}

int np_patch_signal(void)
{
	return fixup_sig ? fixup_sig : pick_signal();
}

int np_patch_init(void)
{
	ipi_page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ipi_page == MAP_FAILED)
		return -errno;
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);
	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		have_sync_core =
			membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		have_expedited = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
	if (!have_sync_core)
		np_logf(NP_LOG_INFO, "membarrier SYNC_CORE unavailable: using mprotect IPIs");

	fixup_sig = pick_signal();
	struct sigaction sa = {.sa_sigaction = fixup_handler,
			       .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
	sigfillset(&sa.sa_mask);
	return sigaction(fixup_sig, &sa, NULL) ? -errno : 0;
}

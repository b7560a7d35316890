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
#include "core/maps.h"
#include "core/nolibc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
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
	/* np_threads_stop: a thread that answered waits in the handler until
	 * 'released' reaches the round it answered; acked[] holds each answer
	 * as round << 32 | tid, so that an answer is never taken for one of a
	 * later round */
	_Atomic bool hold;
	_Atomic unsigned round, released;
	_Atomic uint64_t acked[4096];
	/* np_threads_stop with 'risky' (a trampoline lands inside the range):
	 * how many answering threads may be on their way through one */
	_Atomic bool risky;
	_Atomic int busy;
} req;

/* Could this thread be on its way through a trampoline (which jumps back
 * to a fixed address, maybe inside the bytes being patched)? In one, in
 * a handler, or with a return address into one among the words just
 * above its stack pointer: the save code (riscv: np_rv_site_rest keeps
 * the block's return address 552 bytes above its sp) and np__dispatch
 * before and after the handlers. Conservative: a stale word there counts
 * too. The words are read fault-safe (np_read_user: the SIGSEGV guard
 * works here, the handler leaves SIGSEGV and SIGBUS unblocked). */
#define STACK_LOOK 2048
__attribute__((no_sanitize("address"))) static bool in_trampoline_path(const struct np_regs *regs)
{
	struct np_thread *t = np_thread_peek();
	if (np_codemem_holds(regs->pc) || (t && atomic_load(&t->in_site)))
		return true;
	uint64_t sp = regs->gpr[np_host_isa->sp_reg] & ~(uint64_t)7, words[32];
	for (uint64_t at = sp; at < sp + STACK_LOOK;) {
		size_t n = sizeof(words) / sizeof(words[0]);
		if (np_read_user(words, at, sizeof(words))) /* the stack may end here */
			for (n = 0; n < sizeof(words) / sizeof(words[0]) &&
				    !np_read_user(&words[n], at + 8 * n, 8);
			     n++)
				;
		for (size_t i = 0; i < n; i++)
			if (np_codemem_holds(words[i]))
				return true;
		if (n < sizeof(words) / sizeof(words[0]))
			return false;
		at += sizeof(words);
	}
	return false;
}

/* The answer to a stop request of 'round', from the context the thread
 * resumes at: its pc moved out of the bytes if it lies strictly inside,
 * whether it is on its way through a trampoline, then the wait for the
 * release. Runs with every signal blocked but SIGSEGV and SIGBUS, while
 * breakpoints are in place: a breakpoint here would kill the thread. Not
 * instrumented by ASan, whose epilogue for a frame this large calls libc's
 * memset (see trap.c). */
__attribute__((no_sanitize("address"))) static void answer(ucontext_t *uc, unsigned round,
							   bool stopping)
{
	struct np_regs regs;
	np_host_regs_from_uc(&regs, uc);
	if (stopping && atomic_load(&req.risky)) {
		int saved_errno = *np_errno(); /* np_read_user may set it */
		if (in_trampoline_path(&regs))
			atomic_fetch_add(&req.busy, 1);
		*np_errno() = saved_errno;
	}
	if (regs.pc > req.start && regs.pc < req.end && req.map) {
		regs.pc = req.map(req.cookie, regs.pc);
		np_host_regs_to_uc(&regs, uc);
	}
	int slot = atomic_fetch_add(&req.acks, 1);
	if (!stopping)
		return;
	uint64_t tid = (uint64_t)np_host_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
	if (slot >= 0 && slot < (int)(sizeof(req.acked) / sizeof(req.acked[0])))
		atomic_store(&req.acked[slot], (uint64_t)round << 32 | (uint32_t)tid);
	for (unsigned spin = 0; atomic_load(&req.released) < round; spin++)
		if (spin < 1000)
			NP_CPU_RELAX();
		else /* raw: a probed sched_yield would recurse */
			np_host_syscall(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

/* A request that arrived while the thread ran the engine's SIGTRAP
 * handler, which answers it once it knows where the thread resumes
 * (np_patch_answer_owed): the level of that handler (1 the outermost)
 * and the request. Per thread, initial-exec: read before any call. */
static __thread unsigned owed_level __attribute__((tls_model("initial-exec")));
static __thread unsigned owed_round __attribute__((tls_model("initial-exec")));
static __thread bool owed_stopping __attribute__((tls_model("initial-exec")));

__attribute__((no_sanitize("address"))) void np_patch_answer_owed(void *ucv, unsigned level)
{
	if (owed_level != level)
		return;
	owed_level = 0;
	unsigned round = owed_round;
	if (owed_stopping && atomic_load(&req.released) >= round)
		return; /* the round ended without this answer (EAGAIN) */
	answer(ucv, round, owed_stopping);
}

/* The stop signal's handler. The SIGTRAP handler is meant to block it
 * (np_trap_init), so that a thread that trapped answers from the pc that
 * handler resumes it at. qemu-riscv64 7.2 ignores a handler's sa_mask:
 * the request then interrupts the SIGTRAP handler, right at its entry
 * (both signals were pending) or later. An answer from there would let
 * the patch go in before that handler has decided where the thread goes,
 * which it decides from the code as it was (a retired out-of-line copy
 * that jumps back inside a jump written meanwhile: e2e-torture's wrong
 * results and crashes under qemu). So that handler answers instead. */
__attribute__((no_sanitize("address"))) static void fixup_handler(int sig, siginfo_t *si,
								   void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	/* round first: np_threads_stop sets hold and the request before it */
	unsigned round = atomic_load(&req.round);
	bool stopping = atomic_load(&req.hold);
	if (stopping && atomic_load(&req.released) >= round)
		return; /* a late signal of a round over (or not yet begun) */
	struct np_regs regs;
	np_host_regs_from_uc(&regs, uc);
	unsigned level = np_trap_level();
	if (regs.pc == np_trap_handler_entry())
		level++; /* delivered before its first instruction */
	if (level) {
		owed_level = level;
		owed_round = round;
		owed_stopping = stopping;
		return;
	}
	answer(uc, round, stopping);
}

/* What /proc/self/task/TID/syscall tells of a thread. */
enum look {
	LOOK_ASK,     /* running, or blocked with its pc inside the range */
	LOOK_LEAVE,   /* blocked in a system call at a pc outside the range
		       * (or gone) */
	LOOK_FOREIGN, /* blocked at a pc that is none of the program's code */
};

/* On Linux a blocked thread's user pc is the program's (libc, the vDSO).
 * Under qemu-user it is the emulator's own (LOOK_FOREIGN, only looked for
 * when 'foreign' is asked): the thread is either a guest thread waiting
 * in the emulator, whose guest pc is unknown (it may sit between two
 * translated blocks, anywhere, even inside the range), or one of the
 * emulator's own threads. */
static enum look look_at(int tid, uint64_t start, uint64_t end, bool foreign)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return LOOK_LEAVE; /* thread gone */
	char *line = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!line || strncmp(line, "running", 7) == 0)
		return LOOK_ASK;
	char *last = strrchr(line, ' ');
	uint64_t pc = last ? strtoull(last + 1, NULL, 16) : 0;
	if (foreign && pc != 0 && !np_code_mapped_exec(pc, 1))
		return LOOK_FOREIGN;
	return !(pc > start && pc < end) && pc != 0 ? LOOK_LEAVE : LOOK_ASK;
}

#define SIGBIT(s) (1ull << ((s) - 1))

/* Is tid one of qemu-user's own threads (its RCU thread)? qemu makes them
 * with every host signal blocked but the synchronous SIGSEGV, SIGFPE and
 * SIGILL, for good: they run no guest code and never answer. A guest
 * thread never has that mask: qemu gives it the guest's own mask less
 * SIGSEGV and SIGBUS, or, while it delivers a signal, every signal. Raw
 * reads: no allocation. */
static bool emulator_thread(int tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *at = strstr(buf, "\nSigBlk:");
	if (!at)
		return false;
	uint64_t blk = strtoull(at + 8, NULL, 16);
	uint64_t on = SIGBIT(SIGBUS) | SIGBIT(SIGINT) | SIGBIT(SIGTERM);
	uint64_t off = SIGBIT(SIGILL) | SIGBIT(SIGFPE);
	return (blk & on) == on && !(blk & off);
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
		return -EAGAIN; /* the callers log, once no thread is held */
	}
	return 0;
}

#define MAX_ASK 4096

static bool answered(int tid)
{
	int n = atomic_load(&req.acks);
	uint64_t me = (uint64_t)atomic_load(&req.round) << 32 | (uint32_t)tid;
	for (int i = 0; i < n && i < (int)(sizeof(req.acked) / sizeof(req.acked[0])); i++)
		if (atomic_load(&req.acked[i]) == me)
			return true;
	return false;
}

static bool gone(int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	return access(path, F_OK) != 0;
}

static long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

/* Until every asked thread answered or exited. No thread is taken for
 * stopped without its answer (the count of answers is not enough: a late
 * one from an earlier round counts too). A thread that has not answered
 * when no answer came for STOP_PATIENCE fails the patch with EAGAIN: it
 * blocks the signal, or the machine is too loaded to run it. */
#define STOP_PATIENCE_NS 2000000000L
#define GONE_EVERY_NS 10000000L
static int wait_stopped(const int *tids, int n)
{
	struct timespec last, looked, now;
	int seen = 0;
	clock_gettime(CLOCK_MONOTONIC, &last);
	looked = last;
	static bool out[MAX_ASK]; /* engine lock held: answered or exited */
	memset(out, 0, sizeof(out[0]) * (size_t)n);
	for (;;) {
		int acks = atomic_load(&req.acks), missing = 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (acks != seen) { /* progress */
			seen = acks;
			last = now;
		}
		bool look = elapsed_ns(&looked, &now) > GONE_EVERY_NS;
		for (int i = 0; i < n; i++) {
			if (!out[i])
				out[i] = answered(tids[i]) || (look && gone(tids[i]));
			missing += !out[i];
		}
		if (look)
			looked = now;
		if (!missing)
			return 0;
		if (elapsed_ns(&last, &now) > STOP_PATIENCE_NS)
			return -EAGAIN; /* the callers log, once no thread is held */
		sched_yield();
	}
}

/* Every other thread of the process (up to MAX_ASK): the directory is read
 * to the end before any thread is asked, since a thread stopped inside
 * malloc would make closedir's free() wait for it forever. */
static int list_threads(int *tids, int self)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	if (!d)
		return -errno;
	for (struct dirent *e; (e = readdir(d)) && n < MAX_ASK;) {
		int tid = atoi(e->d_name);
		if (tid > 0 && tid != self)
			tids[n++] = tid;
	}
	closedir(d);
	return n;
}

int np_threads_stop(uint64_t start, uint64_t end, uint64_t (*map)(void *, uint64_t), void *cookie,
		    bool new_code)
{
	static int all[MAX_ASK], asked[MAX_ASK]; /* engine lock held */
	pid_t pid = getpid();
	int n = list_threads(all, (int)syscall(SYS_gettid)), k = 0, err = 0;
	if (n < 0)
		return n;
	/* Blocked in a system call with its pc outside: it runs no user code
	 * now, and interrupting it could fail its call with EINTR. The patch
	 * goes in breakpoint first for the sake of such a thread (or one born
	 * since the listing) that comes back meanwhile. The emulator's own
	 * threads are left too. Sorted out before any thread is stopped: the
	 * look uses stdio. */
	bool risky = new_code && np_codemem_lands_inside(start, end);
	for (int i = 0; i < n; i++) {
		enum look l = look_at(all[i], start, end, true);
		if (l == LOOK_ASK || (l == LOOK_LEAVE && risky) ||
		    (l == LOOK_FOREIGN && !emulator_thread(all[i])))
			asked[k++] = all[i];
	}
	atomic_store(&req.risky, risky);
	atomic_store(&req.busy, 0);
	req.start = start;
	req.end = end;
	req.map = map;
	req.cookie = cookie;
	atomic_store(&req.acks, 0);
	atomic_store(&req.hold, true);
	atomic_fetch_add(&req.round, 1);
	n = 0;
	for (int i = 0; i < k && !err; i++) {
		if (syscall(SYS_tgkill, pid, asked[i], fixup_sig) == 0)
			asked[n++] = asked[i];
		else if (errno != ESRCH)
			err = -errno;
	}
	if (!err)
		err = wait_stopped(asked, n);
	if (err) {
		np_threads_resume();
		np_logf(NP_LOG_WARN, "cannot stop every thread to patch 0x%llx: %s",
			(unsigned long long)start,
			err == -EAGAIN ? "a thread does not answer the signal (is it blocked?)"
				       : strerror(-err));
	}
	return err;
}

void np_threads_resume(void)
{
	req.map = NULL;
	atomic_store(&req.hold, false);
	atomic_store(&req.released, atomic_load(&req.round));
}

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
	atomic_store(&req.hold, false);
	/* Ask every running thread at once: on a loaded machine each signal
	 * waits for its thread to be scheduled, so one at a time is slow. */
	struct dirent *e;
	while ((e = readdir(d)) && n < MAX_ASK) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == self || look_at(tid, start, end, false) == LOOK_LEAVE)
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
	if (err == -EAGAIN)
		np_logf(NP_LOG_WARN, "a thread does not answer signal %d (is it blocked?)", fixup_sig);
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

/* Where a thread stopped strictly inside the bytes being replaced goes.
 * In the original code (the jump goes in): to its instruction's block in
 * the new trampoline. Inside a jump of several instructions (riscv
 * auipc+jalr, being re-pointed or removed): where that jump was going,
 * as it would have. */
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

static uint64_t out_of_patch(void *cookie, uint64_t pc)
{
	const struct np_region *r = cookie;
	if (holds_jump(r))
		return pc < r->start + r->jump_len ? r->jumps_to : pc;
	return to_trampoline(cookie, pc);
}

static int write_bp_first(struct np_region *r, const uint8_t *bytes, size_t len, bool move_threads);

#define STOP_TRIES 200
#define STOP_RETRY_NS 1000000L

/* A patch another hart may not fetch whole (np_isa.patch_needs_stop): the
 * other threads wait in a signal handler while it is written, breakpoint
 * first for the threads left in system calls. Nothing between stop and
 * resume may take a lock a stopped thread could hold (malloc's): the map
 * cache and /proc/self/mem are primed by the reads before. */
static int patch_stopped(struct np_region *r, const uint8_t *bytes, size_t len)
{
	struct np_map m;
	int err = np_maps_lookup(r->start, &m);
	/* A thread on its way through a trampoline that jumps back inside the
	 * bytes (one built for an instruction there, since retired) cannot be
	 * moved: it is let go on and the stop tried again a little later.
	 * Not when the original code goes back (it lands on an instruction),
	 * nor when r's jump is only re-pointed (nothing lands inside a jump
	 * in place: it went in under this rule).
	 * (On the batch path the region's jump is already in r->patch: it is
	 * not in the code, so holds_jump says no.) */
	bool restore = len <= sizeof(r->orig) && memcmp(bytes, r->orig, len) == 0;
	bool new_code = !restore && !holds_jump(r);
	for (int tries = 0; !err; tries++) {
		if ((err = np_threads_stop(r->start, r->start + len, out_of_patch, r, new_code)))
			break;
		if (!atomic_load(&req.busy)) {
			err = write_bp_first(r, bytes, len, false);
			np_threads_resume();
			break;
		}
		np_threads_resume();
		if (tries == STOP_TRIES) {
			np_logf(NP_LOG_WARN, "cannot patch 0x%llx: threads keep running through a "
					     "trampoline that jumps back inside its bytes",
				(unsigned long long)r->start);
			err = -EAGAIN;
			break;
		}
		nanosleep(&(struct timespec){0, STOP_RETRY_NS}, NULL);
	}
	return err;
}

int np_patch_region(struct np_region *r, const uint8_t *bytes, size_t len, bool move_threads)
{
	uint8_t trap[16], cur[sizeof(r->patch)];
	size_t tl = np_host_isa->trap_len;

	if (np_host_isa->patch_needs_stop && len <= sizeof(cur) &&
	    np_code_read(r->start, cur, len) == 0 &&
	    np_host_isa->patch_needs_stop(cur, bytes, len, r->start))
		return patch_stopped(r, bytes, len);
	np_host_isa->emit_trap(trap);
	if (len <= tl)
		return patch_word(r, bytes, len, trap);
	return write_bp_first(r, bytes, len, move_threads);
}

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

/* Does a handler run with its sa_mask blocked? The kernel's do;
 * qemu-riscv64 7.2 blocks only the signal itself. Asked once, with the
 * stop signal (not in use yet) and SIGTRAP in its mask. */
static bool sa_mask_honoured;

static void mask_probe(int sig)
{
	(void)sig;
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	sa_mask_honoured = sigismember(&cur, SIGTRAP) == 1;
}

static void probe_sa_mask(void)
{
	struct sigaction sa = {.sa_handler = mask_probe}, old;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTRAP);
	sigset_t unblock, was;
	sigemptyset(&unblock);
	sigaddset(&unblock, fixup_sig);
	if (sigaction(fixup_sig, &sa, &old) == 0) {
		pthread_sigmask(SIG_UNBLOCK, &unblock, &was);
		raise(fixup_sig); /* delivered before raise returns */
		pthread_sigmask(SIG_SETMASK, &was, NULL);
		sigaction(fixup_sig, &old, NULL);
	}
}

void np_patch_block_stop(void)
{
	if (sa_mask_honoured)
		return;
	unsigned long set = 1ul << (fixup_sig - 1); /* the kernel's sigset: one word */
	np_host_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&set, 0, sizeof(set), 0, 0);
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
	probe_sa_mask();
	struct sigaction sa = {.sa_sigaction = fixup_handler,
			       .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
	sigfillset(&sa.sa_mask);
	/* faults of the handler's own fault-safe reads (in_trampoline_path) go
	 * to the guard of uread.c; a blocked one would kill the thread */
	sigdelset(&sa.sa_mask, SIGSEGV);
	sigdelset(&sa.sa_mask, SIGBUS);
	return sigaction(fixup_sig, &sa, NULL) ? -errno : 0;
}

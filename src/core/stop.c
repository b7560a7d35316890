/* SPDX-License-Identifier: MIT */
/*
 * Stopping the other threads of the process, and moving them out of bytes
 * about to be replaced.
 *
 * The patch protocols (region_write.c, word_write.c, batch.c) need, at one
 * step, to know that no thread is strictly inside the bytes they replace,
 * or that no thread runs at all while they write. Three requests serve
 * them, and a fourth serves the census of retired trampolines (reclaim.c):
 *   np_threads_move_out  every thread inside the bytes goes to the address
 *                        a map gives (its instruction's block in the new
 *                        trampoline); the others go on at once;
 *   np_threads_stop      every thread waits in the signal's handler until
 *                        np_threads_resume, moved first like that;
 *   np_threads_stop_clear the same, once none is on its way back into the
 *                        bytes through a retired trampoline;
 *   np_threads_census    every thread looks at its own state.
 *
 * A thread is asked with a signal (NANOPROBE_SIGNAL, by default
 * SIGRTMAX - 3), whose handler looks at its own saved pc, moves it when
 * needed and answers; a thread that blocks the signal makes the request
 * fail with EAGAIN rather than risk it. A thread blocked in a system call
 * is never asked: the handler would make its call fail with EINTR. It is
 * judged from outside instead, from what /proc/self/task shows of it
 * (tasks.c) and what its stack holds (stack_scan.c). Under qemu-user the
 * emulator's own threads are left alone, and the SIGTRAP handler answers
 * for a thread the request interrupted inside it (np_patch_answer_owed).
 */
#include "core/codemem.h"
#include "core/embed.h"
#include "core/nolibc.h"
#include "core/reclaim.h"
#include "core/stack_scan.h"
#include "core/stop.h"
#include "core/tasks.h"
#include "core/thread.h"
#include "core/trap.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static int fixup_sig;

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
	/* answering threads in a signal handler that interrupted them strictly
	 * inside the range (np_stack_interrupted_inside) */
	_Atomic int nested;
	/* the round of a census of retired trampolines (np_threads_census), 0
	 * when none runs: each answer looks at its thread's state */
	_Atomic unsigned census;
} req;

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
	uint64_t (*map)(void *, uint64_t) = req.map; /* move_out clears it when done */
	int saved_errno = *np_errno(); /* np_read_user may set it */
	if (stopping && atomic_load(&req.risky) && np_patch_on_way_back(&regs, req.start, req.end))
		atomic_fetch_add(&req.busy, 1);
	struct np_inside in = {req.start, req.end, map, req.cookie};
	if (np_stack_interrupted_inside(regs.gpr[np_host_isa->sp_reg], &in))
		atomic_fetch_add(&req.nested, 1);
	if (atomic_load(&req.census) == round)
		np_reclaim_look(&regs, true, np_thread_peek());
	*np_errno() = saved_errno;
	if (regs.pc > req.start && regs.pc < req.end && map) {
		regs.pc = map(req.cookie, regs.pc);
		np_host_regs_to_uc(&regs, uc);
	}
	int slot = atomic_fetch_add(&req.acks, 1);
	uint64_t tid = (uint64_t)np_host_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
	if (slot >= 0 && slot < (int)(sizeof(req.acked) / sizeof(req.acked[0])))
		atomic_store(&req.acked[slot], (uint64_t)round << 32 | (uint32_t)tid);
	if (!stopping)
		return;
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

/* What a patch does about a thread blocked in a system call. It is never
 * sent the signal: a handler that runs while a thread waits in nanosleep,
 * epoll_wait, sigtimedwait and others makes the call fail with EINTR,
 * SA_RESTART or not (signal(7)), and the program would see it. It runs no
 * user code now; the patch goes in breakpoint first for the sake of a
 * thread that comes back meanwhile. What the signal's handler would have
 * looked at is looked at from here, through its pc and stack pointer: */
enum verdict {
	LEAVE,  /* nothing of the patch concerns it */
	STUCK,  /* it would come back strictly inside the bytes: it cannot be
		 * moved without interrupting its call; the patch is refused */
	NESTED, /* in a signal handler of its own that interrupted it inside
		 * the bytes (np_stack_interrupted_inside): wait until it left it */
	BUSY,   /* on its way through a trampoline that lands inside
		 * (np_stack_way_back_seen): wait until it is not */
	VFORK,  /* its vfork child runs in our memory: wait until it is gone */
};

static enum verdict judge_blocked(int tid, const struct np_sight *s, const struct np_inside *in,
				  bool risky)
{
	if (np_task_waits_for_vfork(s))
		return VFORK;
	if (np_inside_moves(in, s->pc))
		return STUCK;
	if (np_stack_interrupted_inside(s->sp, in))
		return NESTED;
	if (risky && np_stack_way_back_seen(s->pc, NULL, s->sp, np_thread_in_handler(tid),
					    in->start, in->end))
		return BUSY;
	return LEAVE;
}

/* A thread's look, once its vfork child is gone (up to 100 ms: such a
 * child execs or exits at once, as a rule). */
#define VFORK_TRIES 100
static struct np_sight look_past_vfork(int tid, bool settle)
{
	struct np_sight s = settle ? np_task_settled_look(tid, fixup_sig) : np_task_look(tid, true);
	for (int i = 0; np_task_waits_for_vfork(&s) && i < VFORK_TRIES; i++) {
		nanosleep(&(struct timespec){0, 1000000L}, NULL);
		s = settle ? np_task_settled_look(tid, fixup_sig) : np_task_look(tid, true);
	}
	if (np_task_waits_for_vfork(&s))
		np_logf(NP_LOG_WARN, "thread %d waits for a vfork child, which runs in this "
				     "process's memory without being one of its threads: no patch "
				     "that moves or stops threads can go in meanwhile", tid);
	return s;
}

static void log_stuck(int tid, uint64_t pc)
{
	np_logf(NP_LOG_WARN, "thread %d waits in a system call that returns to 0x%llx, inside "
			     "the bytes a patch replaces: moving it would interrupt the call",
		tid, (unsigned long long)pc);
}

static bool answered(int tid)
{
	int n = atomic_load(&req.acks);
	uint64_t me = (uint64_t)atomic_load(&req.round) << 32 | (uint32_t)tid;
	for (int i = 0; i < n && i < (int)(sizeof(req.acked) / sizeof(req.acked[0])); i++)
		if (atomic_load(&req.acked[i]) == me)
			return true;
	return false;
}

static long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

static bool census_blocked(int tid);

/* A thread asked that has not answered: one that has exited since, or
 * that waits in a system call now (one that blocks the signal, or waits
 * in a handler of the signal's that blocks it: the SIGTRAP handler, on
 * its way into the engine lock that the patch holds), judged as the
 * blocked ones were. 1 out, 0 not yet, -EAGAIN: it cannot be left. */
static int left_since(int tid)
{
	if (atomic_load(&req.census))
		return census_blocked(tid) ? 1 : 0;
	struct np_sight s = np_task_look(tid, true);
	if (s.state == NP_SEEN_GONE)
		return 1;
	if (s.state != NP_SEEN_BLOCKED && s.state != NP_SEEN_GUEST)
		return 0;
	struct np_inside in = {req.start, req.end, req.map, req.cookie};
	bool risky = atomic_load(&req.hold) && atomic_load(&req.risky);
	enum verdict v = s.state == NP_SEEN_BLOCKED ? judge_blocked(tid, &s, &in, risky) : LEAVE;
	if (v == STUCK || v == VFORK)
		return -EAGAIN;
	if (v == BUSY || (s.state == NP_SEEN_GUEST && risky))
		atomic_fetch_add(&req.busy, 1);
	if (v == NESTED)
		atomic_fetch_add(&req.nested, 1);
	return 1;
}

/* Until every asked thread answered or exited. No thread is taken for
 * stopped without its answer (the count of answers is not enough: a late
 * one from an earlier round counts too), or without being seen waiting
 * in a system call since (left_since). A thread that has not answered
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
	static bool out[NP_TASKS_MAX]; /* engine lock held: answered or exited */
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
			int left = !out[i] && !answered(tids[i]) && look ? left_since(tids[i]) : 0;
			if (left < 0)
				return left;
			out[i] = out[i] || left || answered(tids[i]);
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

/* Send the stop signal to each of tids[0..k) (those gone since are
 * dropped) and wait until every one answered or left (wait_stopped). */
static int ask_and_wait(pid_t pid, int *tids, int k)
{
	int n = 0;
	for (int i = 0; i < k; i++) {
		if (syscall(SYS_tgkill, pid, tids[i], fixup_sig) == 0)
			tids[n++] = tids[i];
		else if (errno != ESRCH)
			return -errno;
	}
	return wait_stopped(tids, n);
}

int np_threads_stop(uint64_t start, uint64_t end, uint64_t (*map)(void *, uint64_t), void *cookie,
		    bool new_code)
{
	static int all[NP_TASKS_MAX], asked[NP_TASKS_MAX]; /* engine lock held */
	pid_t pid = getpid();
	int n = np_tasks_list(all, (int)syscall(SYS_gettid)), k = 0, err = 0, busy = 0, nested = 0;
	if (n < 0)
		return n;
	/* Threads blocked in a system call are judged from here, never asked
	 * (judge_blocked); the emulator's own threads are left too. Sorted
	 * out before any thread is stopped: the look uses stdio. */
	bool risky = new_code && np_codemem_lands_inside(start, end);
	struct np_inside in = {start, end, map, cookie};
	for (int i = 0; i < n && !err; i++) {
		struct np_sight s = look_past_vfork(all[i], true);
		enum verdict v = s.state == NP_SEEN_BLOCKED ? judge_blocked(all[i], &s, &in, risky)
							 : LEAVE;
		if (s.state == NP_SEEN_RUNNING ||
		    (s.state == NP_SEEN_FOREIGN && !np_task_emulator_thread(all[i])))
			asked[k++] = all[i];
		else if (v == STUCK)
			log_stuck(all[i], s.pc), err = -EAGAIN;
		else if (v == VFORK)
			err = -EAGAIN;
		/* waiting in the program's system call under qemu-user: left
		 * there too, but its way back cannot be seen (its guest pc and
		 * stack are the emulator's secret): taken for busy */
		busy += v == BUSY || (s.state == NP_SEEN_GUEST && risky);
		nested += v == NESTED;
	}
	if (err)
		return err;
	atomic_store(&req.risky, risky);
	atomic_store(&req.busy, busy);
	atomic_store(&req.nested, nested);
	req.start = start;
	req.end = end;
	req.map = map;
	req.cookie = cookie;
	atomic_store(&req.acks, 0);
	atomic_store(&req.hold, true);
	atomic_fetch_add(&req.round, 1);
	if (!err)
		err = ask_and_wait(pid, asked, k);
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

/* A thread on its way through a trampoline that jumps back strictly
 * inside the bytes, or in a signal handler of its own that interrupted it
 * there, cannot be moved: the threads are let go on and the stop tried
 * again a little later, up to STOP_TRIES times. */
#define STOP_TRIES 200
#define STOP_RETRY_NS 1000000L

int np_threads_stop_clear(uint64_t start, uint64_t end, uint64_t (*map)(void *, uint64_t),
			  void *cookie, bool new_code)
{
	for (int tries = 0;; tries++) {
		int err = np_threads_stop(start, end, map, cookie, new_code);
		if (err)
			return err;
		if (!atomic_load(&req.busy) && !atomic_load(&req.nested))
			return 0;
		np_threads_resume();
		if (tries == STOP_TRIES) {
			np_logf(NP_LOG_WARN, "cannot patch 0x%llx: threads keep running through a "
					     "trampoline that jumps back inside its bytes, or stay "
					     "in a signal handler that interrupted them there",
				(unsigned long long)start);
			return -EAGAIN;
		}
		nanosleep(&(struct timespec){0, STOP_RETRY_NS}, NULL);
	}
}

static int move_out_once(const struct np_inside *in, void (*stuck)(void *cookie, uint64_t pc));

/* A thread waiting in a system call, looked at from here for a census
 * (the signal could end its call early). What it would look at is in
 * memory we share and does not change while it waits; that it waited
 * throughout is proven by the same sight before and after and the same
 * count of switches (waking up and blocking again counts one). Natively
 * its pc and stack pointer are known; a guest thread under qemu-user
 * shows the emulator's, so its whole stack is looked at, if its block
 * learnt where that is. A vfork child runs unseen in our memory, maybe
 * through a trampoline. False: it runs, ask it. */
static bool census_blocked(int tid)
{
	uint64_t before = np_task_switches(tid);
	struct np_sight s = np_task_look(tid, true), again;
	const struct np_thread *t = np_thread_find(tid);
	if (s.state == NP_SEEN_GONE)
		return true;
	if (s.state != NP_SEEN_BLOCKED && s.state != NP_SEEN_GUEST)
		return false;
	if (np_task_waits_for_vfork(&s)) {
		np_reclaim_unsure();
		return true;
	}
	if (s.state == NP_SEEN_BLOCKED) {
		struct np_regs regs = {.pc = s.pc};
		regs.gpr[np_host_isa->sp_reg] = s.sp;
		np_reclaim_look(&regs, false, t);
	} else if (t && atomic_load(&t->sh.home_ok) == 1) {
		np_reclaim_look_stack(atomic_load(&t->sh.home_lo), atomic_load(&t->sh.home_hi), t);
	} else {
		np_reclaim_unsure();
	}
	again = np_task_look(tid, true);
	if (again.state != s.state || again.pc != s.pc || again.sp != s.sp ||
	    before == UINT64_MAX || np_task_switches(tid) != before)
		np_reclaim_unsure();
	return true;
}

/* Every thread looks at its own state for a census of retired
 * trampolines (reclaim.c): the running ones, and this one, in the
 * signal's handler, without being held; the blocked ones are looked at
 * from here. A thread that blocks the signal makes the census unsure
 * rather than wait for it. */
int np_threads_census(void)
{
	static int all[NP_TASKS_MAX], asked[NP_TASKS_MAX + 1]; /* engine lock held */
	pid_t pid = getpid();
	int self = (int)syscall(SYS_gettid), k = 0, err = 0;
	int n = np_tasks_list(all, self);
	sigset_t mine;
	if (n < 0)
		return n;
	if (n == NP_TASKS_MAX || pthread_sigmask(SIG_BLOCK, NULL, &mine) ||
	    sigismember(&mine, fixup_sig) == 1)
		return -EAGAIN;
	for (int i = 0; i < n; i++) {
		struct np_sight s = np_task_settled_look(all[i], fixup_sig);
		if (s.state == NP_SEEN_FOREIGN && np_task_emulator_thread(all[i]))
			continue;
		if (s.state != NP_SEEN_RUNNING && census_blocked(all[i]))
			continue;
		/* in a handler of the engine's (SIGTRAP's blocks it) for a
		 * moment, or for good: asked only once it takes the signal */
		for (int t = 0; np_task_blocks(all[i], fixup_sig); t++) {
			if (t == NP_TASK_SETTLE_TRIES)
				return -EAGAIN;
			nanosleep(&(struct timespec){0, 1000000L}, NULL);
		}
		asked[k++] = all[i];
	}
	asked[k++] = self;
	req.map = NULL;
	atomic_store(&req.acks, 0);
	atomic_store(&req.hold, false);
	unsigned round = atomic_fetch_add(&req.round, 1) + 1;
	atomic_store(&req.census, round);
	if (!err)
		err = ask_and_wait(pid, asked, k);
	atomic_store(&req.census, 0);
	return err;
}

/* A thread in a signal handler of its own that interrupted it inside the
 * range has not left it: asked again a little later, up to this many
 * times, then the patch fails with EAGAIN. */
#define NESTED_TRIES 100
#define NESTED_RETRY_NS 1000000L

int np_threads_move_out(uint64_t start, uint64_t end, uint64_t (*map)(void *, uint64_t),
			void *cookie, void (*stuck)(void *cookie, uint64_t pc))
{
	struct np_inside in = {start, end, map, cookie};
	for (int tries = 0;; tries++) {
		int err = move_out_once(&in, stuck);
		if (err || !atomic_load(&req.nested))
			return err;
		if (tries == NESTED_TRIES) {
			np_logf(NP_LOG_WARN, "cannot patch 0x%llx: a thread stays in a signal handler "
					     "that interrupted it inside the bytes",
				(unsigned long long)start);
			return -EAGAIN;
		}
		nanosleep(&(struct timespec){0, NESTED_RETRY_NS}, NULL);
	}
}

/* One round: the threads that run are asked at once (on a loaded machine
 * each signal waits for its thread to be scheduled, so one at a time is
 * slow); the blocked ones are judged from here (judge_blocked). Under
 * qemu-user a blocked guest thread's pc is unknown, and is not asked
 * either: it waits in the emulator, between two translated blocks. */
static int move_out_once(const struct np_inside *in, void (*stuck)(void *cookie, uint64_t pc))
{
	static int all[NP_TASKS_MAX], tids[NP_TASKS_MAX]; /* engine lock held */
	pid_t pid = getpid();
	int n = np_tasks_list(all, (int)syscall(SYS_gettid)), k = 0, err = 0, nested = 0;
	if (n < 0)
		return n;
	for (int i = 0; i < n && !err; i++) {
		struct np_sight s = look_past_vfork(all[i], false);
		enum verdict v = s.state == NP_SEEN_BLOCKED ? judge_blocked(all[i], &s, in, false)
							 : LEAVE;
		if (s.state == NP_SEEN_RUNNING)
			tids[k++] = all[i];
		else if (v == STUCK && stuck)
			log_stuck(all[i], s.pc), stuck(in->cookie, s.pc); /* that region only */
		else if (v == STUCK)
			log_stuck(all[i], s.pc), err = -EAGAIN;
		else if (v == VFORK)
			err = -EAGAIN;
		nested += v == NESTED;
	}
	if (err)
		return err;
	req.start = in->start;
	req.end = in->end;
	req.map = in->map;
	req.cookie = in->cookie;
	atomic_store(&req.acks, 0);
	atomic_store(&req.nested, nested);
	atomic_store(&req.hold, false);
	/* a round of its own, as a stop's: an answer names its thread and
	 * round, so that one left from a round that timed out (a thread that
	 * blocked the signal keeps one queued per round) is not taken for
	 * another thread's */
	atomic_fetch_add(&req.round, 1);
	if (!err)
		err = ask_and_wait(pid, tids, k);
	req.map = NULL;
	if (err == -EAGAIN)
		np_logf(NP_LOG_WARN, "a thread does not answer signal %d (is it blocked?)", fixup_sig);
	return err;
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

int np_stop_init(void)
{
	fixup_sig = pick_signal();
	probe_sa_mask();
	struct sigaction sa = {.sa_sigaction = fixup_handler,
			       .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK};
	sigfillset(&sa.sa_mask);
	/* faults of the handler's own fault-safe reads (np_patch_on_way_back) go
	 * to the guard of uread.c; a blocked one would kill the thread */
	sigdelset(&sa.sa_mask, SIGSEGV);
	sigdelset(&sa.sa_mask, SIGBUS);
	return sigaction(fixup_sig, &sa, NULL) ? -errno : 0;
}

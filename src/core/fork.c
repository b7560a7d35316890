/* SPDX-License-Identifier: MIT */
/*
 * The engine lock, and what a child process inherits.
 *
 * A forked child is a copy of its parent's memory with one thread in it,
 * the one that called fork. Everything of the engine that names the
 * parent's other threads is wrong there: their thread blocks (a handler
 * they were running keeps the block's in_site set, and a detach would
 * wait for it forever), the engine lock if one of them held it (an attach
 * would wait for it forever), the count of threads in the SIGTRAP
 * handler, the /proc/self/mem descriptor (it writes the parent's code).
 * So fork is bracketed (pthread_atfork): before it, the forking thread
 * takes the engine lock, so the child gets the engine between two
 * operations, never in the middle of one; in the child, the state of the
 * threads that are not there is dropped and the lock released.
 *
 * Taking the lock before fork must never wait for something that waits
 * for the forking thread. It may fork from a probe's handler, or from a
 * signal handler that interrupted a handler: a holder of the lock that
 * waited for that handler to end (a detach does) would wait forever. So
 * no holder waits for a handler: those waits happen after the lock is
 * released (np_engine_unlock runs them, probe.c queues them). A holder
 * waits for threads only to answer its signal (stop.c), and a thread
 * waiting here is blocked in a futex, left alone by that signal
 * (np_threads_move_out). The thread that holds the lock itself may fork
 * (a program's signal handler that interrupted the engine): its work goes
 * on in both processes, and nothing is taken.
 *
 * Not every child passes through pthread_atfork: _Fork, a raw fork or
 * clone system call, and vfork (posix_spawn is a vfork) do not. The pid of
 * the process the engine's memory belongs to is kept in a page the kernel
 * empties in a child (MADV_WIPEONFORK), so every entry to the engine can
 * tell three cases apart. The page holds our pid: ours. It is empty: a
 * child with a copy of the memory that fork's handlers did not prepare,
 * made ready now unless another thread held the lock at the fork (then
 * its operation is half done and nothing can finish it:
 * ENOTRECOVERABLE). It holds another pid: a child that shares its
 * parent's memory (vfork, clone with CLONE_VM), running on its parent's
 * stack until exec or _exit; changing probes from there would change the
 * parent's code under the parent's running threads, which nobody could
 * stop or move: EPERM. Such a child may run probed code: it uses the
 * block of the parent thread that waits in vfork, and gets none if that
 * thread had none (the hit is counted as missed), since a block claimed
 * there would be written into the parent thread's TLS under the child's
 * thread id.
 */
#include "core/code_write.h"
#include "core/engine.h"
#include "core/fork.h"
#include "core/nolibc.h"
#include "core/tasks.h"
#include "core/thread.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* --- the lock ------------------------------------------------------------- */

/* The word holds the holder's id (a number per thread, kept across fork:
 * the forking thread goes on in the child under another tid), and a bit
 * set when a thread may sleep on it. Who holds it is known at once, with
 * no window between taking it and saying so: a signal handler that forks
 * there must not wait for its own thread. */
#define LOCK_WAITERS 0x80000000u
static _Atomic uint32_t lock_word;
static _Atomic uint32_t next_id = 1;
static __thread uint32_t lock_id __attribute__((tls_model("initial-exec")));

static uint32_t self_id(void)
{
	if (!lock_id)
		lock_id = (atomic_fetch_add(&next_id, 1) % (LOCK_WAITERS - 1)) + 1;
	return lock_id;
}

static void lock_take(void)
{
	uint32_t me = self_id(), cur = 0;
	if (atomic_compare_exchange_strong(&lock_word, &cur, me))
		return;
	for (;;) {
		cur = atomic_load(&lock_word);
		if (!cur) {
			/* a sleeper may still be there: keep the bit */
			if (atomic_compare_exchange_strong(&lock_word, &cur, me | LOCK_WAITERS))
				return;
			continue;
		}
		if (!(cur & LOCK_WAITERS) &&
		    !atomic_compare_exchange_strong(&lock_word, &cur, cur | LOCK_WAITERS))
			continue;
		np_futex_wait((uint32_t *)&lock_word, cur | LOCK_WAITERS);
	}
}

static void lock_give(void)
{
	if (atomic_exchange(&lock_word, 0) & LOCK_WAITERS)
		np_futex_wake((uint32_t *)&lock_word);
}

static bool lock_mine(void)
{
	return (atomic_load(&lock_word) & ~LOCK_WAITERS) == self_id();
}

/* --- whose memory this is --------------------------------------------------- */

/* The page the kernel empties in a child (MADV_WIPEONFORK), or NULL:
 * whose memory this is, and a word lent to the agent (core/fork.h). */
static struct wiped {
	_Atomic pid_t owner;
	uint32_t lent;
} *wiped;
static _Atomic pid_t owner_pid; /* without the page */
/* Without a page that works: is a child with another pid a copy? Under
 * qemu-user, which ignores MADV_WIPEONFORK and runs vfork as a fork, it
 * is; on a kernel without MADV_WIPEONFORK (before 4.14) it may share our
 * memory, and is taken for one that does. */
static bool other_pid_is_copy;
static bool unrecoverable;        /* forked while another thread held the lock */
#define SETTLING ((pid_t)-1)

static pid_t getpid_raw(void)
{
	return (pid_t)np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

static _Atomic pid_t *owner(void)
{
	return wiped ? &wiped->owner : &owner_pid;
}

uint32_t *np_fork_wiped_word(void)
{
	return wiped ? &wiped->lent : NULL;
}

/* A child whose fork handlers did not run, with a copy of the memory? */
static bool unprepared_copy(pid_t o)
{
	return o == 0 || (other_pid_is_copy && o != SETTLING && o != getpid_raw());
}

bool np_fork_shares_memory(void)
{
	pid_t o = atomic_load(owner());
	return o != 0 && o != SETTLING && o != getpid_raw() && !other_pid_is_copy;
}

/* In the child, before anything else of the engine runs there: the state
 * that names the parent's other threads. The forking thread's own state
 * (a handler it is running, a SIGTRAP handler it is in, an operation of
 * its own under the lock) goes on. */
static void settle_child(void)
{
	np_thread_after_fork();
	np_trap_after_fork();
	np_sigchain_after_fork();
	np_code_after_fork();
	np_watch_after_fork();
}

static __thread bool took_for_fork __attribute__((tls_model("initial-exec")));

/* A child that no fork handler prepared (the page is empty): made ready by
 * the first thread to get here, unless a thread that is not in this
 * process held the lock. */
static int adopt(void)
{
	pid_t empty = atomic_load(owner());
	if (!unprepared_copy(empty) || !atomic_compare_exchange_strong(owner(), &empty, SETTLING)) {
		while (atomic_load(owner()) == SETTLING)
			sched_yield();
		return unrecoverable ? -ENOTRECOVERABLE : 0;
	}
	uint32_t held = atomic_load(&lock_word) & ~LOCK_WAITERS;
	unrecoverable = held && held != self_id();
	if (!unrecoverable)
		settle_child();
	atomic_store(owner(), getpid_raw());
	return unrecoverable ? -ENOTRECOVERABLE : 0;
}

/* 0 when this process may change probes; -EPERM in a child that shares
 * its parent's memory, -ENOTRECOVERABLE in a child forked while another
 * thread was changing probes. */
static int fork_state(void)
{
	pid_t o = atomic_load(owner());
	if (o && o != SETTLING && o == getpid_raw())
		return unrecoverable ? -ENOTRECOVERABLE : 0;
	return o == SETTLING || unprepared_copy(o) ? adopt() : -EPERM;
}

static int fork_check(void)
{
	int err = fork_state();
	if (err == -EPERM)
		np_logf(NP_LOG_ERROR, "this process shares its parent's memory (a vfork child): "
				      "probes cannot be changed from it");
	else if (err)
		np_logf(NP_LOG_ERROR, "this process was forked while another thread was "
				      "changing probes: they cannot be changed in it");
	return err;
}

int np_engine_lock(void)
{
	int err = fork_check();
	if (!err)
		lock_take();
	return err;
}

/* --- waits for handlers, after the lock ------------------------------------------ */

struct quiesce {
	const struct np_site *site;
	np_quiesce_fn *done;
	void *a, *b;
	bool locked;
};
static struct quiesce *queued; /* engine lock held */
static size_t nqueued, capqueued;

void np_quiesce_later(const struct np_site *site, np_quiesce_fn *done, void *a, void *b,
		      bool locked)
{
	if (nqueued == capqueued) {
		size_t cap = capqueued ? capqueued * 2 : 16;
		struct quiesce *v = realloc(queued, cap * sizeof(*v));
		if (!v) { /* out of memory: wait here, as a last resort */
			np_barrier_threads();
			np_thread_wait_site(site);
			if (done)
				done(a, b);
			return;
		}
		queued = v;
		capqueued = cap;
	}
	queued[nqueued++] = (struct quiesce){site, done, a, b, locked};
}

/* The waits queued by the operation that held the lock: one membarrier
 * for all (the hit path stores in_site before it reads a handler list or
 * a version: the asymmetric Dekker pairing of docs/design.md, "Detach"),
 * then each site's handlers waited out, then what was to be done after. */
static void quiesce(struct quiesce *v, size_t n)
{
	bool relock = false;
	np_barrier_threads();
	for (size_t i = 0; i < n; i++) {
		np_thread_wait_site(v[i].site);
		if (v[i].done && !v[i].locked)
			v[i].done(v[i].a, v[i].b);
		relock |= v[i].done && v[i].locked;
	}
	if (relock && np_engine_lock() == 0) {
		for (size_t i = 0; i < n; i++)
			if (v[i].done && v[i].locked)
				v[i].done(v[i].a, v[i].b);
		np_engine_unlock();
	}
}

void np_engine_unlock(void)
{
	if (unprepared_copy(atomic_load(owner())))
		adopt(); /* a child forked inside this operation, by _Fork */
	struct quiesce *v = queued;
	size_t n = nqueued;
	queued = NULL;
	nqueued = capqueued = 0;
	lock_give();
	if (n)
		quiesce(v, n);
	free(v);
}

/* --- fork ------------------------------------------------------------------- */

static void before_fork(void)
{
	took_for_fork = false;
	if (lock_mine() || fork_state())
		return; /* ours: the work goes on in both; or not ours to take */
	lock_take();
	took_for_fork = true;
}

static void after_fork_parent(void)
{
	if (took_for_fork) {
		took_for_fork = false;
		lock_give(); /* nothing was queued: no operation ran */
	}
}

static void after_fork_child(void)
{
	atomic_store(owner(), getpid_raw());
	settle_child();
	if (took_for_fork) {
		took_for_fork = false;
		lock_give();
	}
}

/* Does the kernel empty p in a child? Its flags in /proc/self/smaps say
 * "wf" (qemu-user accepts the madvise and does nothing). Once. */
static bool wiped_on_fork(const void *p)
{
	char line[512], start[32];
	bool in = false, wf = false;
	FILE *f = fopen("/proc/self/smaps", "re");
	snprintf(start, sizeof(start), "%lx-", (unsigned long)(uintptr_t)p);
	while (f && !wf && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmFlags:", 8))
			wf = in && strstr(line, " wf") != NULL;
		else if (strchr(line, '-') && line[0] != ' ' && strchr(line, ' ') > strchr(line, '-'))
			in = !strncmp(line, start, strlen(start));
	}
	if (f)
		fclose(f);
	return wf;
}

int np_fork_init(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	/* not even tried under an emulator: a page mapped there and let go
	 * moves where the program's later mappings go */
	void *p = np_emulated() ? MAP_FAILED
				: mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED && madvise(p, (size_t)pg, MADV_WIPEONFORK) == 0 && wiped_on_fork(p))
		wiped = p;
	else if (p != MAP_FAILED)
		munmap(p, (size_t)pg);
	other_pid_is_copy = !wiped && np_emulated();
	atomic_store(owner(), getpid_raw());
	int err = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	return -err;
}

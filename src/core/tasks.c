/* SPDX-License-Identifier: MIT */
/*
 * The threads of this process as /proc/self/task shows them from outside.
 *
 * Stopping threads (stop.c) must know, before it sends any signal, which
 * threads run (those are asked), which wait in a system call (those are
 * never signalled: the call would fail with EINTR) and where they would
 * come back to, which wait for a vfork child that runs unseen in our
 * memory, and, under qemu-user, which are the emulator's own. Each of
 * those facts is one file of /proc/self/task/TID, read here with open and
 * read rather than stdio: a look may run while threads that could hold
 * malloc's lock are held in the stop's handler. Nothing here sends a
 * signal or knows what a patch is.
 */
#include "core/tasks.h"
#include "core/maps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nanoprobe/nanoprobe.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIGBIT(s) (1ull << ((s) - 1))

static uint64_t guest_syscall_pc(void);

/* On Linux a blocked thread's user pc is the program's (libc, the vDSO).
 * Under qemu-user it is the emulator's own (NP_SEEN_FOREIGN, only looked for
 * when 'foreign' is asked): the thread is either a guest thread waiting
 * in the emulator, whose guest pc is unknown (it may sit between two
 * translated blocks, anywhere, even inside the range), or one of the
 * emulator's own threads; or a guest thread waiting in a system call of
 * the program's (NP_SEEN_GUEST: its pc is qemu's one way into the host's
 * system calls, guest_syscall_pc). */
struct np_sight np_task_look(int tid, bool foreign)
{
	char path[64], buf[256];
	struct np_sight s = {.state = NP_SEEN_GONE, .nr = -1};
	/* open and read, not stdio: this runs while threads that may hold
	 * malloc's lock are held in the stop's handler (wait_stopped) */
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return s;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[len > 0 ? len : 0] = 0;
	char *line = len > 0 ? buf : NULL;
	uint64_t v[9];
	int n = 0;
	for (char *at = line, *next; at && n < 9; at = next) {
		v[n] = strtoull(at, &next, n ? 16 : 10);
		if (next == at)
			break;
		n++;
	}
	s.state = NP_SEEN_RUNNING; /* and when the line says nothing we know */
	if (!line || strncmp(line, "running", 7) == 0 || n < 3 || !v[n - 1])
		return s;
	s.state = NP_SEEN_BLOCKED;
	s.nr = (long)v[0];
	for (int i = 1; i < n - 2 && i <= 6; i++)
		s.arg[i - 1] = v[i];
	s.sp = v[n - 2];
	s.pc = v[n - 1];
	/* The cached map, not read again for a pc it does not know (each
	 * emulator pc did, about a millisecond under qemu-user, at every
	 * stop): a module mapped since is taken for the emulator's, and
	 * its thread is asked, which is always safe. */
	struct np_map m;
	if (foreign && (np_maps_lookup_cached(s.pc, &m) || !m.x))
		s.state = s.pc == guest_syscall_pc() ? NP_SEEN_GUEST : NP_SEEN_FOREIGN;
	return s;
}

/* qemu-user runs every system call of the program through one host
 * instruction (its safe_syscall), the pc /proc shows for a guest thread
 * blocked in one and for this thread while it reads its own syscall file.
 * Learnt once; 0 natively, where that pc is the program's own (libc). */
bool np_emulated(void)
{
	return guest_syscall_pc() != 0;
}

static uint64_t guest_syscall_pc(void)
{
	static uint64_t pc;
	static bool known;
	if (!known) {
		known = true; /* before the look, which asks again */
		struct np_sight self = np_task_look((int)syscall(SYS_gettid), true);
		pc = self.state == NP_SEEN_FOREIGN ? self.pc : 0;
	}
	return pc;
}

/* Is the thread waiting for a vfork child (a vfork, or a clone or clone3
 * with CLONE_VFORK: posix_spawn)? That child runs in our memory, on our
 * code, as one more thread that /proc/self/task does not list and no
 * signal of ours may reach (posix_spawn's child has reset every handler:
 * the signal would kill it, or the program it execs). A patch that may
 * have to move or stop threads waits until it has exec'ed or exited. */
bool np_task_waits_for_vfork(const struct np_sight *s)
{
	if (s->state != NP_SEEN_BLOCKED)
		return false;
	/* Not an ISA test: arm64 and riscv64 have no vfork system call
	 * (their libc makes one with clone), and a number the kernel's
	 * headers do not define cannot be named, hook or not. */
#ifdef SYS_vfork
	if (s->nr == SYS_vfork)
		return true;
#endif
	if (s->nr == SYS_clone) /* flags first, on every ISA we run on */
		return s->arg[0] & CLONE_VFORK;
#ifdef SYS_clone3
	uint64_t flags; /* struct clone_args, in this process's memory */
	if (s->nr == SYS_clone3)
		return np_read_user(&flags, s->arg[0], sizeof(flags)) == 0 && (flags & CLONE_VFORK);
#endif
	return false;
}

/* A thread's blocked-signal mask (SigBlk), 0 when it cannot be read.
 * Raw reads: no allocation. */
static uint64_t blocked_mask(int tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *at = strstr(buf, "\nSigBlk:");
	return at ? strtoull(at + 8, NULL, 16) : 0;
}

bool np_task_blocks(int tid, int sig)
{
	return blocked_mask(tid) & SIGBIT(sig);
}

/* qemu-user re-creates its RCU thread in a forked child: for a moment it
 * runs, every signal blocked, before it blocks in the emulator for good
 * with the emulator's mask. Asked then, it would never answer: a running
 * thread that blocks the signal (sig) is looked at again for up to
 * NP_TASK_SETTLE_TRIES ms. */
struct np_sight np_task_settled_look(int tid, int sig)
{
	struct np_sight s = np_task_look(tid, true);
	for (int i = 0;
	     s.state == NP_SEEN_RUNNING && i < NP_TASK_SETTLE_TRIES && np_task_blocks(tid, sig);
	     i++) {
		nanosleep(&(struct timespec){0, 1000000L}, NULL);
		s = np_task_look(tid, true);
	}
	return s;
}

/* Is tid one of qemu-user's own threads (its RCU thread)? qemu makes them
 * with every host signal blocked but the synchronous SIGSEGV, SIGFPE and
 * SIGILL, for good: they run no guest code and never answer. A guest
 * thread never has that mask: qemu gives it the guest's own mask less
 * SIGSEGV and SIGBUS, or, while it delivers a signal, every signal. */
bool np_task_emulator_thread(int tid)
{
	uint64_t blk = blocked_mask(tid);
	uint64_t on = SIGBIT(SIGBUS) | SIGBIT(SIGINT) | SIGBIT(SIGTERM);
	uint64_t off = SIGBIT(SIGILL) | SIGBIT(SIGFPE);
	return (blk & on) == on && !(blk & off);
}

/* Every other thread of the process (up to NP_TASKS_MAX): the directory is read
 * to the end before any thread is asked, since a thread stopped inside
 * malloc would make closedir's free() wait for it forever. */
int np_tasks_list(int *tids, int self)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	if (!d)
		return -errno;
	for (struct dirent *e; (e = readdir(d)) && n < NP_TASKS_MAX;) {
		int tid = atoi(e->d_name);
		if (tid > 0 && tid != self)
			tids[n++] = tid;
	}
	closedir(d);
	return n;
}

/* How often the thread was switched out, voluntarily or not (UINT64_MAX
 * when it cannot be read). Raw reads: no allocation. */
uint64_t np_task_switches(int tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = 0;
	const char *v = strstr(buf, "\nvoluntary_ctxt_switches:");
	const char *nv = strstr(buf, "\nnonvoluntary_ctxt_switches:");
	if (!v || !nv)
		return UINT64_MAX;
	return strtoull(v + 25, NULL, 10) + strtoull(nv + 28, NULL, 10);
}

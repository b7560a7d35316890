/* SPDX-License-Identifier: MIT */
/*
 * The engine's signals in the threads of an injected process that block
 * them, unblocked for the length of a session.
 *
 * A breakpoint is fatal to a thread that blocks SIGTRAP: the kernel forces
 * a synchronous signal on, and when the thread blocks it, first resets the
 * handler to SIG_DFL for the whole process. A TRAP probe, or the breakpoint
 * a jump goes in behind (src/core/region_write.c), then kills the process the
 * moment such a thread meets it; SIGSEGV and SIGBUS alike, for the
 * handlers' fault-safe reads. Programs do block them: jemalloc's background
 * threads block every signal for life (redis-server died of a SIGTRAP in
 * one, waking in pthread_cond_timedwait under `count -p PID 'c:*'`), and
 * servers block all signals in their workers to take them with signalfd.
 * A preloaded agent interposes the program's mask calls
 * (src/agent/signals.c); an injected one comes too late for the threads
 * that exist.
 *
 * So before a -p session the command, which may ptrace the process,
 * unblocks those signals, and the engine's stop signal, in each thread
 * that blocks one (PTRACE_SETSIGMASK,
 * the thread stopped for a moment), and after the session blocks them
 * again in each thread whose mask is still the one it left (or one such
 * a thread passed on to a thread it created meanwhile). A thread
 * stopped in a system call goes back into it: the kernel restarts the call
 * after a ptrace stop, as for a debugger's attach. A signal that arrives
 * while the thread is stopped is delivered at the detach.
 *
 * Not covered: a thread the program creates during the session with these
 * signals blocked, and a mask the program sets again meanwhile; a
 * command killed during the session leaves them unblocked (the safe way;
 * a later session does not know what they were).
 */
#include "masks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STOP_TIMEOUT_MS 2000
#define PT_ARG(x) ((void *)(uintptr_t)(x))

static uint64_t bit(int sig)
{
	return 1ull << (sig - 1);
}

/* SIGTRAP, SIGSEGV, SIGBUS, and the signal the engine stops threads with
 * (src/core/stop.c: SIGRTMAX - 3, unless NANOPROBE_SIGNAL said another
 * in the program's environment): a running thread that blocks it cannot
 * answer, and every other thread waited, stopped, for 2 s. */
uint64_t np_masks_engine(void)
{
	return bit(SIGTRAP) | bit(SIGSEGV) | bit(SIGBUS) | bit(np_masks_engine_signal());
}

int np_masks_engine_signal(void)
{
	return SIGRTMAX - 3;
}

/* SigBlk of a thread from /proc, 0 if it cannot be read (gone). */
static uint64_t blocked(pid_t pid, pid_t tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
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

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The thread's next stop: the signal it stopped with, 0 for our interrupt,
 * or -1 (gone, or no stop in time: it stays ours until we exit, and goes on
 * then untouched). */
static int await_stop(pid_t tid)
{
	int64_t deadline = now_ms() + STOP_TIMEOUT_MS;
	int st;
	for (;;) {
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);
		if (r == tid && WIFSTOPPED(st))
			return st >> 16 == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
		if ((r == tid || r < 0) && errno != EINTR)
			return -1;
		if (now_ms() >= deadline)
			return -1;
		nanosleep(&(struct timespec){0, 200 * 1000}, NULL);
	}
}

static int get_mask(pid_t tid, uint64_t *mask)
{
	return ptrace(PTRACE_GETSIGMASK, tid, PT_ARG(sizeof(*mask)), mask) ? -errno : 0;
}

static int set_mask(pid_t tid, uint64_t mask)
{
	return ptrace(PTRACE_SETSIGMASK, tid, PT_ARG(sizeof(mask)), &mask) ? -errno : 0;
}

/* fn(tid, c) with the thread stopped for it. */
static int while_stopped(pid_t tid, int (*fn)(pid_t, struct np_mask_change *),
			 struct np_mask_change *c)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -errno;
	int sig = ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) ? -1 : await_stop(tid);
	if (sig < 0)
		return -ESRCH;
	int err = fn(tid, c);
	ptrace(PTRACE_DETACH, tid, NULL, PT_ARG(sig)); /* a signal that came: delivered */
	return err;
}

/* The mask read while the thread is stopped decides, not /proc's before. */
static int unblock(pid_t tid, struct np_mask_change *c)
{
	int err = get_mask(tid, &c->was);
	if (err || !(c->was & np_masks_engine()))
		return err ? err : -ENOENT;
	c->set = c->was & ~np_masks_engine();
	return set_mask(tid, c->set);
}

static int block_again(pid_t tid, struct np_mask_change *c)
{
	uint64_t now;
	int err = get_mask(tid, &now);
	if (err || now != c->set)
		return err ? err : -ESTALE; /* the program set its own since */
	return set_mask(tid, c->was);
}

static int remember(struct np_masks *m, const struct np_mask_change *c)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct np_mask_change *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v, m->cap = cap;
	}
	m->v[m->n++] = *c;
	return 0;
}

int np_masks_unblock(pid_t pid, struct np_masks *m)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	int changed = 0, err = 0;
	m->pid = pid;
	if (!d)
		return -errno;
	for (struct dirent *e; !err && (e = readdir(d));) {
		struct np_mask_change c = {(pid_t)atoi(e->d_name), 0, 0};
		if (c.tid <= 0 || !(blocked(pid, c.tid) & np_masks_engine()))
			continue; /* the common case: no stop at all */
		if (while_stopped(c.tid, unblock, &c) == 0 && !(err = remember(m, &c)))
			changed++;
	}
	closedir(d);
	return err ? err : changed;
}

/* The change whose mask a thread has now, if any: one we made, or one a
 * thread we changed passed on to a thread it created meanwhile (jemalloc
 * makes its background threads from one of them, with its mask). */
static struct np_mask_change *ours(const struct np_masks *m, uint64_t now)
{
	for (size_t i = 0; now && i < m->n; i++)
		if (m->v[i].set == now)
			return &m->v[i];
	return NULL;
}

void np_masks_restore(struct np_masks *m)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)m->pid);
	DIR *d = m->n ? opendir(path) : NULL;
	for (struct dirent *e; d && (e = readdir(d));) {
		pid_t tid = (pid_t)atoi(e->d_name);
		struct np_mask_change *c = tid > 0 ? ours(m, blocked(m->pid, tid)) : NULL;
		if (c) {
			struct np_mask_change mine = {tid, c->was, c->set};
			while_stopped(tid, block_again, &mine);
		}
	}
	if (d)
		closedir(d);
	free(m->v);
	*m = (struct np_masks){m->pid, 0, 0, NULL};
}

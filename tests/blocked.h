/* SPDX-License-Identifier: MIT */
/*
 * Threads blocked in system calls, each of which must come back exactly
 * as it would have had nobody touched the process (docs/reliability.md,
 * "Signals that interrupt a sleep"): a handler that runs while a thread
 * waits in nanosleep, epoll_wait, sigtimedwait, poll, select or
 * sigsuspend makes the call fail with EINTR, SA_RESTART or not, and a
 * ptrace stop makes nanosleep write its remaining time and epoll_wait and
 * sigtimedwait fail. Used by tests/e2e/quiet.c (the engine, through the
 * API) and tests/cli/progs/sleepers.c (nanoprobe -p and -- CMD).
 *
 * Each kind blocks either until its timeout ('timed', checked for the
 * timeout's result: 0, ETIMEDOUT, EAGAIN; nanosleep's remaining-time
 * buffer untouched) or until blocked_release() (checked for the one event
 * the release gives). Nothing measures time.
 */
#ifndef NP_TESTS_BLOCKED_H
#define NP_TESTS_BLOCKED_H

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct blocked {
	const char *name;
	bool timed;
	long (*call)(struct blocked *b);
	int secs;
	bool started;
	_Atomic pid_t tid;
	pthread_t thread;
	long r;
	int err;
	int fd[2];          /* a pipe, or an eventfd in fd[1] */
	int ep;             /* epoll instance */
	uint32_t word;      /* futex */
	struct timespec rem;
	struct timeval tv;
	char byte;
	struct epoll_event ev;
	struct pollfd pfd;
	fd_set set;
};

static const struct timespec blocked_sentinel = {7, 777};
static _Atomic int blocked_usr1_handled;

static void blocked_on_usr1(int sig)
{
	(void)sig;
	blocked_usr1_handled++;
}

static inline long b_nanosleep(struct blocked *b)
{
	struct timespec q = {b->secs, 0};
	return nanosleep(&q, &b->rem);
}

static inline long b_clock_nanosleep(struct blocked *b)
{
	struct timespec q = {b->secs, 0};
	int e = clock_nanosleep(CLOCK_MONOTONIC, 0, &q, &b->rem);
	errno = e;
	return e ? -1 : 0;
}

static inline long b_epoll_timed(struct blocked *b)
{
	return epoll_wait(b->ep, &b->ev, 1, b->secs * 1000);
}

static inline long b_epoll(struct blocked *b)
{
	return epoll_wait(b->ep, &b->ev, 1, -1);
}

static inline long b_poll_timed(struct blocked *b)
{
	struct pollfd p = {b->fd[0], POLLIN, 0};
	long r = poll(&p, 1, b->secs * 1000);
	b->pfd = p;
	return r;
}

static inline long b_poll(struct blocked *b)
{
	struct pollfd p = {b->fd[0], POLLIN, 0};
	long r = poll(&p, 1, -1);
	b->pfd = p;
	return r;
}

static inline long b_select_timed(struct blocked *b)
{
	b->tv = (struct timeval){b->secs, 0};
	return select(0, NULL, NULL, NULL, &b->tv);
}

static inline long b_select(struct blocked *b)
{
	FD_ZERO(&b->set);
	FD_SET(b->fd[0], &b->set);
	return select(b->fd[0] + 1, &b->set, NULL, NULL, NULL);
}

static inline long b_futex_timed(struct blocked *b)
{
	struct timespec ts = {b->secs, 0};
	return syscall(SYS_futex, &b->word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

static inline long b_futex(struct blocked *b)
{
	return syscall(SYS_futex, &b->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static inline long b_sigtimedwait(struct blocked *b)
{
	sigset_t s;
	struct timespec ts = {b->secs, 0};
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	return sigtimedwait(&s, NULL, &ts);
}

static inline long b_sigwaitinfo(struct blocked *b)
{
	sigset_t s;
	(void)b;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	return sigwaitinfo(&s, NULL);
}

static inline long b_read(struct blocked *b)
{
	return read(b->fd[0], &b->byte, 1);
}

static inline long b_sigsuspend(struct blocked *b)
{
	sigset_t s;
	(void)b;
	pthread_sigmask(SIG_BLOCK, NULL, &s);
	sigdelset(&s, SIGUSR1);
	return sigsuspend(&s);
}

#define BLOCKED_KINDS 14
static struct blocked blocked_all[BLOCKED_KINDS] = {
	{.name = "nanosleep", .timed = true, .call = b_nanosleep},
	{.name = "clock_nanosleep", .timed = true, .call = b_clock_nanosleep},
	{.name = "epoll_wait-timeout", .timed = true, .call = b_epoll_timed},
	{.name = "epoll_wait", .timed = false, .call = b_epoll},
	{.name = "poll-timeout", .timed = true, .call = b_poll_timed},
	{.name = "poll", .timed = false, .call = b_poll},
	{.name = "select-timeout", .timed = true, .call = b_select_timed},
	{.name = "select", .timed = false, .call = b_select},
	{.name = "futex-timeout", .timed = true, .call = b_futex_timed},
	{.name = "futex", .timed = false, .call = b_futex},
	{.name = "sigtimedwait", .timed = true, .call = b_sigtimedwait},
	{.name = "sigwaitinfo", .timed = false, .call = b_sigwaitinfo},
	{.name = "read", .timed = false, .call = b_read},
	{.name = "sigsuspend", .timed = false, .call = b_sigsuspend},
};

static inline struct blocked *blocked_find(const char *name)
{
	for (int i = 0; i < BLOCKED_KINDS; i++)
		if (!strcmp(blocked_all[i].name, name))
			return &blocked_all[i];
	return NULL;
}

/* Before any thread exists: SIGUSR2 blocked everywhere (it is waited
 * for), SIGUSR1 too but in sigsuspend, which its handler interrupts. */
static inline int blocked_prepare(int secs)
{
	struct sigaction sa = {.sa_handler = blocked_on_usr1, .sa_flags = SA_RESTART};
	sigset_t s;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	for (int i = 0; i < BLOCKED_KINDS; i++) {
		struct blocked *b = &blocked_all[i];
		b->secs = secs;
		b->rem = blocked_sentinel;
		b->ep = epoll_create1(EPOLL_CLOEXEC);
		if (b->ep < 0 || pipe2(b->fd, O_CLOEXEC))
			return -1;
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0xfeedull + (uint64_t)i};
		if (!b->timed && epoll_ctl(b->ep, EPOLL_CTL_ADD, b->fd[0], &ev))
			return -1;
	}
	return 0;
}

static inline void blocked_run(struct blocked *b)
{
	b->started = true;
	b->tid = (pid_t)syscall(SYS_gettid);
	errno = 0;
	b->r = b->call(b);
	b->err = errno;
}

static inline void *blocked_thread(void *arg)
{
	blocked_run(arg);
	return NULL;
}

/* Every kind but 'except' (the caller's own), each on a thread. */
static inline int blocked_start(const struct blocked *except)
{
	for (int i = 0; i < BLOCKED_KINDS; i++)
		if (&blocked_all[i] != except &&
		    (blocked_all[i].started = true) &&
		    pthread_create(&blocked_all[i].thread, NULL, blocked_thread, &blocked_all[i]))
			return -1;
	return 0;
}

/* Is thread tid in a system call, asleep? */
static inline bool blocked_in_syscall(pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char *got = fgets(line, sizeof line, f);
	fclose(f);
	return got && line[0] != 'r' && line[0] != '-';
}

/* Up to 30 s for every kind started on a thread (not 'except') to block. */
static inline int blocked_wait(const struct blocked *except)
{
	for (int n = 0; n < 30000; n++) {
		int ready = 0;
		for (int i = 0; i < BLOCKED_KINDS; i++)
			ready += &blocked_all[i] == except || !blocked_all[i].started ||
				 (blocked_all[i].tid && blocked_in_syscall(blocked_all[i].tid));
		if (ready == BLOCKED_KINDS)
			return 0;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return -1;
}

/* The one event each kind without a timeout waits for. */
static inline void blocked_release(void)
{
	for (int i = 0; i < BLOCKED_KINDS; i++) {
		struct blocked *b = &blocked_all[i];
		if (b->timed || !b->started)
			continue;
		if (b->call == b_futex) {
			__atomic_store_n(&b->word, 1, __ATOMIC_SEQ_CST);
			syscall(SYS_futex, &b->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		} else if (b->call == b_sigwaitinfo) {
			syscall(SYS_tgkill, getpid(), b->tid, SIGUSR2);
		} else if (b->call == b_sigsuspend) {
			syscall(SYS_tgkill, getpid(), b->tid, SIGUSR1);
		} else if (write(b->fd[1], "x", 1) != 1) {
			b->err = -1;
		}
	}
}

/* Did the call come back as it would have? NULL, or what differs. */
static inline const char *blocked_wrong(const struct blocked *b, char *why, size_t cap)
{
	long want = 0;
	int want_err = 0;
	if (b->call == b_epoll || b->call == b_poll || b->call == b_select || b->call == b_read)
		want = 1;
	else if (b->call == b_futex_timed)
		want = -1, want_err = ETIMEDOUT;
	else if (b->call == b_sigtimedwait)
		want = -1, want_err = EAGAIN;
	else if (b->call == b_sigwaitinfo)
		want = SIGUSR2;
	else if (b->call == b_sigsuspend)
		want = -1, want_err = EINTR;
	if (b->r != want || (want < 0 && b->err != want_err)) {
		snprintf(why, cap, "returned %ld (%s), not %ld (%s)", b->r,
			 b->r < 0 ? strerror(b->err) : "-", want, want < 0 ? strerror(want_err) : "-");
		return why;
	}
	if ((b->call == b_nanosleep || b->call == b_clock_nanosleep) &&
	    (b->rem.tv_sec != blocked_sentinel.tv_sec || b->rem.tv_nsec != blocked_sentinel.tv_nsec))
		snprintf(why, cap, "wrote %ld.%09ld into its remaining-time buffer",
			 (long)b->rem.tv_sec, b->rem.tv_nsec);
	else if (b->call == b_select_timed && (b->tv.tv_sec || b->tv.tv_usec))
		snprintf(why, cap, "left %ld.%06ld in its timeout", (long)b->tv.tv_sec,
			 (long)b->tv.tv_usec);
	else if (b->call == b_epoll && b->ev.data.u64 != 0xfeedull + (uint64_t)(b - blocked_all))
		snprintf(why, cap, "returned the wrong event");
	else if ((b->call == b_poll && !(b->pfd.revents & POLLIN)) ||
		 (b->call == b_select && !FD_ISSET(b->fd[0], &b->set)) ||
		 (b->call == b_read && b->byte != 'x'))
		snprintf(why, cap, "returned without its data");
	else if (b->call == b_sigsuspend && blocked_usr1_handled != 1)
		snprintf(why, cap, "its handler ran %d times", (int)blocked_usr1_handled);
	else
		return NULL;
	return why;
}

/* Join the threads and report each kind on out ("ok KIND" or "BAD KIND:
 * why"): the number that came back wrong. */
static inline int blocked_report(const struct blocked *except, FILE *out)
{
	int bad = 0;
	char why[160];
	for (int i = 0; i < BLOCKED_KINDS; i++) {
		struct blocked *b = &blocked_all[i];
		if (!b->started)
			continue;
		if (b != except)
			pthread_join(b->thread, NULL);
		const char *w = blocked_wrong(b, why, sizeof why);
		fprintf(out, w ? "BAD %s: %s\n" : "ok %s\n", b->name, w ? w : "");
		bad += w != NULL;
	}
	return bad;
}

#endif /* NP_TESTS_BLOCKED_H */

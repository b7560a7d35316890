/* SPDX-License-Identifier: MIT */
/*
 * The bounds of each thread's own stack, for the shadow stack's stack-order
 * proof (shadow.c): on that stack, and there only, a frame whose slot lies
 * below where the thread is now is dead.
 *
 * Which memory is a thread's own stack is learnt on the control path from
 * /proc/self/maps: the main thread's is [stack]; a thread libc started
 * keeps its static TLS at the top of the mapping that holds its stack,
 * right above the stack, and the mapping starts after a guard page
 * (PROT_NONE) of its own: the stack is what lies between. A thread whose
 * stack has no guard (pthread_attr_setstack, a guard size of 0) gets no
 * bounds: its mapping might hold other memory, coroutine stacks among it.
 *
 * The file is read with open and read into a buffer on the stack, and
 * parsed line by line: no stdio, no heap. This runs on the agent's ticks
 * while the program runs, and a FILE open when the program exits is one
 * more stream that exit() flushes and unbuffers on the program's thread
 * (the differential runs counted those calls, in some runs and not
 * others), as a malloc would move the program's own allocations.
 */

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/shadow.h"
#include "host/layout.h"

struct vma {
	uint64_t start, end;
	bool none;  /* ---p: a guard */
	bool rw;
	bool anon;  /* no file: nothing, or a name given with [anon:...] */
	bool stack; /* [stack] */
};

/* "start-end perms offset dev inode   path" */
static bool parse(const char *s, const char *end, struct vma *v)
{
	char *next;
	v->start = strtoull(s, &next, 16);
	if (next >= end || *next != '-')
		return false;
	v->end = strtoull(next + 1, &next, 16);
	if (end - next < 5 || *next != ' ')
		return false;
	const char *perms = next + 1;
	v->none = perms[0] == '-' && perms[1] == '-' && perms[2] == '-';
	v->rw = perms[0] == 'r' && perms[1] == 'w';
	const char *p = perms + 4;
	for (int field = 0; field < 3 && p < end; field++) { /* offset, dev, inode */
		while (p < end && *p == ' ')
			p++;
		while (p < end && *p != ' ')
			p++;
	}
	while (p < end && *p == ' ')
		p++;
	size_t n = (size_t)(end - p);
	v->anon = n == 0 || (n >= 6 && !memcmp(p, "[anon:", 6));
	v->stack = n == 7 && !memcmp(p, "[stack]", 7);
	return true;
}

struct learning {
	struct np_thread *const *blocks;
	size_t n;
	uint64_t *lo, *hi; /* per block, 0 until found */
	uint64_t main_lo, main_hi;
	struct vma prev;
	bool have_prev;
};

static void see(struct learning *l, const struct vma *v)
{
	if (v->stack) {
		l->main_lo = v->start;
		l->main_hi = v->end;
	}
	for (size_t i = 0; i < l->n; i++) {
		uint64_t tls = l->blocks[i]->sh.tls;
		if (tls < v->start || tls >= v->end || !v->rw || !v->anon || !l->have_prev)
			continue;
		if (l->prev.end == v->start && l->prev.none) {
			l->lo[i] = v->start;
			l->hi[i] = tls;
		}
	}
	l->prev = *v;
	l->have_prev = true;
}

static void scan(struct learning *l)
{
	char buf[4096];
	size_t have = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - have);
		if (got <= 0)
			break;
		have += (size_t)got;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line)))) {
			struct vma v;
			*nl = '\0';
			if (parse(line, nl, &v))
				see(l, &v);
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof(buf)) /* a line longer than the buffer: skip it */
			have = 0;
	}
	close(fd);
}

/* The main thread's stack, learnt before the thread has a block (the
 * agent attaches from its own thread while the program waits): for the
 * thread whose tid is main_tid. */
static _Atomic uint64_t main_lo, main_hi;
static _Atomic int main_tid;

void np_shadow_learn_stacks(struct np_thread *const *blocks, size_t n)
{
	static uint64_t lo[NP_MAX_THREAD_BLOCKS], hi[NP_MAX_THREAD_BLOCKS];
	int pid = getpid();
	if (!n && atomic_load(&main_tid) == pid)
		return;
	if (n > NP_MAX_THREAD_BLOCKS)
		n = NP_MAX_THREAD_BLOCKS;
	struct learning l = {.blocks = blocks, .n = n, .lo = lo, .hi = hi};
	memset(lo, 0, n * sizeof(*lo));
	memset(hi, 0, n * sizeof(*hi));
	scan(&l);
	if (l.main_hi) {
		atomic_store(&main_tid, 0);
		atomic_store(&main_lo, l.main_lo);
		atomic_store(&main_hi, l.main_hi);
		atomic_store_explicit(&main_tid, pid, memory_order_release);
	}
	for (size_t i = 0; i < n; i++) {
		struct np_thread *t = blocks[i];
		bool is_main = atomic_load(&t->tid) == pid;
		uint64_t tlo = is_main ? l.main_lo : lo[i], thi = is_main ? l.main_hi : hi[i];
		if (!thi) {
			if (atomic_load(&t->sh.home_ok) == 0)
				atomic_store(&t->sh.home_ok, 2);
			continue;
		}
		/* the main stack grows down: lo may only go down, which keeps
		 * what the thread read before true */
		atomic_store_explicit(&t->sh.home_lo, tlo, memory_order_relaxed);
		atomic_store_explicit(&t->sh.home_hi, thi, memory_order_relaxed);
		atomic_store_explicit(&t->sh.home_ok, 1, memory_order_release);
	}
}

bool np_stack_home(const struct np_thread *t, uint64_t a)
{
	if (atomic_load_explicit(&t->sh.home_ok, memory_order_acquire) == 1)
		return a >= atomic_load_explicit(&t->sh.home_lo, memory_order_relaxed) &&
		       a < atomic_load_explicit(&t->sh.home_hi, memory_order_relaxed);
	/* the main thread, before its block had bounds of its own */
	return atomic_load_explicit(&main_tid, memory_order_acquire) == t->tid && t->tid &&
	       a >= atomic_load_explicit(&main_lo, memory_order_relaxed) &&
	       a < atomic_load_explicit(&main_hi, memory_order_relaxed);
}

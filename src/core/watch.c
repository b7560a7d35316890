/* SPDX-License-Identifier: MIT */
/*
 * Watchpoints: the control path.
 *
 * A watch is one hardware breakpoint per thread, made by
 * perf_event_open(PERF_TYPE_BREAKPOINT) with `sigtrap` (Linux 5.13): an
 * access makes the kernel send the accessing thread a synchronous SIGTRAP
 * with si_code TRAP_PERF and our sig_data, which the engine's SIGTRAP
 * handler hands to watch_hit.c. `inherit` + `inherit_thread` make the
 * kernel copy the event into every thread created later with CLONE_THREAD
 * (not into forked children; `remove_on_exec` drops it at exec). So the
 * thread-creation path runs none of our code and takes none of our locks:
 * the cautionary tale is the kernel's own constraint table, where one
 * global mutex made a 256-CPU machine spend 96% of its time waiting
 * (Linux 6.1 split it into per-task locks and a per-CPU rwsem; the inherit
 * path takes those only, per task).
 *
 * Threads alive at attach each get an event of their own, through
 * /proc/self/task. A thread created while we go through the list may have
 * inherited the event from a parent we already served, or not, and nothing
 * tells which: opening one for it might give it two (two debug registers
 * for one watch). So when the list has grown by the end of a pass, every
 * event of the attempt is closed and the whole placement starts again;
 * a pass with no newcomer means every thread has exactly one event and
 * every thread created from then on inherits one.
 *
 * Slots. Every thread carries the same events of ours (placed on all,
 * inherited by the rest), so our use per thread is one counter per pool
 * of debug registers, changed only by attach and detach. How many a
 * thread has is learnt from the kernel once (breakpoint events opened on
 * the calling thread until ENOSPC; on x86-64 data and instruction
 * breakpoints share the 4 registers, on arm64 they are two pools). A
 * watch is refused (ENOSPC) when our own watches already fill the pool,
 * or when the kernel refuses an event on some thread (a debugger, or
 * another user, holds its registers): then every event already placed
 * for it is closed, so nothing of a refused watch stays behind.
 *
 * Attach and detach serialise on the engine lock; the hit path takes
 * none (watch_hit.c).
 */
#include "arch/arch.h"
#include "core/codemem.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/thread.h"
#include "core/watch.h"
#include "core/maps.h"
#include "host/host.h"

#include <dirent.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct np_watch_entry np_watch_table[NP_WATCH_MAX];

#define PLACE_ATTEMPTS 64 /* passes before a growing thread list wins (EAGAIN) */

/* --- the shape the hardware can watch -------------------------------------- */

/* What a debug register can cover (the kernel's hw_breakpoint_arch_parse
 * checks the same, but only says EINVAL). */
int np_watch_check_shape(uint64_t addr, size_t len, enum np_watch_type type, char *why,
			 size_t cap)
{
	if (type != NP_WATCH_WRITE && type != NP_WATCH_RW && type != NP_WATCH_EXEC) {
		snprintf(why, cap, "unknown watch type %d", (int)type);
		return -EINVAL;
	}
	return np_watch_shape_check(np_host_isa, addr, len, type == NP_WATCH_EXEC, why, cap);
}

/* Mapped, and readable (data: the handler reads the value) or executable.
 * A readable word is the common case and answers without reading the
 * address-space map (which costs more than the whole attach otherwise). */
static int check_mapped(uint64_t addr, size_t len, enum np_watch_type type, char *why,
			size_t cap)
{
	uint64_t v;
	int saved = errno;
	bool readable = type != NP_WATCH_EXEC && np_watch_read_value(addr, len, &v) == 0;
	errno = saved;
	if (readable || (type == NP_WATCH_EXEC && np_code_mapped_exec(addr, 1)))
		return 0;
	struct np_map m;
	if (np_maps_lookup(addr, &m) || addr + (len ? len : 1) > m.end) {
		snprintf(why, cap, "nothing is mapped at 0x%llx", (unsigned long long)addr);
		return -EINVAL;
	}
	if (type == NP_WATCH_EXEC ? !m.x : !m.r) {
		snprintf(why, cap, "0x%llx is mapped but not %s", (unsigned long long)addr,
			 type == NP_WATCH_EXEC ? "executable" : "readable");
		return -EINVAL;
	}
	return 0;
}

/* Two of our watches over the same bytes would both fire on one access,
 * and the kernel queues one SIGTRAP per thread at a time (a standard
 * signal): the second would be lost. Engine lock held. */
static int check_overlap(uint64_t addr, size_t len, char *why, size_t cap)
{
	uint64_t end = addr + (len ? len : 1);
	for (int i = 0; i < NP_WATCH_MAX; i++) {
		const struct np_watch *w = atomic_load(&np_watch_table[i].watch);
		if (w && addr < w->addr + (w->len ? w->len : 1) && w->addr < end) {
			snprintf(why, cap, "it overlaps watch '%s' (0x%llx, %zu bytes): one access "
				 "would signal both, and one signal would be lost", w->name,
				 (unsigned long long)w->addr, w->len);
			return -EBUSY;
		}
	}
	return 0;
}

/* --- events ------------------------------------------------------------------ */

static void event_attr(struct perf_event_attr *a, uint64_t addr, size_t len,
		       enum np_watch_type type, uint64_t sig_data, bool inherit)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_BREAKPOINT;
	a->size = sizeof(*a);
	a->bp_type = type == NP_WATCH_WRITE ? HW_BREAKPOINT_W
		     : type == NP_WATCH_RW  ? HW_BREAKPOINT_RW
					    : HW_BREAKPOINT_X;
	a->bp_addr = addr;
	a->bp_len = type == NP_WATCH_EXEC ? np_host_isa->watch_exec_len : len;
	a->sample_period = 1;
	a->exclude_kernel = 1; /* what the program does, not its syscalls */
	a->exclude_hv = 1;
	a->sigtrap = 1;
	a->remove_on_exec = 1; /* sigtrap requires it; a new image has no handler */
	a->inherit = inherit;
	a->inherit_thread = inherit;
	a->sig_data = sig_data;
}

static int event_open(const struct perf_event_attr *a, int tid)
{
	long fd = syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : np_fd_move_high((int)fd);
}

/* --- slots -------------------------------------------------------------------- */

enum { POOL_DATA, POOL_INSN, NPOOLS };
static int pool_slots[NPOOLS]; /* per thread, learnt once */
static bool pools_shared;      /* one set of registers for both (x86) */
static int pool_used[NPOOLS];  /* held by our watches (engine lock) */
static int slots_err;          /* why there are none: -errno, 0 if known */
static bool slots_known;

static int pool_of(enum np_watch_type type)
{
	return type == NP_WATCH_EXEC && !pools_shared ? POOL_INSN : POOL_DATA;
}

/* Open breakpoint events on the calling thread until the kernel says
 * ENOSPC: how many more this thread can hold. fds receives them (cap
 * entries); the caller closes them. */
static int fill_thread(enum np_watch_type type, int *fds, int cap, int *n)
{
	static char bytes[16]; /* distinct addresses: the kernel does not merge */
	*n = 0;
	for (; *n < cap; (*n)++) {
		struct perf_event_attr a;
		uint64_t addr = type == NP_WATCH_EXEC ? (uint64_t)(uintptr_t)fill_thread +
							       (uint64_t)*n * np_host_isa->insn_align
						      : (uint64_t)(uintptr_t)&bytes[*n];
		event_attr(&a, addr, 1, type, 0, false);
		a.disabled = 1;
		int fd = event_open(&a, 0);
		if (fd == -ENOSPC)
			return 0;
		if (fd < 0)
			return fd;
		fds[*n] = fd;
	}
	return 0;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

static int learn_slots(void)
{
	int data[16], insn[16], nd = 0, ni = 0;
	int err = fill_thread(NP_WATCH_WRITE, data, 16, &nd);
	if (!err && nd) {
		/* with every data register taken, is an instruction one left? */
		err = fill_thread(NP_WATCH_EXEC, insn, 1, &ni);
		pools_shared = !err && ni == 0;
		close_all(insn, ni);
	}
	close_all(data, nd);
	if (!err && !pools_shared) {
		err = fill_thread(NP_WATCH_EXEC, insn, 16, &ni);
		close_all(insn, ni);
	}
	if (err)
		return err;
	/* what this thread could take, plus what our watches hold on it */
	pool_slots[POOL_DATA] = nd + pool_used[POOL_DATA];
	pool_slots[POOL_INSN] = pools_shared ? pool_slots[POOL_DATA] : ni + pool_used[POOL_INSN];
	return 0;
}

static const char *slots_reason(int err)
{
	switch (err) {
	case -ENOSYS:
	case -ENOENT:
	case -ENODEV:
	case -EOPNOTSUPP:
		return "this system offers no hardware breakpoints to user space (an emulator "
		       "such as qemu-user, or a kernel without them)";
	case -EINVAL:
		return "the kernel refuses breakpoints with sigtrap (Linux 5.13 or later needed)";
	case -EACCES:
	case -EPERM:
		return "perf events are not allowed here (kernel.perf_event_paranoid, a seccomp "
		       "filter or a container policy)";
	}
	return strerror(-err);
}

/* Engine lock held. 0, or -errno (logged) when there are no slots. The
 * answer is kept, unless it was for want of descriptors or memory. */
static int slots_ready(void)
{
	if (slots_known)
		return slots_err;
	int err = learn_slots();
	if (err)
		np_logf(NP_LOG_ERROR, "watchpoints: %s", slots_reason(err));
	if (err == -EMFILE || err == -ENFILE || err == -ENOMEM)
		return err;
	slots_known = true;
	slots_err = err == -ENOENT || err == -ENOSYS || err == -ENODEV ? -EOPNOTSUPP
		    : err == -EPERM ? -EACCES
				    : err;
	if (!err && pool_slots[POOL_DATA] == 0) {
		np_logf(NP_LOG_ERROR, "watchpoints: this thread has no free debug register");
		slots_known = false; /* someone else's: they may give them back */
		return -ENOSPC;
	}
	return slots_err;
}

NP_API int np_watch_slots(enum np_watch_type type)
{
	int err = np_in_handler() ? -EDEADLK : np_engine_init();
	if (err) {
		errno = -err;
		return -1;
	}
	if ((err = np_engine_lock())) {
		errno = -err;
		return -1;
	}
	err = slots_ready();
	int n = err ? -1 : pool_slots[pool_of(type)];
	np_engine_unlock();
	if (err)
		errno = -err;
	return n;
}

/* --- placing a watch on every thread -------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* The threads of the process, sorted. NULL on failure (errno). */
static int *list_threads(size_t *n)
{
	DIR *d = opendir("/proc/self/task");
	int *v = NULL;
	size_t cap = 0;
	*n = 0;
	if (!d)
		return NULL;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			int *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return NULL;
			}
			v = nv;
		}
		v[(*n)++] = atoi(e->d_name);
	}
	closedir(d);
	np_qsort(v, *n, sizeof(*v), cmp_int);
	return v ? v : calloc(1, sizeof(*v));
}

static bool contains(const int *v, size_t n, int x)
{
	return bsearch(&x, v, n, sizeof(*v), cmp_int) != NULL;
}

static int push_fd(struct np_watch *w, int fd)
{
	if (w->nfds == w->capfds) {
		size_t cap = w->capfds ? w->capfds * 2 : 16;
		int *v = realloc(w->fds, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->fds = v;
		w->capfds = cap;
	}
	w->fds[w->nfds++] = fd;
	return 0;
}

static const char *thread_name(int tid, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	FILE *f = fopen(path, "re");
	snprintf(buf, cap, "?");
	if (f) {
		if (fgets(buf, (int)cap, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	return buf;
}

/* One attempt: an event on each listed thread. 0 when no thread appeared
 * meanwhile, -EAGAIN when one did (the caller closes and tries again). */
static int place_pass(struct np_watch *w, const struct perf_event_attr *a)
{
	size_t n, n2;
	int *tids = list_threads(&n), err = tids ? 0 : -errno;
	for (size_t i = 0; i < n && !err; i++) {
		int fd = event_open(a, tids[i]);
		if (fd == -ESRCH)
			continue; /* gone since the listing: nothing to watch */
		if (fd < 0) {
			char comm[32];
			err = fd;
			if (fd == -ENOSPC)
				np_logf(NP_LOG_ERROR, "watch '%s': thread %d (%s) has no free debug "
					"register: %d per thread, %d held by this process's other "
					"watches, the rest by someone else (a debugger?)", w->name,
					tids[i], thread_name(tids[i], comm, sizeof(comm)),
					pool_slots[pool_of(w->type)], pool_used[pool_of(w->type)]);
		} else if ((err = push_fd(w, fd))) {
			close(fd);
		}
	}
	int *now = err ? NULL : list_threads(&n2);
	for (size_t i = 0; now && i < n2 && !err; i++)
		if (!contains(tids, n, now[i]))
			err = -EAGAIN; /* it may or may not have inherited one */
	if (!err && !now)
		err = -errno;
	free(tids);
	free(now);
	return err;
}

static void close_events(struct np_watch *w)
{
	close_all(w->fds, (int)w->nfds);
	w->nfds = 0;
}

static int place_everywhere(struct np_watch *w)
{
	struct perf_event_attr a;
	event_attr(&a, w->addr, w->len, w->type, NP_WATCH_SIGDATA(w->gen, w->index), true);
	int err = -EAGAIN;
	for (int attempt = 0; attempt < PLACE_ATTEMPTS && err == -EAGAIN; attempt++) {
		if (attempt) {
			close_events(w);
			struct timespec ts = {0, 100000L << (attempt < 6 ? attempt : 6)};
			nanosleep(&ts, NULL); /* let a burst of thread creation pass */
		}
		err = place_pass(w, &a);
	}
	if (err)
		close_events(w);
	if (err == -EAGAIN)
		np_logf(NP_LOG_ERROR, "watch '%s': threads kept appearing while it was placed "
			"(%d attempts): try again", w->name, PLACE_ATTEMPTS);
	else if (err == -EMFILE || err == -ENFILE)
		np_logf(NP_LOG_ERROR, "watch '%s': out of file descriptors: a watch takes one per "
			"thread alive when it is placed (%s)", w->name,
			err == -EMFILE ? "ulimit -n" : "the system's limit");
	else if (err && err != -ENOSPC)
		np_logf(NP_LOG_ERROR, "watch '%s': perf_event_open: %s", w->name, strerror(-err));
	return err;
}

/* --- the table ------------------------------------------------------------------ */

static int table_claim(void)
{
	for (int i = 0; i < NP_WATCH_MAX; i++)
		if (!atomic_load(&np_watch_table[i].watch))
			return i;
	return -1;
}

static void table_publish(struct np_watch *w, int idx)
{
	struct np_watch_entry *e = &np_watch_table[idx];
	w->index = (uint32_t)idx;
	w->gen = atomic_load(&e->gen) + 1;
	atomic_store(&e->gen, w->gen);
	atomic_store(&e->slot, w->slot);
	atomic_store(&e->missed_no_block, 0);
	atomic_store_explicit(&e->watch, w, memory_order_release);
}

/* Unpublish; once the lock is released, a membarrier and a wait until no
 * thread runs its handler (the asymmetric barrier of probes,
 * docs/design.md, "Detach"), then done(w). */
static void table_drop(struct np_watch *w, np_quiesce_fn *done)
{
	atomic_store_explicit(&np_watch_table[w->index].watch, NULL, memory_order_seq_cst);
	np_quiesce_later(&w->token, done, w, NULL, true);
}

/* --- the API ---------------------------------------------------------------------- */

static void *fail_null(int err)
{
	errno = err;
	return NULL;
}

static struct np_watch *watch_new(uint64_t addr, size_t len, enum np_watch_type type,
				  np_watch_fn fn, const struct np_watch_opts *o)
{
	struct np_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->addr = addr;
	w->len = type == NP_WATCH_EXEC ? 0 : len;
	w->type = type;
	w->fn = fn;
	w->data = o->data;
	if (o->name)
		w->name = strdup(o->name);
	else if (asprintf(&w->name, "0x%llx", (unsigned long long)addr) < 0)
		w->name = NULL;
	w->slot = np_slot_alloc();
	if (!w->name || w->slot == UINT32_MAX) {
		if (w->slot != UINT32_MAX)
			np_slot_free(w->slot);
		free(w->name);
		free(w);
		return NULL;
	}
	np_slot_bases(w->slot, &w->hits_base, &w->missed_base);
	w->token.addr = addr;
	w->token.live = true;
	uint64_t v = 0;
	if (type != NP_WATCH_EXEC)
		np_watch_read_value(addr, len, &v);
	atomic_store(&w->shadow, v);
	return w;
}

static void watch_delete(struct np_watch *w)
{
	np_slot_free(w->slot);
	free(w->fds);
	free(w->name);
	free(w);
}

static void watch_delete_later(void *w, void *unused)
{
	(void)unused;
	watch_delete(w);
}

/* Engine lock held: every check, then the events. 0 or -errno, logged. */
static int attach_locked(struct np_watch **out, uint64_t addr, size_t len,
			 enum np_watch_type type, np_watch_fn fn, const struct np_watch_opts *o)
{
	char why[256], label[64];
	snprintf(label, sizeof(label), "%s", o->name ? o->name : "");
	if (!o->name)
		snprintf(label, sizeof(label), "0x%llx", (unsigned long long)addr);
	int err = np_watch_check_shape(addr, len, type, why, sizeof(why));
	if (!err)
		err = check_mapped(addr, len, type, why, sizeof(why));
	if (!err)
		err = check_overlap(addr, len, why, sizeof(why));
	if (err) {
		np_logf(NP_LOG_ERROR, "watch '%s': %s", label, why);
		return err;
	}
	if ((err = slots_ready()))
		return err;
	int pool = pool_of(type), idx = table_claim();
	if (pool_used[pool] >= pool_slots[pool] || idx < 0) {
		if (idx < 0)
			np_logf(NP_LOG_ERROR, "watch '%s': %d watches already", label, NP_WATCH_MAX);
		else
			np_logf(NP_LOG_ERROR, "watch '%s': all %d debug registers of each thread "
				"are held by this process's other watches: detach one first",
				label, pool_slots[pool]);
		return -ENOSPC;
	}
	struct np_watch *w = watch_new(addr, len, type, fn, o);
	if (!w)
		return -ENOMEM;
	np_watch_modules_refresh(); /* the hit path finds functions there */
	table_publish(w, idx);
	if ((err = place_everywhere(w))) {
		table_drop(w, watch_delete_later);
		return err;
	}
	pool_used[pool]++;
	*out = w;
	return 0;
}

NP_API struct np_watch *np_watch_attach(void *addr, size_t len, enum np_watch_type type,
					np_watch_fn handler, const struct np_watch_opts *opts)
{
	struct np_watch_opts o = {0};
	struct np_watch *w = NULL;
	int err;
	if (np_in_handler())
		return fail_null(EDEADLK);
	if ((err = np_engine_init())) /* the SIGTRAP handler */
		return fail_null(-err);
	if (!addr || !handler || (opts && opts->sz < offsetof(struct np_watch_opts, name))) {
		np_logf(NP_LOG_ERROR, "watch at %p: invalid arguments", addr);
		return fail_null(EINVAL);
	}
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	np_fault_guard_refresh(); /* reads of the value take the fast path */
	if ((err = np_engine_lock()))
		return fail_null(-err);
	np_thread_pool_stock(); /* a block for each thread's first hit */
	err = attach_locked(&w, (uint64_t)(uintptr_t)addr, len, type, handler, &o);
	np_engine_unlock();
	return err ? fail_null(-err) : w;
}

NP_API int np_watch_detach(struct np_watch *w)
{
	if (!w || np_in_handler()) {
		errno = w ? EDEADLK : EINVAL;
		return -1;
	}
	int err = np_engine_lock();
	if (err) {
		errno = -err;
		return -1;
	}
	if (!w->detached) {
		/* closing the events removes their inherited copies too: no new
		 * signal; then the ones already on their way find no watch */
		close_events(w);
		table_drop(w, NULL);
		pool_used[pool_of(w->type)]--;
		w->detached = true;
	}
	np_engine_unlock(); /* returns once no handler of w runs */
	return 0;
}

NP_API void np_watch_free(struct np_watch *w)
{
	if (!w || np_watch_detach(w) || np_engine_lock())
		return;
	watch_delete(w);
	np_engine_unlock();
}

NP_API uint64_t np_watch_hits(const struct np_watch *w)
{
	return w ? np_thread_sum_hits(w->slot) - w->hits_base : 0;
}

NP_API uint64_t np_watch_missed(const struct np_watch *w)
{
	if (!w)
		return 0;
	const struct np_watch_entry *e = &np_watch_table[w->index];
	uint64_t no_block = atomic_load(&e->gen) == w->gen ? atomic_load(&e->missed_no_block) : 0;
	return np_thread_sum_missed(w->slot) - w->missed_base + no_block;
}

/* In a forked child: the kernel copied none of the events (inherit_thread
 * limits them to threads), so no watch fires there. Each is detached in
 * the child: its copies of the descriptors closed (they would keep the
 * parent's events, and the parent threads' debug registers, alive after
 * the parent closed its own), its registers counted free for the child's
 * own watches. The handles stay valid: np_watch_hits, np_watch_free. */
void np_watch_after_fork(void)
{
	for (int i = 0; i < NP_WATCH_MAX; i++) {
		struct np_watch *w = atomic_load(&np_watch_table[i].watch);
		if (!w || w->detached)
			continue;
		close_events(w);
		atomic_store(&np_watch_table[i].watch, NULL);
		if (pool_used[pool_of(w->type)] > 0)
			pool_used[pool_of(w->type)]--;
		w->detached = true;
	}
}

void np_watch_maintain(void)
{
	for (int i = 0; i < NP_WATCH_MAX; i++)
		if (atomic_load(&np_watch_table[i].watch)) {
			np_watch_modules_refresh();
			return;
		}
}

/* SPDX-License-Identifier: MIT */
/*
 * Placing probes in the modules they belong to, now or when they appear.
 *
 * The command names a probe's module by device and inode, so a probe finds
 * its module whatever path the program loaded it by. Probes whose module is
 * not mapped yet wait; the agent puts return probes of its own on dlopen
 * and dlclose: each dlopen that returns places the waiting probes of the
 * modules it brought, before the program can call into them, and each
 * dlclose sends the probes of modules it took away back to waiting.
 *
 * The control thread does the attaching (see the hook below).
 */
#include "agent/agent.h"
#include "core/embed.h"
#include "core/nolibc.h"
#include "host/host.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The mapped modules' files, each looked at once per pass. A pass asks
 * for the module of every waiting probe: asking the file system each time
 * made an attach of every function of a library (thousands of probes, a
 * few dozen modules) spend most of its time in stat(), and did so again
 * in every process of the tree and after every dlopen. */
struct module_file {
	uint64_t dev, ino, bias;
};

struct module_table {
	struct module_file *m;
	size_t n, cap;
	bool partial; /* more modules than room: ask the file system */
};

/* The program's own file. Opened, not stat'ed by name: under qemu-user,
 * /proc/self/exe names qemu to stat(), and only open() is the emulator's
 * to answer with the guest program. Natively both are the same file. */
static int stat_program(struct stat *st)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int rc = fd >= 0 ? fstat(fd, st) : -1;
	if (fd >= 0)
		close(fd);
	return rc;
}

static int stat_module(const struct dl_phdr_info *info, struct stat *st)
{
	const char *name = info->dlpi_name;
	return name && name[0] ? stat(name, st) : stat_program(st);
}

static int count_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	(void)info, (void)size;
	++*(size_t *)cookie;
	return 0;
}

static int note_module_file(struct dl_phdr_info *info, size_t size, void *cookie)
{
	(void)size;
	struct module_table *t = cookie;
	struct stat st;
	if (t->n == t->cap) {
		t->partial = true; /* loaded since it was counted */
		return 1;
	}
	if (!stat_module(info, &st))
		t->m[t->n++] = (struct module_file){(uint64_t)st.st_dev, (uint64_t)st.st_ino,
						    info->dlpi_addr};
	return 0;
}

/* Room for a few modules that a dlopen on another thread may add between
 * the count and the look; beyond that, lookups fall back to stat(). */
static void module_table_load(struct module_table *t)
{
	size_t n = 0;
	dl_iterate_phdr(count_module, &n);
	*t = (struct module_table){.cap = n + 8};
	t->m = calloc(t->cap, sizeof(*t->m));
	if (!t->m)
		t->cap = 0, t->partial = true;
	else
		dl_iterate_phdr(note_module_file, t);
}

static void module_table_free(struct module_table *t)
{
	free(t->m);
	*t = (struct module_table){0};
}

struct module_scan {
	uint64_t dev, ino;
	uint64_t bias;
	bool found;
};

static int match_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct module_scan *s = cookie;
	struct stat st;
	(void)size;
	if (stat_module(info, &st) || (uint64_t)st.st_dev != s->dev || (uint64_t)st.st_ino != s->ino)
		return 0;
	s->bias = info->dlpi_addr;
	s->found = true;
	return 1;
}

/* The load bias of the module with this file, if one is mapped: the
 * first in load order, as dl_iterate_phdr lists them. t may be NULL. */
static bool module_bias(const struct module_table *t, uint64_t dev, uint64_t ino, uint64_t *bias)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (t->m[i].dev == dev && t->m[i].ino == ino)
			return *bias = t->m[i].bias, true;
	if (t && !t->partial)
		return false;
	struct module_scan s = {.dev = dev, .ino = ino};
	dl_iterate_phdr(match_module, &s);
	*bias = s.bias;
	return s.found;
}

/* --- USDT semaphores ------------------------------------------------------------ */

/*
 * A USDT probe with a semaphore runs its argument set-up and reaches its
 * nop only while the 16-bit counter in its module's .probes section is not
 * zero: raised by one for each placed probe at a site of it, lowered by one
 * when the probe comes out, so that other tracers' counts (a kernel uprobe
 * with a reference counter, another tool) stay theirs. The counter is
 * written inside dl_iterate_phdr's callback, which holds the loader's lock:
 * the module found there cannot be unmapped by a dlclose in another thread
 * until the write is done, so the write never lands in memory that is no
 * longer the module's.
 */
struct sema_op {
	const struct aprobe *ap;
	int delta;
	bool done;
};

static int sema_in_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct sema_op *op = cookie;
	struct module_scan s = {.dev = op->ap->m.dev, .ino = op->ap->m.ino};
	if (!match_module(info, size, &s) || s.bias != op->ap->bias)
		return 0;
	uint16_t *sema = (uint16_t *)(uintptr_t)(op->ap->bias + op->ap->m.usdt_sema);
	if (op->delta > 0)
		__atomic_fetch_add(sema, 1, __ATOMIC_RELAXED);
	else if (__atomic_load_n(sema, __ATOMIC_RELAXED)) /* never below zero */
		__atomic_fetch_sub(sema, 1, __ATOMIC_RELAXED);
	op->done = true;
	return 1;
}

/* Raise (delta 1) or lower (-1) the semaphore of a placed USDT probe. */
static void sema_adjust(struct aprobe *ap, int delta)
{
	if (!ap->m.usdt_sema || ap->sema_raised == (delta > 0))
		return;
	struct sema_op op = {.ap = ap, .delta = delta};
	dl_iterate_phdr(sema_in_module, &op);
	/* lowered, or its module gone with the count in it */
	ap->sema_raised = delta > 0 && op.done;
}

static void attached_msg(const struct aprobe *ap, int err)
{
	struct np_msg_attached m = {.type = NP_MSG_ATTACHED, .id = ap->m.id, .err = err};
	if (ap->watch)
		m.addr = ap->bias + ap->m.vaddr;
	if (ap->probe) {
		m.strategy = np_probe_strategy(ap->probe);
		m.addr = (uint64_t)(uintptr_t)np_probe_addr(ap->probe);
	}
	if (err)
		snprintf(m.why, sizeof(m.why), "%s", np_agent.why[0] ? np_agent.why : strerror(-err));
	send(np_agent.sock, &m, sizeof(m), MSG_NOSIGNAL);
}

/* Only the arguments, sp and pc are read at a function entry: the cheapest
 * trampoline serves it. */
static unsigned probe_flags(const struct aprobe *ap)
{
	unsigned flags = NP_PROBE_NO_FPU; /* handlers.c is general-regs-only */
	if (ap->m.vaddr != ap->m.func_vaddr || (ap->m.action == NP_ACT_SCRIPT && ap->m.script_regs) ||
	    ap->m.usdt) /* a USDT argument may be in any register */
		return flags;
	for (unsigned i = 0; i < ap->m.nargs; i++)
		if (ap->m.args[i].base == NP_FB_REG)
			return flags;
	return flags | NP_PROBE_ARGS_ONLY;
}

static void attach_watch(struct aprobe *ap, uint64_t bias)
{
	struct np_watch_opts o = NP_WATCH_OPTS(.data = ap);
	np_agent.why[0] = 0;
	ap->bias = bias;
	ap->watch = np_watch_attach((void *)(uintptr_t)(bias + ap->m.vaddr), ap->m.watch_len,
				    (enum np_watch_type)ap->m.watch_type, np_agent_on_watch, &o);
	ap->state = ap->watch ? AP_ATTACHED : AP_FAILED;
	attached_msg(ap, ap->watch ? 0 : -errno);
}

static struct np_probe_opts probe_opts(struct aprobe *ap, uint64_t bias)
{
	ap->bias = bias; /* before the handlers' data is made of it */
	struct np_probe_opts o = NP_PROBE_OPTS(.strategy = ap->m.strategy, .flags = probe_flags(ap));
	np_agent_handlers(ap, &o.on_entry, &o.on_return, &o.data);
	if (ap->m.func_size) {
		o.func_start = (void *)(uintptr_t)(bias + ap->m.func_vaddr);
		o.func_size = ap->m.func_size;
	}
	return o;
}

static void attach_one(struct aprobe *ap, uint64_t bias)
{
	if (ap->m.action == NP_ACT_WATCH) {
		attach_watch(ap, bias);
		return;
	}
	struct np_probe_opts o = probe_opts(ap, bias); /* sets ap->bias */
	np_agent.why[0] = 0;
	ap->probe = np_probe_attach((void *)(uintptr_t)(bias + ap->m.vaddr), &o);
	ap->state = ap->probe ? AP_ATTACHED : AP_FAILED;
	int err = ap->probe ? 0 : -errno;
	if (ap->probe)
		sema_adjust(ap, 1);
	attached_msg(ap, err);
}

/* The ready probes in batches of np_probe_attach_many: a command that
 * sends thousands of probes has them placed in a few passes of the
 * engine's patching protocol. A probe a batch refused is tried again
 * alone, so that the reason the engine logs is its own. Between batches
 * the agent looks at its command: one that has gone (killed, or it gave
 * up waiting) or said DETACH ends the placing, and the session comes down
 * in a bounded time instead of after every probe, in a process that may
 * be loaded and slow. Those not placed stay waiting. */
#define ATTACH_BATCH 256

static void attach_batch(struct aprobe **ready, const uint64_t *bias, size_t n)
{
	struct np_probe_opts *o = calloc(n, sizeof(*o));
	const struct np_probe_opts **op = calloc(n, sizeof(*op));
	void **addrs = calloc(n, sizeof(*addrs));
	struct np_probe **p = calloc(n, sizeof(*p));
	int placed = -1;
	if (o && op && addrs && p) {
		for (size_t i = 0; i < n; i++) {
			o[i] = probe_opts(ready[i], bias[i]);
			op[i] = &o[i];
			addrs[i] = (void *)(uintptr_t)(bias[i] + ready[i]->m.vaddr);
		}
		struct np_probe_many_opts mo = NP_PROBE_MANY_OPTS(.cnt = n, .addrs = addrs,
								  .opts = op, .probes = p);
		placed = np_probe_attach_many(&mo);
	}
	for (size_t i = 0; i < n; i++) {
		struct aprobe *ap = ready[i];
		if (placed < 0 || !p[i]) {
			attach_one(ap, bias[i]);
			continue;
		}
		ap->probe = p[i]; /* ap->bias: probe_opts set it */
		ap->state = AP_ATTACHED;
		sema_adjust(ap, 1);
		attached_msg(ap, 0);
	}
	free(o), free(op), free(addrs), free(p);
}

static void attach_ready(struct aprobe **ready, const uint64_t *bias, size_t n)
{
	for (size_t at = 0; at < n && !np_agent_cancelled(); at += ATTACH_BATCH)
		attach_batch(ready + at, bias + at, n - at < ATTACH_BATCH ? n - at : ATTACH_BATCH);
}

/* Attach every waiting probe whose module is now mapped. Returns how many
 * are still waiting. Caller holds np_agent.lock. */
int np_agent_attach_pending(void)
{
	int waiting = 0;
	size_t n = 0, pending = 0;
	for (uint32_t i = 0; i < np_agent.nprobes; i++)
		pending += np_agent.probes[i].state == AP_PENDING;
	/* the common case, every maintenance tick: nothing to do, and nothing
	 * allocated (a sanitizer's allocator is shared with the program) */
	if (!pending)
		return 0;
	struct aprobe **ready = calloc(pending, sizeof(*ready));
	uint64_t *bias = calloc(pending, sizeof(*bias));
	struct module_table mods;
	module_table_load(&mods);
	for (uint32_t i = 0; i < np_agent.nprobes; i++) {
		struct aprobe *ap = &np_agent.probes[i];
		uint64_t b;
		if (ap->state != AP_PENDING)
			continue;
		if (ap->m.action == NP_ACT_WATCH && !ap->m.dev && !ap->m.ino)
			attach_one(ap, 0); /* an absolute address */
		else if (!module_bias(&mods, ap->m.dev, ap->m.ino, &b))
			waiting++;
		else if (ready && bias && ap->m.action != NP_ACT_WATCH)
			ready[n] = ap, bias[n++] = b;
		else
			attach_one(ap, b);
	}
	module_table_free(&mods);
	if (n)
		attach_ready(ready, bias, n);
	free(ready), free(bias);
	return waiting;
}

/* Probes whose module dlclose took away go back to waiting: the engine
 * drops them without touching memory that is no longer theirs, and the
 * next dlopen of the module places them again. Caller holds the lock. */
static void forget_unloaded(void)
{
	struct module_table mods = {0};
	bool loaded = false;
	for (uint32_t i = 0; i < np_agent.nprobes; i++) {
		struct aprobe *ap = &np_agent.probes[i];
		uint64_t bias;
		if (ap->state != AP_ATTACHED || (!ap->m.dev && !ap->m.ino))
			continue;
		if (!loaded)
			module_table_load(&mods), loaded = true;
		if (module_bias(&mods, ap->m.dev, ap->m.ino, &bias))
			continue;
		ap->missed_before += ap->watch ? np_watch_missed(ap->watch) : np_probe_missed(ap->probe);
		np_probe_free(ap->probe);
		np_watch_free(ap->watch);
		ap->probe = NULL;
		ap->watch = NULL;
		ap->state = AP_PENDING;
		ap->sema_raised = false; /* it went with the module */
	}
	module_table_free(&mods);
}

/* Every probe removed in one np_probe_detach_many (one by one if there is
 * no memory for the list). */
void np_agent_detach_all(void)
{
	struct np_probe **all = calloc(np_agent.nprobes ? np_agent.nprobes : 1, sizeof(*all));
	for (uint32_t i = 0; all && i < np_agent.nprobes; i++)
		all[i] = np_agent.probes[i].probe;
	if (all)
		np_probe_detach_many(all, np_agent.nprobes);
	free(all);
	for (uint32_t i = 0; i < np_agent.nprobes; i++) {
		struct aprobe *ap = &np_agent.probes[i];
		sema_adjust(&np_agent.probes[i], -1);
		if (ap->probe) {
			np_probe_detach(ap->probe);
			ap->missed_before += np_probe_missed(ap->probe);
			np_probe_free(ap->probe);
		}
		if (ap->watch) {
			np_watch_detach(ap->watch);
			ap->missed_before += np_watch_missed(ap->watch);
			np_watch_free(ap->watch);
		}
		ap->probe = NULL;
		ap->watch = NULL;
	}
	np_agent_publish_missed();
}

/* What probe ap of this process has missed in all. */
static uint64_t missed_now(const struct aprobe *ap)
{
	return ap->missed_before + (ap->probe ? np_probe_missed(ap->probe) : 0) +
	       (ap->watch ? np_watch_missed(ap->watch) : 0);
}

/* Every process of the tree adds what it missed since it last did: the
 * counts are shared, and each process knows only its own. Every miss of a
 * session probe is also counted under its reason (shadow.c, watch_hit.c),
 * after its probe's count: when no reason moved since the last call, no
 * probe's count did either, and the probes are not summed again. That sum
 * reads each probe's slot in every thread block, thousands of probes times
 * every block, which on each 10 ms tick cost more than the probes' hits. */
static void publish_missed(bool every_probe)
{
	struct np_shm_header *h = np_agent.shm;
	uint64_t *missed = h ? np_shm_missed(h) : NULL;
	bool moved = every_probe;
	for (int r = 0; missed && r < NP_MISS_REASONS && r < NP_SHM_MISS_REASONS; r++) {
		uint64_t now = np_missed_by((enum np_miss_reason)r);
		if (now > np_agent.why_told[r])
			__atomic_fetch_add(&h->missed_why[r], now - np_agent.why_told[r],
					   __ATOMIC_RELAXED);
		moved |= now != np_agent.why_told[r];
		np_agent.why_told[r] = now;
	}
	for (uint32_t i = 0; missed && moved && i < np_agent.nprobes; i++) {
		struct aprobe *ap = &np_agent.probes[i];
		uint64_t now = missed_now(ap);
		if (now > ap->missed_told)
			__atomic_fetch_add(&missed[i], now - ap->missed_told, __ATOMIC_RELAXED);
		ap->missed_told = now;
	}
}

void np_agent_publish_missed(void)
{
	publish_missed(true);
}

void np_agent_publish_new_misses(void)
{
	publish_missed(false);
}

void np_agent_missed_baseline(void)
{
	for (int r = 0; r < NP_MISS_REASONS && r < NP_SHM_MISS_REASONS; r++)
		np_agent.why_told[r] = np_missed_by((enum np_miss_reason)r);
	for (uint32_t i = 0; np_agent.probes && i < np_agent.nprobes; i++)
		np_agent.probes[i].missed_told = missed_now(&np_agent.probes[i]);
}

/* --- the dlopen hook ---------------------------------------------------------- */

/* A handler may not attach probes (the engine refuses: a detach could be
 * waiting for that very handler). So the handler asks the control thread,
 * which owns every attach, and waits until its request has been served or
 * the session is closing. It calls no libc to do so (futexes and raw
 * syscalls): with probes on libc, those calls would be hits from inside a
 * handler, counted as missed. Counters wrap; they are compared as
 * differences. */
static struct np_probe *hooks[2]; /* dlopen, dlclose */
static uint32_t req_asked, req_served; /* req_served is a futex */
static uint32_t hook_open;
static uint32_t hook_busy; /* handlers between the gate and their return (a futex) */

static uint32_t load(const uint32_t *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static void after_dl_call(struct np_ctx *ctx, void *data)
{
	/* A child's control thread is not there to serve it: its wake-up
	 * would go to the parent's (the eventfd is shared), and its wait
	 * would never end. Its new modules are not probed. A copy that no
	 * fork handler prepared (copy.c) has none either. */
	if (!np_agent_served())
		return;
	__atomic_fetch_add(&hook_busy, 1, __ATOMIC_ACQ_REL);
	uint32_t mine = __atomic_add_fetch(&req_asked, 1, __ATOMIC_ACQ_REL);
	uint64_t one = 1;
	if (load(&hook_open) &&
	    np_host_syscall(SYS_write, np_agent.wake_fd, (long)&one, 8, 0, 0, 0) == 8)
		for (;;) {
			uint32_t seen = load(&req_served);
			if (!load(&hook_open) || (int32_t)(seen - mine) >= 0)
				break;
			np_futex_wait(&req_served, seen);
		}
	if (__atomic_sub_fetch(&hook_busy, 1, __ATOMIC_ACQ_REL) == 0)
		np_futex_wake(&hook_busy);
}

/* Control thread: serve every request asked so far. */
void np_agent_serve_dlopen(void)
{
	uint64_t n;
	if (read(np_agent.wake_fd, &n, sizeof(n)) != sizeof(n))
		return;
	uint32_t asked = load(&req_asked);
	pthread_mutex_lock(&np_agent.lock);
	forget_unloaded();
	np_agent_attach_pending();
	pthread_mutex_unlock(&np_agent.lock);
	np_maintain(); /* the new modules' unwinders guarded before dlopen returns */
	__atomic_store_n(&req_served, asked, __ATOMIC_RELEASE);
	np_futex_wake(&req_served);
}

struct np_probe *np_agent_hook(const char *name, np_handler_fn entry, np_handler_fn ret,
				void *data)
{
	void *fn = dlsym(RTLD_DEFAULT, name);
	struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = entry, .on_return = ret, .data = data,
					       .name = name);
	struct np_probe *p = fn ? np_probe_attach(fn, &o) : NULL;
	if (p)
		np_probe_mark_internal(p); /* its misses are not the session's */
	else if (!fn)
		errno = ENOENT;
	return p;
}

int np_agent_hook_dlopen(void)
{
	static const char *const names[] = {"dlopen", "dlclose"};
	__atomic_store_n(&hook_open, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		if (!(hooks[i] = np_agent_hook(names[i], NULL, after_dl_call, NULL)))
			return -errno;
	return 0;
}

/* Close the gate, release the waiting handlers, then detach: the detach
 * waits for handlers still running, which now wait for nothing. */
void np_agent_unhook_dlopen(void)
{
	__atomic_store_n(&hook_open, 0, __ATOMIC_RELEASE);
	/* change the word, so that a handler about to sleep on it does not */
	__atomic_fetch_add(&req_served, 1, __ATOMIC_ACQ_REL);
	np_futex_wake(&req_served);
	for (uint32_t busy; (busy = load(&hook_busy)) != 0;)
		np_futex_wait(&hook_busy, busy);
	for (int i = 0; i < 2; i++) {
		if (hooks[i])
			np_probe_free(hooks[i]);
		hooks[i] = NULL;
	}
}

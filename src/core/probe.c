/* SPDX-License-Identifier: MIT */
/*
 * The public probe API: attach, detach, free, counters.
 *
 * Attach publishes the site's handler list before any code is patched, so
 * the first thread to reach the new code already finds its handler. Detach
 * goes the other way: the probe leaves the list, a membarrier makes that
 * visible to every thread, we wait until no thread is still running the
 * site's handlers, and only then is the code restored. After detach the
 * handle still answers np_probe_hits(); np_probe_free() releases it.
 */
#include "core/batch.h"
#include "core/code_write.h"
#include "core/codemem.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/modules.h"
#include "core/nolibc.h"
#include "core/shadow.h"
#include "core/site.h"
#include "core/stop.h"
#include "core/thread.h"
#include "core/trap.h"
#include "core/watch.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

const struct np_isa *np_host_isa = &NP_HOST_ISA;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_err;

static void engine_init(void)
{
	if ((init_err = np_nolibc_init()) || (init_err = np_fork_init()) ||
	    (init_err = np_code_write_init()) ||
	    (init_err = np_stop_init()) || (init_err = np_thread_pool_init()) ||
	    (init_err = np_trap_init()) || (init_err = np_host_init()))
		np_logf(NP_LOG_ERROR, "cannot initialise: %s", strerror(-init_err));
}

void np_engine_preinit(void)
{
	np_code_write_register();
	np_fd_table_grow();
}

int np_engine_init(void)
{
	pthread_once(&init_once, engine_init);
	return init_err;
}

bool np_in_handler(void)
{
	struct np_thread *t = np_thread_peek();
	return t && atomic_load(&t->in_site) != NULL;
}

NP_API const char *np_strategy_name(enum np_strategy s)
{
	switch (s) {
	case NP_STRATEGY_AUTO:
		return "auto";
	case NP_STRATEGY_JUMP:
		return "jump";
	case NP_STRATEGY_TRAP:
		return "trap";
	}
	return "unknown";
}

/* --- counter slots ------------------------------------------------------- */

static uint8_t slot_used[NP_MAX_PROBES];
static uint8_t slot_owned_before[NP_MAX_PROBES]; /* its counters may not be 0 */
static uint32_t slot_hint, slots_in_use;

/* Why probe_new failed: every counter slot taken, or out of memory. */
static int probe_new_error(void)
{
	if (slots_in_use < NP_MAX_PROBES)
		return -ENOMEM;
	np_logf(NP_LOG_ERROR, "all %d probe slots are in use: detach some first",
		NP_MAX_PROBES);
	return -ENOSPC;
}

uint32_t np_slot_alloc(void)
{
	for (uint32_t n = 0; n < NP_MAX_PROBES; n++) {
		uint32_t s = (slot_hint + n) % NP_MAX_PROBES;
		if (!slot_used[s]) {
			slot_used[s] = 1;
			slot_hint = s + 1;
			slots_in_use++;
			return s;
		}
	}
	return UINT32_MAX;
}

void np_slot_free(uint32_t slot)
{
	slot_used[slot] = 0;
	slot_owned_before[slot] = 1;
	slots_in_use--;
}

/* What earlier owners of 'slot' left in the threads' counters: a new owner
 * counts from there. A slot never owned has left nothing, and summing it
 * would read (and fault in) a fresh page of every thread block: thousands
 * of page faults when 10,000 probes are attached. */
void np_slot_bases(uint32_t slot, uint64_t *hits, uint64_t *missed)
{
	bool owned = slot_owned_before[slot];
	*hits = owned ? np_thread_sum_hits(slot) : 0;
	*missed = owned ? np_thread_sum_missed(slot) : 0;
}

/* --- sites --------------------------------------------------------------- */

/* Sites are never freed, only reused with a new generation: a shadow-stack
 * frame of a thread still inside a probed call may point at one. The live
 * ones are found by address through a hash, the others wait on a stack for
 * reuse: attaching the n-th probe must not cost O(n). */
#define SITE_HEADS 4096
static struct np_site *site_hash[SITE_HEADS];
static struct np_site **spare_sites;
static size_t nspare, cap_spare;

static struct np_site **site_head(uint64_t addr)
{
	return &site_hash[(addr ^ (addr >> 12) ^ (addr >> 24)) % SITE_HEADS];
}

struct np_site *np_site_get(uint64_t addr)
{
	for (struct np_site *s = *site_head(addr); s; s = s->hash_next)
		if (s->live && s->addr == addr)
			return s;
	return NULL;
}

/* Room on the spare stack for every site there is, made before a site is,
 * so that releasing one never fails. */
static int reserve_spare(size_t need)
{
	if (need <= cap_spare)
		return 0;
	size_t cap = cap_spare ? cap_spare * 2 : 64;
	struct np_site **v = realloc(spare_sites, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	spare_sites = v;
	cap_spare = cap;
	return 0;
}

static size_t nsites_made;

struct np_site *np_site_new(uint64_t addr)
{
	struct np_site *s = nspare ? spare_sites[--nspare] : NULL;
	if (!s) {
		if (reserve_spare(nsites_made + 1))
			return NULL;
		if (!(s = calloc(1, sizeof(*s))))
			return NULL;
		nsites_made++;
	}
	/* Stale paths may still read this object (see site_list() in
	 * thread.c): no field passes through zero, gen and version only grow,
	 * and the address is in place before a new list is published. */
	__atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->version, s->version + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->addr, addr, __ATOMIC_RELAXED);
	s->region = NULL;
	s->probes = NULL;
	s->func_entry = s->args_only = false;
	s->func_end = 0;
	s->entry_pad = s->pad_len = s->ret_pac = 0;
	s->fpu = NP_FPU_NONE;
	s->live = true;
	struct np_site **head = site_head(addr);
	s->hash_next = *head;
	*head = s;
	return s;
}

static void unhash_site(struct np_site *s)
{
	for (struct np_site **pp = site_head(s->addr); *pp; pp = &(*pp)->hash_next)
		if (*pp == s) {
			*pp = s->hash_next;
			break;
		}
	spare_sites[nspare++] = s; /* room reserved when s was made */
}

static void free_list(void *list, void *unused)
{
	(void)unused;
	free(list);
}

/* Once its handlers are over, under the lock: the site can be reused. */
static void site_recycle(void *site, void *list)
{
	free(list);
	unhash_site(site);
}

/* The site dead to new hits at once; recycled once the handlers still
 * running are over, after the lock (np_quiesce_later: one membarrier for
 * all the sites of a batch). Until then it stays in the hash, dead, and
 * off the spare stack. */
void np_site_release(struct np_site *s)
{
	struct np_hlist *l = atomic_exchange(&s->list, NULL);
	__atomic_store_n(&s->version, s->version + 1, __ATOMIC_RELEASE);
	s->live = false;
	s->gen++;
	np_quiesce_later(s, site_recycle, s, l, true);
}

static unsigned wanted_fpu(const struct np_site *s)
{
	for (const struct np_probe *p = s->probes; p; p = p->next_in_site)
		if (p->uses_fpu)
			return NP_FPU_FULL;
	return NP_FPU_NONE;
}

static int read_code(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_code_read(addr, dst, len);
}

/* Does this handler need the program's vector state saved around it? The
 * answer is cached: the same handler is often attached many times. */
static bool handler_uses_fpu(np_handler_fn fn)
{
	static struct {
		np_handler_fn fn;
		bool uses;
	} cache[64];
	static unsigned next;
	if (!fn)
		return false;
	for (unsigned i = 0; i < 64; i++)
		if (cache[i].fn == fn)
			return cache[i].uses;
	struct np_mem mem = {read_code, NULL, NULL};
	bool uses = np_host_isa->vector_state_used((uint64_t)fn, &mem) != 0;
	cache[next % 64].fn = fn;
	cache[next++ % 64].uses = uses;
	return uses;
}

/* Replace the handler list with one built from s->probes; *old gets the
 * list replaced, which threads may still be reading until a membarrier
 * and np_thread_wait_site (np_quiesce_later). */
static int site_publish_begin(struct np_site *s, struct np_hlist **old)
{
	uint32_t n = 0, nret = 0;
	for (struct np_probe *p = s->probes; p; p = p->next_in_site)
		n++;
	struct np_hlist *l = calloc(1, sizeof(*l) + n * sizeof(l->h[0]));
	if (!l)
		return -ENOMEM;
	for (struct np_probe *p = s->probes; p; p = p->next_in_site) {
		l->h[l->n++] = (struct np_handler){p->on_entry, p->on_return, p->data, p, p->slot};
		nret += p->on_return != NULL;
	}
	l->nret = nret;
	*old = atomic_exchange_explicit(&s->list, l, memory_order_acq_rel);
	__atomic_store_n(&s->version, s->version + 1, __ATOMIC_RELEASE);
	return 0;
}

/* A site's first list replaces none: no handler can be running it, so
 * there is nothing to wait for (a reused site object waited for its
 * previous life's handlers before it was recycled). A list replaced is
 * freed once its handlers are over, after the lock. */
int np_site_publish(struct np_site *s)
{
	struct np_hlist *old;
	int err = site_publish_begin(s, &old);
	if (!err && old)
		np_quiesce_later(s, free_list, old, NULL, false);
	return err;
}

static bool wanted_args_only(const struct np_site *s)
{
	for (const struct np_probe *p = s->probes; p; p = p->next_in_site)
		if (!(p->flags & NP_PROBE_ARGS_ONLY))
			return false;
	return s->probes != NULL;
}

static void site_set_modes(struct np_site *s)
{
	s->fpu = wanted_fpu(s);
	s->args_only = wanted_args_only(s);
}

/* --- attach ----------------------------------------------------------------- */

static void *fail_null(int err)
{
	errno = err;
	return NULL;
}

static struct np_probe *probe_new(void *addr, const struct np_probe_opts *o)
{
	struct np_probe *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->addr = (uint64_t)addr;
	p->on_entry = o->on_entry;
	p->on_return = o->on_return;
	p->data = o->data;
	p->requested = o->strategy;
	p->flags = o->flags;
	p->func_start = (uint64_t)o->func_start;
	p->func_size = o->func_size;
	p->slot = np_slot_alloc();
	p->uses_fpu = !(o->flags & NP_PROBE_NO_FPU) &&
		      (handler_uses_fpu(o->on_entry) || handler_uses_fpu(o->on_return));
	if (o->name)
		p->name = strdup(o->name);
	else if (asprintf(&p->name, "%p", addr) < 0)
		p->name = NULL;
	if (p->slot == UINT32_MAX) {
		free(p->name);
		free(p);
		return NULL;
	}
	np_slot_bases(p->slot, &p->hits_base, &p->missed_base);
	return p;
}

static void probe_delete(struct np_probe *p)
{
	np_slot_free(p->slot);
	free(p->name);
	free(p);
}

static void site_append(struct np_site *s, struct np_probe *p)
{
	struct np_probe **pp = &s->probes;
	while (*pp)
		pp = &(*pp)->next_in_site;
	*pp = p;
	p->site = s;
}

static void site_unlink(struct np_site *s, struct np_probe *p)
{
	for (struct np_probe **pp = &s->probes; *pp; pp = &(*pp)->next_in_site)
		if (*pp == p) {
			*pp = p->next_in_site;
			break;
		}
	p->next_in_site = NULL;
}

static int check_return_site(const struct np_site *s, const struct np_probe *p)
{
	if (!p->on_return)
		return 0;
	if (!s->func_entry) {
		np_logf(NP_LOG_ERROR, "probe '%s': a return probe must sit at a function entry",
			p->name);
		return -EINVAL;
	}
	/* the kernel jumps to it: the word a return probe would take for the
	 * return address is argc (x86-64) */
	if (s->addr == getauxval(AT_ENTRY)) {
		np_logf(NP_LOG_ERROR, "probe '%s': the program's entry point is not called: "
				      "it has no return address to replace", p->name);
		return -EOPNOTSUPP;
	}
	if (np_symbol_returns_twice(s->addr)) {
		np_logf(NP_LOG_ERROR, "probe '%s': the function returns twice (setjmp, vfork): "
				      "a return probe would lose its second return", p->name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* An entry probe moved past a landing pad makes its site the entry. */
static void site_set_entry(struct np_site *s, const struct np_entry *e)
{
	s->func_entry = true;
	s->entry_pad = e->pad;
	s->pad_len = e->pad_len;
	s->ret_pac = e->ret_pac;
	s->func_end = e->func_end;
}

/* A probe whose handlers may touch the FP/vector state joins a site whose
 * trampoline does not save it: the trampoline is rebuilt to save it
 * first. Once the new handler list is published, hits through the
 * trampoline in place (its slow path, np__dispatch) meet the new handlers
 * until the rebuild that follows the publication is in; np__dispatch
 * does not run them there (NP_CTX_NO_FPU: counted as missed), and this
 * keeps that to a thread still in the old trampoline. */
static int save_fpu_first(struct np_site *s, const struct np_probe *p)
{
	if (!p->uses_fpu || s->fpu == NP_FPU_FULL || !s->region)
		return 0;
	s->fpu = NP_FPU_FULL;
	int err = np_region_refresh(s->region);
	if (err)
		site_set_modes(s);
	return err;
}

/* A new probe at a site that already exists. */
static int attach_existing(struct np_site *s, struct np_probe *p, const struct np_entry *e)
{
	if (e && !s->func_entry)
		site_set_entry(s, e);
	int bad = check_return_site(s, p);
	if (bad)
		return bad;
	if (p->requested != NP_STRATEGY_AUTO && s->region &&
	    s->region->strategy != p->requested) {
		np_logf(NP_LOG_ERROR, "probe '%s': the site already has a %s probe", p->name,
			np_strategy_name(s->region->strategy));
		return -EBUSY;
	}
	int err = save_fpu_first(s, p);
	if (err)
		return err;
	site_append(s, p);
	site_set_modes(s);
	err = np_site_publish(s);
	if (!err) /* the trampoline calls the handlers directly */
		err = np_region_refresh(s->region);
	if (err) {
		site_unlink(s, p);
		site_set_modes(s);
		np_site_publish(s);
	}
	return err;
}

static int attach_new(uint64_t addr, struct np_probe *p, const struct np_entry *e)
{
	struct np_site *s = np_site_new(addr);
	if (!s)
		return -ENOMEM;
	if (e)
		site_set_entry(s, e);
	int bad = check_return_site(s, p);
	if (bad) {
		np_site_release(s);
		return bad;
	}
	site_append(s, p);
	site_set_modes(s);
	int err = np_site_publish(s);
	if (!err)
		err = np_region_place(s, p, p->name);
	if (err) {
		site_unlink(s, p);
		np_site_release(s);
	}
	return err;
}

static int check_opts(void *addr, const struct np_probe_opts *o)
{
	if (!addr || !o || o->sz < offsetof(struct np_probe_opts, name) ||
	    (!o->on_entry && !o->on_return) || (unsigned)o->strategy > NP_STRATEGY_TRAP)
		return -EINVAL;
	if (!np_code_mapped_exec((uint64_t)addr, 1))
		return -ENOEXEC;
	return 0;
}

/* One probe of a batch (engine lock held): 0 and *out, or -errno. */
static int attach_locked(void *addr, const struct np_probe_opts *o, struct np_probe **out)
{
	int err = check_opts(addr, o);
	*out = NULL;
	if (err) {
		np_logf(NP_LOG_ERROR, "probe at %p: %s", addr,
			err == -ENOEXEC ? "no executable code mapped there" : "invalid options");
		return err;
	}
	struct np_probe *p = probe_new(addr, o);
	struct np_entry e = {.site = (uint64_t)addr}; /* after its landing pads (entry.c) */
	bool entry = p && np_entry_find((uint64_t)addr, p->func_start, p->func_size, &e);
	/* a region of this batch there: in place before it is shared */
	if (np_batch_pending(np_region_find(e.site)))
		np_batch_flush();
	struct np_site *s = p ? np_site_get(e.site) : NULL;
	err = !p ? probe_new_error()
	      : s ? attach_existing(s, p, entry ? &e : NULL)
		  : attach_new(e.site, p, entry ? &e : NULL);
	if (err && p)
		probe_delete(p);
	else
		*out = p;
	return err;
}

/* A return probe while a module's unwinder cannot be guarded. */
static int refuse_return(void *addr, const struct np_probe_opts *o, struct np_probe **out)
{
	*out = NULL;
	np_logf(NP_LOG_ERROR, "probe '%s' at %p: return probes refused: %s",
		o->name ? o->name : "?", addr, np_unwind_refusal());
	return -EOPNOTSUPP;
}

/* Where the probes of the batch being attached are reported. */
static struct {
	struct np_probe **probes;
	int *errs;
	size_t cnt;
} attaching;

/* A queued region could not be patched in: its site's one probe goes
 * (a second probe at a queued region's address flushes the batch first),
 * unless it is an AUTO probe whose jump a thread kept out (EAGAIN): it
 * gets a breakpoint instead, once. */
static void placement_failed(struct np_site *s, int err)
{
	struct np_probe *p = s->probes;
	if (p && p->requested == NP_STRATEGY_AUTO && err == -EAGAIN && !p->fell_back) {
		p->fell_back = true;
		if (np_region_place_trap(s, p, p->name) == 0) {
			np_logf(NP_LOG_INFO, "probe '%s': the jump at 0x%llx could not be written "
					     "(%s): TRAP instead", p->name,
				(unsigned long long)s->addr, strerror(-err));
			return;
		}
	}
	np_logf(NP_LOG_ERROR, "probe '%s': cannot patch 0x%llx: %s", p ? p->name : "?",
		(unsigned long long)s->addr, strerror(-err));
	if (p)
		site_unlink(s, p);
	np_site_release(s);
	for (size_t i = 0; p && i < attaching.cnt; i++)
		if (attaching.probes[i] == p) {
			attaching.probes[i] = NULL;
			attaching.errs[i] = err;
		}
	if (p)
		probe_delete(p);
}

/* Attach cnt probes in one pass of the patching protocol: out[i] and
 * errs[i] (0 or -errno) for each. The caller checked that it is not in a
 * handler and that the engine is up. */
static size_t attach_all(void *const *addrs, const struct np_probe_opts *const *opts, size_t cnt,
			 struct np_probe **out, int *errs)
{
	struct np_probe_opts o;
	bool returns = false;
	for (size_t i = 0; i < cnt; i++)
		returns |= opts[i] && opts[i]->sz > offsetof(struct np_probe_opts, on_return) &&
			   opts[i]->on_return;
	np_fault_guard_refresh(); /* handlers' np_read_user takes the fast path */
	bool refused = returns && np_unwind_guard_refresh(true) == -EOPNOTSUPP;
	int err = np_engine_lock();
	if (err) {
		for (size_t i = 0; i < cnt; i++)
			out[i] = NULL, errs[i] = err;
		return 0;
	}
	np_code_begin();
	np_thread_pool_stock();
	attaching.probes = out, attaching.errs = errs, attaching.cnt = cnt;
	np_batch_begin(placement_failed);
	for (size_t i = 0; i < cnt; i++) {
		memset(&o, 0, sizeof(o));
		if (opts[i])
			memcpy(&o, opts[i], opts[i]->sz < sizeof(o) ? opts[i]->sz : sizeof(o));
		errs[i] = refused && o.on_return ? refuse_return(addrs[i], &o, &out[i])
						 : attach_locked(addrs[i], opts[i] ? &o : NULL, &out[i]);
	}
	np_batch_end();
	attaching.cnt = 0;
	np_engine_unlock();
	size_t placed = 0;
	for (size_t i = 0; i < cnt; i++)
		placed += out[i] != NULL;
	return placed;
}

NP_API struct np_probe *np_probe_attach(void *addr, const struct np_probe_opts *opts)
{
	struct np_probe *p;
	int err;

	if (np_in_handler())
		return fail_null(EDEADLK);
	if ((err = np_engine_init()))
		return fail_null(-err);
	attach_all(&addr, &opts, 1, &p, &err);
	if (err)
		errno = -err;
	return p;
}

NP_API int np_probe_attach_many(const struct np_probe_many_opts *mo)
{
	int err;
	if (!mo || mo->sz < offsetof(struct np_probe_many_opts, errs) || (mo->cnt && (!mo->addrs ||
	    !mo->opts || !mo->probes)) || mo->cnt > INT_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (np_in_handler()) {
		errno = EDEADLK;
		return -1;
	}
	if ((err = np_engine_init())) {
		errno = -err;
		return -1;
	}
	int *errs = mo->sz > offsetof(struct np_probe_many_opts, errs) ? mo->errs : NULL;
	int *own = errs ? NULL : calloc(mo->cnt ? mo->cnt : 1, sizeof(*own));
	if (!errs && !own) {
		errno = ENOMEM;
		return -1;
	}
	size_t placed = attach_all(mo->addrs, mo->opts, mo->cnt, mo->probes, errs ? errs : own);
	for (size_t i = 0; errs && i < mo->cnt; i++)
		errs[i] = -errs[i]; /* errno values */
	free(own);
	return (int)placed;
}

/* --- detach --------------------------------------------------------------- */

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (struct np_site *const *)a;
	uintptr_t y = (uintptr_t) * (struct np_site *const *)b;
	return x < y ? -1 : x > y;
}

/* The sites of probes, each once. */
static size_t sites_of(struct np_probe *const *probes, size_t cnt, struct np_site **sites)
{
	size_t n = 0, u = 0;
	for (size_t i = 0; i < cnt; i++)
		if (probes[i] && !probes[i]->detached)
			sites[n++] = probes[i]->site;
	np_qsort(sites, n, sizeof(*sites), by_address);
	for (size_t i = 0; i < n; i++)
		if (!u || sites[u - 1] != sites[i])
			sites[u++] = sites[i];
	return u;
}

/* New handler lists for the sites. Once the lock is released, one
 * membarrier for all and a wait for the handlers still running the old
 * ones (np_quiesce_later): when detach returns, no handler of a probe
 * that left a list runs any more. The code is restored before that
 * wait: a thread still in a handler goes on through its trampoline,
 * which is never reused, and comes back to the original code; a patch
 * over where it comes back waits for it (np_patch_lands_inside). */
static int republish(struct np_site **sites, size_t n)
{
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		struct np_hlist *old = NULL;
		err = site_publish_begin(sites[i], &old);
		if (old)
			np_quiesce_later(sites[i], free_list, old, NULL, false);
	}
	return err;
}

/* The sites left without probes: their regions restored, all in one pass
 * of the protocol, then the sites released. The others get trampolines
 * for the probes they keep. */
static int remove_or_refresh(struct np_site **sites, size_t n)
{
	int err = 0, e;
	np_batch_begin(NULL);
	for (size_t i = 0; i < n; i++) {
		struct np_site *s = sites[i];
		if (s->probes) {
			site_set_modes(s);
			e = np_region_refresh_after_detach(s->region);
		} else {
			e = np_region_remove_site(s);
		}
		err = err ? err : e;
	}
	e = np_batch_end();
	err = err ? err : e;
	for (size_t i = 0; i < n; i++)
		if (!sites[i]->probes)
			np_site_release(sites[i]);
	return err;
}

static bool any_attached(struct np_probe *const *probes, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++)
		if (probes[i] && !probes[i]->detached)
			return true;
	return false;
}

static int detach_all(struct np_probe *const *probes, size_t cnt)
{
	/* nothing to do, and nothing may be done: an agent whose session
	 * failed before any attach removes its (no) probes with an engine
	 * that was never initialised (its barrier has no page to touch) */
	if (!any_attached(probes, cnt))
		return 0;
	struct np_site **sites = calloc(cnt ? cnt : 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	np_fault_guard_refresh(); /* notice a program that replaced it */
	int lerr = np_engine_lock();
	if (lerr) {
		free(sites);
		return lerr;
	}
	np_code_begin();
	size_t n = sites_of(probes, cnt, sites);
	for (size_t i = 0; i < cnt; i++)
		if (probes[i] && !probes[i]->detached) {
			site_unlink(probes[i]->site, probes[i]);
			probes[i]->detached = true;
		}
	int err = republish(sites, n); /* no handler of these probes runs after the unlock */
	int e = remove_or_refresh(sites, n);
	np_engine_unlock();
	free(sites);
	return err ? err : e;
}

NP_API int np_probe_detach(struct np_probe *p)
{
	if (!p) {
		errno = EINVAL;
		return -1;
	}
	return np_probe_detach_many(&p, 1);
}

NP_API int np_probe_detach_many(struct np_probe *const *probes, size_t cnt)
{
	if (cnt && !probes) {
		errno = EINVAL;
		return -1;
	}
	if (np_in_handler()) {
		errno = EDEADLK;
		return -1;
	}
	int err = detach_all(probes, cnt);
	if (err) {
		np_logf(NP_LOG_ERROR, "detach of %zu probe(s): %s", cnt, strerror(-err));
		errno = -err;
		return -1;
	}
	return 0;
}

NP_API void np_probe_free(struct np_probe *p)
{
	if (!p)
		return;
	np_probe_detach(p);
	if (np_engine_lock())
		return; /* a vfork child: the handle is its parent's too */
	probe_delete(p);
	np_engine_unlock();
}

NP_API enum np_strategy np_probe_strategy(const struct np_probe *p)
{
	if (!p || p->detached || !p->site || !p->site->region)
		return NP_STRATEGY_AUTO;
	return p->site->region->strategy;
}

NP_API void *np_probe_addr(const struct np_probe *p)
{
	return p ? (void *)p->addr : NULL;
}

void np_probe_mark_internal(struct np_probe *p)
{
	p->internal = true;
}

NP_API uint64_t np_probe_hits(const struct np_probe *p)
{
	return p ? np_thread_sum_hits(p->slot) - p->hits_base : 0;
}

NP_API void np_maintain(void)
{
	if (np_in_handler() || np_engine_init())
		return;
	np_unwind_guard_refresh(false); /* unwinders of modules loaded since */
	if (np_engine_lock())
		return;
	np_thread_pool_stock();
	np_watch_maintain(); /* watch_hit.c: modules loaded since */
	np_engine_unlock();
}

NP_API uint64_t np_missed_by(enum np_miss_reason why)
{
	if ((unsigned)why >= NP_MISS_REASONS)
		return 0;
	return np_thread_sum_why(why) + np_miss_no_thread(why);
}

NP_API uint64_t np_probe_missed(const struct np_probe *p)
{
	return p ? np_thread_sum_missed(p->slot) - p->missed_base + atomic_load(&p->missed_global)
		 : 0;
}

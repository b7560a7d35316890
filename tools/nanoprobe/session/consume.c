/* SPDX-License-Identifier: MIT */
/*
 * The consumer side of the rings (the producer is src/agent/handlers.c).
 *
 * The traced program can write anything into this memory: a bug in it, or
 * in the agent, must cost us a record, never a crash or a wild read. So
 * every index is checked against the ring before use, each record is
 * copied out before it is parsed, and one that does not parse is counted as
 * corrupt and skipped; a length that cannot be trusted discards what is
 * left in that ring.
 */
#include "consume.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_MAX (sizeof(struct np_rec) + NP_MAX_ARGS * NP_STRING_SLOT)
#define SCRIPT_REC_MAX (sizeof(struct np_rec) + (64u << 10))

uint64_t session_script_ring_extra, session_script_bytes;

static struct np_ring *ring_at(const struct consumer *c, uint32_t i)
{
	return np_shm_ring(c->shm, c->nprobes, c->stride, i);
}

int consumer_open(struct consumer *c, int fd, const struct np_msg_hello *h,
		  const struct probe_set *set, struct totals *t)
{
	struct stat st;
	memset(c, 0, sizeof(*c));
	c->nprobes = h->nprobes;
	c->nrings = h->nrings;
	c->ring_bytes = h->ring_bytes;
	uint64_t extra = h->script_len ? session_script_ring_extra
			 : h->hists    ? np_ring_hists_size(h->hists)
				       : 0;
	c->stride = (uint32_t)np_ring_stride_extra(h->nprobes, h->ring_bytes, extra);
	c->size = np_shm_size(c->nprobes, c->nrings, c->stride) +
		  (h->script_len ? session_script_bytes : 0);
	c->set = set;
	c->fd = fd;
	c->hists = h->hists;
	c->totals = t;
	if (fstat(fd, &st) || (size_t)st.st_size < c->size)
		return -EPROTO;
	void *p = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	c->shm = p;
	const struct np_shm_header *hdr = p;
	if (hdr->magic != NP_PROTO_MAGIC || hdr->nprobes != c->nprobes ||
	    hdr->nrings != c->nrings || hdr->ring_bytes != c->ring_bytes ||
	    hdr->ring_stride != c->stride) {
		consumer_close(c);
		return -EPROTO;
	}
	return 0;
}

void consumer_close(struct consumer *c)
{
	if (c->shm)
		munmap(c->shm, c->size);
	c->shm = NULL;
}

/* --- rings nobody touched ------------------------------------------------
 * A session has thousands of rings (session.c: 4096 when counting, 1024
 * of 256 KiB for events), for the threads a program may have at once. A
 * ring's state is in its first page, and reading it would make the kernel
 * allocate and clear that page of the memfd: 16 MiB for one thread's
 * program on the first drain, most of what the command spent to start.
 * A page that no process touched is a hole of the memfd and reads as
 * zeros, NP_RING_FREE: there is nothing to read there. lseek(SEEK_DATA)
 * finds the first page past an offset that is not a hole (a page swapped
 * out counts as data), so the rings past the last one seen touched cost
 * one call per drain. Rings below it are read as before: agents claim the
 * lowest free ring, so in practice those are the ones in use. (lseek moves
 * the file position the agents share with this descriptor; they only map
 * the memory.) */

static uint32_t rings_in_reach(const struct consumer *c)
{
	size_t base = np_shm_rings_offset(c->nprobes);
	uint32_t reach = c->reach;
	while (c->shm && reach < c->nrings) {
		off_t pos = lseek(c->fd, (off_t)(base + (size_t)reach * c->stride), SEEK_DATA);
		if (pos < 0) /* ENXIO: all holes past it; else we cannot tell: read all */
			return errno == ENXIO ? reach : c->nrings;
		uint64_t ring = ((uint64_t)pos - base) / c->stride;
		if (ring >= c->nrings)
			break; /* data past the rings: a script's shared area */
		reach = (uint32_t)ring + 1;
	}
	return reach;
}

/* --- records ------------------------------------------------------------- */

static bool decode_args(const struct rprobe *p, const unsigned char *buf, uint32_t len,
			struct event *ev)
{
	uint32_t at = sizeof(struct np_rec);
	for (unsigned i = 0; i < p->m.nargs; i++) {
		if (p->m.args[i].type != NP_FT_STRING) {
			if (at + 8 > len)
				return false;
			memcpy(&ev->arg[i].num, buf + at, 8);
			at += 8;
			continue;
		}
		uint16_t n;
		if (at + 2 > len)
			return false;
		memcpy(&n, buf + at, 2);
		uint32_t used = (2u + n + 7u) & ~7u;
		if (n >= NP_STRING_MAX || at + used > len)
			return false;
		ev->arg[i].str = (const char *)buf + at + 2;
		ev->arg[i].len = n;
		at += used;
	}
	return at == len;
}

/* Where a copied record sits in the batch, and whose it is. */
struct batch_ref {
	size_t off;
	uint32_t len;
	int tid;
	uint64_t ts, seq;
	char comm[16];
};

static bool decode(const struct consumer *c, const unsigned char *buf,
		   const struct batch_ref *ref, struct event *ev)
{
	struct np_rec rec;
	memcpy(&rec, buf, sizeof(rec));
	if (rec.probe >= c->set->n || rec.probe >= c->nprobes)
		return false;
	memset(ev, 0, sizeof(*ev));
	ev->probe = &c->set->p[rec.probe];
	ev->tid = ref->tid;
	memcpy(ev->comm, ref->comm, sizeof(ev->comm));
	ev->cpu = rec.cpu;
	ev->ts = rec.ts;
	ev->pc = rec.pc;
	ev->func = rec.func;
	ev->entry_ts = rec.entry_ts;
	ev->fault_mask = rec.fault_mask;
	ev->flags = rec.reserved;
	return decode_args(ev->probe, buf, ref->len, ev);
}

/* --- batches: the records of one drain, in time order ---------------------
 * Each thread's ring is in order, but the command prints one stream: the
 * records of all rings are copied out, sorted by timestamp, then handed on,
 * as the kernel merges its per-CPU buffers. */
#define BATCH_MAX (16u << 20) /* bytes copied before a batch is flushed early */

struct batch {
	unsigned char *arena;
	size_t used, cap;
	struct batch_ref *refs;
	size_t n, nref_cap;
	uint64_t seq;
};
static struct batch batch;

static bool batch_add(const unsigned char *rec, uint32_t len, const struct np_ring *r)
{
	if (batch.used + len > batch.cap) {
		size_t cap = batch.cap ? batch.cap * 2 : 1u << 16;
		while (cap < batch.used + len)
			cap *= 2;
		unsigned char *a = realloc(batch.arena, cap);
		if (!a)
			return false;
		batch.arena = a;
		batch.cap = cap;
	}
	if (batch.n == batch.nref_cap) {
		size_t cap = batch.nref_cap ? batch.nref_cap * 2 : 1024;
		struct batch_ref *refs = realloc(batch.refs, cap * sizeof(*refs));
		if (!refs)
			return false;
		batch.refs = refs;
		batch.nref_cap = cap;
	}
	struct batch_ref *ref = &batch.refs[batch.n++];
	memcpy(batch.arena + batch.used, rec, len);
	memcpy(&ref->ts, batch.arena + batch.used + offsetof(struct np_rec, ts), sizeof(ref->ts));
	ref->off = batch.used;
	ref->len = len;
	ref->tid = r->tid;
	ref->seq = batch.seq++;
	memcpy(ref->comm, r->comm, sizeof(ref->comm));
	ref->comm[sizeof(ref->comm) - 1] = 0;
	batch.used += len;
	return true;
}

static int by_time(const void *a, const void *b)
{
	const struct batch_ref *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void batch_flush(struct consumer *c, const struct session_ops *ops)
{
	if (batch.n)
		qsort(batch.refs, batch.n, sizeof(*batch.refs), by_time);
	for (size_t i = 0; i < batch.n && ops->on_record; i++)
		ops->on_record(batch.arena + batch.refs[i].off, batch.refs[i].len, batch.refs[i].tid,
			       batch.refs[i].comm, ops->cookie);
	for (size_t i = 0; i < batch.n && !ops->on_record; i++) {
		struct event ev;
		if (!decode(c, batch.arena + batch.refs[i].off, &batch.refs[i], &ev))
			c->totals->corrupt++;
		else if (ops->on_event)
			ops->on_event(&ev, ops->cookie);
	}
	batch.n = batch.used = 0;
}

static void drain_ring(struct consumer *c, struct np_ring *r, const struct session_ops *ops)
{
	const unsigned char *data = np_ring_data(r, c->nprobes);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	if (head - tail > c->ring_bytes) { /* includes head < tail */
		c->totals->corrupt++;
		tail = head;
	}
	while (tail < head) {
		uint32_t off = (uint32_t)(tail & (c->ring_bytes - 1));
		uint32_t len;
		uint16_t probe;
		memcpy(&len, data + off, sizeof(len));
		memcpy(&probe, data + off + 4, sizeof(probe));
		if (len < 8 || len % 8 || len > head - tail || len > c->ring_bytes - off) {
			c->totals->corrupt++; /* cannot find the next record */
			tail = head;
			break;
		}
		if (probe != NP_REC_PAD &&
		    (len < sizeof(struct np_rec) || len > (ops->on_record ? SCRIPT_REC_MAX : REC_MAX) ||
		     !batch_add(data + off, len, r)))
			c->totals->corrupt++;
		if (batch.used >= BATCH_MAX)
			batch_flush(c, ops);
		tail += len;
	}
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
}

/* --- totals --------------------------------------------------------------- */

static void hist_add(struct np_hist *to, const struct np_hist *from)
{
	struct np_hist h;
	memcpy(&h, from, sizeof(h)); /* one read of shared memory */
	if (!h.count)
		return;
	if (!to->count || h.min < to->min)
		to->min = h.min;
	if (h.max > to->max)
		to->max = h.max;
	to->count += h.count;
	to->sum += h.sum;
	for (unsigned i = 0; i < NP_HIST_BUCKETS; i++)
		to->bucket[i] += h.bucket[i];
}

static void ring_add(const struct consumer *c, struct np_ring *r, struct totals *t)
{
	const uint64_t *counts = np_ring_counts(r);
	for (uint32_t i = 0; i < c->nprobes; i++)
		t->counts[i] += counts[i];
	const struct np_hist *h = c->hists ? np_ring_hists(r, c->nprobes, c->ring_bytes) : NULL;
	for (uint32_t i = 0; h && t->hists && i < c->hists && i < c->set->n; i++)
		hist_add(&t->hists[i], &h[i]);
	t->drops += r->drops;
}

void consumer_totals(const struct consumer *c, struct totals *now)
{
	const struct totals *f = c->totals;
	memcpy(now->counts, f->counts, c->nprobes * sizeof(uint64_t));
	if (now->hists && f->hists)
		memcpy(now->hists, f->hists, c->set->n * sizeof(struct np_hist));
	now->drops = f->drops;
	now->corrupt = f->corrupt;
	/* a free ring holds nothing: reap_ring folded it and zeroed it */
	uint32_t reach = rings_in_reach(c);
	for (uint32_t i = 0; c->shm && i < reach; i++)
		if (__atomic_load_n(&ring_at(c, i)->state, __ATOMIC_ACQUIRE) != NP_RING_FREE)
			ring_add(c, ring_at(c, i), now);
	now->no_ring = f->no_ring + (c->shm ? c->shm->no_ring : 0);
	now->untraced_forks = c->shm ? c->shm->untraced_forks : f->untraced_forks;
	now->vfork_unrecorded = c->shm ? c->shm->vfork_unrecorded : f->vfork_unrecorded;
	now->missed = f->missed;
	for (int r = 0; r < NP_SHM_MISS_REASONS; r++)
		now->missed_why[r] = c->shm ? c->shm->missed_why[r] : f->missed_why[r];
	for (uint32_t i = 0; c->shm && i < c->nprobes; i++) {
		uint64_t m = np_shm_missed(c->shm)[i];
		now->missed += m;
		if (now->missed_by_probe)
			now->missed_by_probe[i] = (f->missed_by_probe ? f->missed_by_probe[i] : 0) + m;
	}
}

/* A thread that is gone never writes its ring again: fold it and free it. */
static void reap_ring(struct consumer *c, struct np_ring *r, uint32_t i)
{
	if (c->ops && c->ops->on_reap)
		c->ops->on_reap(i, c->ops->cookie); /* it wipes the script's area */
	ring_add(c, r, c->totals);
	memset(np_ring_counts(r), 0, c->nprobes * sizeof(uint64_t));
	if (c->hists)
		memset(np_ring_hists(r, c->nprobes, c->ring_bytes), 0,
		       c->hists * sizeof(struct np_hist));
	r->drops = 0;
	r->head = r->tail = 0;
	r->tid = r->pid = 0;
	memset(r->comm, 0, sizeof(r->comm));
	__atomic_store_n(&r->state, NP_RING_FREE, __ATOMIC_RELEASE);
}

/* A thread of any process of the tree: /proc has every thread by its id,
 * listed or not. One whose process lives on as a zombie is gone too. */
static bool thread_gone(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return fd < 0 && e == ENOENT;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

void consumer_drain(struct consumer *c, const struct session_ops *ops, bool reap)
{
	c->reach = rings_in_reach(c);
	for (uint32_t i = 0; c->shm && i < c->reach; i++) {
		struct np_ring *r = ring_at(c, i);
		uint32_t state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
		if (state == NP_RING_FREE)
			continue;
		/* gone first: what it wrote before dying is drained below */
		bool gone = reap && state == NP_RING_OWNED && thread_gone(r->tid);
		drain_ring(c, r, ops);
		if (gone)
			reap_ring(c, r, i);
	}
	batch_flush(c, ops);
}

/* SPDX-License-Identifier: MIT */
/*
 * Executable memory near the code it serves.
 *
 * Trampolines must sit within the reach of the patch branch (+/-2 GiB for
 * x86 rel32, +/-128 MiB for arm64 b), so chunks are mapped into the gaps of
 * /proc/self/maps closest to the probed module. Chunks are private and
 * never writable through their own mapping (W^X): every write to code, ours
 * or the program's, goes through code_write.c. Private mappings also mean
 * a forked child keeps its own copy of every trampoline. The trampolines
 * written while a batch is built are staged here and written together,
 * before any other write to code (np_code_write).
 */
#include "core/code_write.h"
#include "core/codemem.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/maps.h"
#include "core/reclaim.h"
#include "host/host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHUNK (256 * 1024)

struct chunk {
	uint64_t base, used;
	struct chunk *next;
};

static struct chunk *chunks;

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static bool within(uint64_t a, uint64_t b, uint64_t reach)
{
	uint64_t d = a > b ? a - b : b - a;
	return reach == 0 || d < reach;
}

static uint64_t try_map(uint64_t hint)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (hint ? MAP_FIXED_NOREPLACE : 0);
	void *p = mmap((void *)hint, CHUNK, PROT_READ | PROT_EXEC, flags, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	if (hint && (uint64_t)p != hint) { /* kernels without NOREPLACE */
		munmap(p, CHUNK);
		return 0;
	}
	return (uint64_t)p;
}

/* Room left above the program break for the heap to grow into: a chunk
 * right after [heap] made brk fail, and malloc fell back to mmap (seen as
 * extra mmap calls in sqlite3 under probes). */
#define BRK_ROOM (1ull << 30)

static uint64_t program_break(void)
{
	long brk = syscall(SYS_brk, 0);
	return brk > 0 ? (uint64_t)brk : 0;
}

#define LOWEST_MAP (1ull << 20) /* well above vm.mmap_min_addr */

/* Where in [lo, hi) a chunk would be nearest to 'aim' and within reach of
 * 'near'; *best improved when closer than *best_d. */
static void consider(uint64_t lo, uint64_t hi, uint64_t aim, uint64_t near, uint64_t reach,
		     uint64_t *best, uint64_t *best_d)
{
	uint64_t pg = page_size();
	if (reach) { /* only the part of the gap within reach counts */
		uint64_t rlo = near > reach ? ((near - reach) + pg) & ~(pg - 1) : 0;
		lo = lo > rlo ? lo : rlo;
		hi = hi < near + reach - 1 ? hi : (near + reach - 1) & ~(pg - 1);
	}
	if (hi < lo || hi - lo < CHUNK)
		return;
	uint64_t cand = aim < lo ? lo : (aim > hi - CHUNK ? hi - CHUNK : aim & ~(pg - 1));
	uint64_t d = cand > aim ? cand - aim : aim - cand;
	if (d < *best_d && within(cand, near, reach) && within(cand + CHUNK, near, reach)) {
		*best = cand;
		*best_d = d;
	}
}

/* The free gap closest to 'aim' that holds a chunk within reach of 'near',
 * keeping [keep_lo, keep_hi) free (a gap around it counts as its two
 * sides). The gap below the lowest mapping counts too: that is often the
 * program itself (a PIE under qemu-user, a non-PIE program), the aim may
 * lie below it, and with arm64's 128 MiB reach the gap above the heap's
 * room is too far. */
static uint64_t gap_near(const struct np_maps *m, uint64_t aim, uint64_t near, uint64_t reach,
			 uint64_t keep_lo, uint64_t keep_hi)
{
	uint64_t best = 0, best_d = UINT64_MAX, pg = page_size();
	for (int i = -1; i + 1 < m->n; i++) {
		uint64_t lo = i < 0 ? LOWEST_MAP : (m->v[i].end + pg - 1) & ~(pg - 1);
		uint64_t hi = m->v[i + 1].start;
		if (lo >= keep_hi || hi <= keep_lo) {
			consider(lo, hi, aim, near, reach, &best, &best_d);
			continue;
		}
		consider(lo, keep_lo, aim, near, reach, &best, &best_d);
		consider(keep_hi, hi, aim, near, reach, &best, &best_d);
	}
	return best;
}

/* The gap nearest to 'aim', leaving the heap room above the break unless
 * nothing else is in reach (and never for a window: strict). 0 if none.
 * The map of the address space is read afresh once per API call, then
 * taken from the cache (which a chunk mapped since invalidates): one
 * attach of thousands of riscv64 probes near a module larger than jal's
 * reach searched, probe after probe, for a gap that was not there, and
 * each search read /proc/self/maps, about a millisecond under qemu-user
 * (sort with every function of libc probed did not finish placing them
 * within the command's 60 s). */
static uint64_t pick_gap(uint64_t aim, uint64_t near, uint64_t reach, bool strict)
{
	np_maps_expire_old();
	const struct np_maps *m = np_maps_cached();
	if (!m)
		return 0;
	uint64_t brk = program_break();
	uint64_t at = brk ? gap_near(m, aim, near, reach, brk, brk + BRK_ROOM) : 0;
	/* Nothing else in reach (arm64's 128 MiB from a non-PIE program
	 * whose lower gap is full): the heap's room it is, but as far from
	 * the break as reach allows, so the heap still grows by brk until it
	 * gets there. Next to the break, the program's malloc found brk
	 * failing at once and fell back to mmap (python3 under qemu-aarch64,
	 * every function probed). */
	if (!at && !strict)
		at = gap_near(m, brk ? brk + BRK_ROOM : aim, near, reach, 0, 0);
	return at;
}

/* A chunk in the gap nearest to 'aim'. When the gap the map shows is taken
 * by now (something was mapped since, such as the engine's own thread
 * pool on the first attach; qemu-user places mappings next to the
 * program), read it again once. */
static uint64_t map_near(uint64_t aim, uint64_t near, uint64_t reach, bool strict)
{
	for (int tries = 0; tries < 2; tries++) {
		uint64_t at = pick_gap(aim, near, reach, strict);
		if (!at)
			return 0; /* none in a map read during this call */
		if ((at = try_map(at)))
			return at;
		np_maps_invalidate();
	}
	return 0;
}

/* A new chunk: anywhere (near == 0), or within reach of near as close to
 * aim as can be; strict: within reach or not at all, heap room kept. */
static struct chunk *chunk_new(uint64_t aim, uint64_t near, uint64_t reach, bool strict)
{
	uint64_t base = near ? map_near(aim, near, reach, strict) : try_map(0);
	if (!base)
		return NULL;
	struct chunk *c = calloc(1, sizeof(*c));
	if (!c) {
		munmap((void *)base, CHUNK);
		return NULL;
	}
	c->base = base;
	c->next = chunks;
	chunks = c;
	np_maps_invalidate();
	return c;
}

struct reach_of {
	uint64_t near, reach;
};

static bool fits_reach(uint64_t at, size_t len, void *cookie)
{
	const struct reach_of *r = cookie;
	return !r->near || (within(at, r->near, r->reach) && within(at + len, r->near, r->reach));
}

uint64_t np_codemem_alloc(uint64_t near, size_t len, uint64_t reach)
{
	return np_codemem_alloc_aimed(near, near, len, reach);
}

uint64_t np_codemem_alloc_aimed(uint64_t near, uint64_t aim, size_t len, uint64_t reach)
{
	struct reach_of want = {near, reach};
	len = (len + 15) & ~(size_t)15;
	if (len > CHUNK)
		return 0;
	/* reclaimed memory first (after a census, when one is due), then a
	 * chunk's untouched end, and only then a new chunk */
	uint64_t at = np_reclaim_take(len, fits_reach, &want, CHUNK);
	if (at)
		return at;
	for (struct chunk *c = chunks; c; c = c->next)
		if (c->used + len <= CHUNK && (!near || (within(c->base, near, reach) &&
							 within(c->base + CHUNK, near, reach)))) {
			at = c->base + c->used;
			c->used += len;
			return at;
		}
	/* placed where the caller aims it (region.c asks the planner where a
	 * jump that ends on a direct call needs its trampoline) */
	struct chunk *c = chunk_new(near ? aim : 0, near, reach, false);
	if (!c)
		return 0;
	c->used = len;
	return c->base;
}

/* Bytes of chunks handed out at least once (reused ones count once): what
 * trampoline memory has cost so far. For tests. */
uint64_t np_codemem_committed(void)
{
	uint64_t n = 0;
	for (const struct chunk *c = chunks; c; c = c->next)
		n += c->used;
	return n;
}

/* Each window costs a chunk and a mapping (a module's call sites share
 * one): past this many, callers do without. */
#define MAX_WINDOW_CHUNKS 64
static unsigned window_chunks;

static bool fits_window(uint64_t at, size_t len, void *cookie)
{
	const uint64_t *w = cookie;
	(void)len;
	return at >= w[0] && at < w[1];
}

uint64_t np_codemem_alloc_in(uint64_t lo, uint64_t size, size_t len)
{
	uint64_t hi = lo + size;
	uint64_t window[2] = {lo, hi};
	len = (len + 15) & ~(size_t)15;
	if (len > CHUNK || hi < lo)
		return 0;
	uint64_t at = np_reclaim_take(len, fits_window, window, CHUNK);
	if (at)
		return at;
	for (struct chunk *c = chunks; c; c = c->next) {
		at = c->base + c->used;
		if (c->used + len <= CHUNK && at >= lo && at < hi) {
			c->used += len;
			return at;
		}
	}
	/* a chunk wholly inside the window, as near its middle as can be */
	uint64_t mid = lo + size / 2;
	struct chunk *c = window_chunks < MAX_WINDOW_CHUNKS && size > CHUNK
				  ? chunk_new(mid, mid, size / 2, true) : NULL;
	if (!c)
		return 0;
	window_chunks++;
	c->used = len;
	return c->base;
}

/* Is pc inside trampoline memory (a trampoline or an out-of-line copy,
 * live or retired)? Read by a signal handler while the engine waits for
 * it (stop.c, stack_scan.c): the list only grows, under the engine lock (chunks are
 * never unmapped: reclaimed memory is reused in place). */
bool np_codemem_holds(uint64_t pc)
{
	for (const struct chunk *c = chunks; c; c = c->next)
		if (pc >= c->base && pc < c->base + CHUNK)
			return true;
	return false;
}

/* Every trampoline built, with where it jumps back to (its region's end),
 * kept for as long as its memory is (until a census reclaims it,
 * reclaim.c): a thread still inside a retired one lands there, whatever
 * has been patched over it since. Memory reused holds a newer record,
 * which is looked for first. */
struct tramp_rec {
	uint64_t at, end, land;
};
static struct tramp_rec *recs;
static size_t nrecs, recs_cap;
static bool recs_lost; /* out of memory once: every range is at risk */

void np_codemem_note_tramp(uint64_t at, size_t len, uint64_t land)
{
	if (nrecs == recs_cap) {
		size_t cap = recs_cap ? 2 * recs_cap : 64;
		struct tramp_rec *v = realloc(recs, cap * sizeof(*v));
		if (!v) {
			recs_lost = true;
			return;
		}
		recs = v, recs_cap = cap;
	}
	recs[nrecs++] = (struct tramp_rec){at, at + len, land};
}

/* The records of trampolines whose memory was reclaimed (gone(at)): no
 * thread is in one. Not while a signal handler reads them (a census has
 * had every answer before it frees anything). */
void np_codemem_forget_tramps(bool (*gone)(uint64_t at, void *cookie), void *cookie)
{
	size_t k = 0;
	for (size_t i = 0; i < nrecs; i++)
		if (!gone(recs[i].at, cookie))
			recs[k++] = recs[i];
	nrecs = k;
}

/* Can a thread in some trampoline land strictly inside (start, end)? */
bool np_codemem_lands_inside(uint64_t start, uint64_t end)
{
	if (recs_lost)
		return true;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].land > start && recs[i].land < end)
			return true;
	return false;
}

/* Does the trampoline holding pc land strictly inside (start, end)? Code
 * memory that is no region's trampoline (the redirect and return
 * routines, which go where a context says) lands nowhere. Read by a signal
 * handler while the engine waits for it (stack_scan.c): the records change
 * only under the engine lock, and not while it waits. */
bool np_codemem_leads_inside(uint64_t pc, uint64_t start, uint64_t end)
{
	if (!np_codemem_holds(pc))
		return false;
	if (recs_lost)
		return true;
	for (size_t i = nrecs; i-- > 0;)
		if (pc >= recs[i].at && pc < recs[i].end)
			return recs[i].land > start && recs[i].land < end;
	return false;
}

/* Descriptors the engine (or the agent) keeps open live high, away from
 * the low numbers a program may expect to get from its own open(). */
int np_fd_move_high(int fd)
{
	int high = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, NP_FD_HIGH) : -1;
	if (high < 0)
		return fd; /* a low limit: keep the one we have */
	close(fd);
	return high;
}

/* The first descriptor at NP_FD_HIGH grows the process's descriptor
 * table, and while another thread shares the table the kernel first waits
 * for an RCU grace period (expand_fdtable): 15 to 27 ms for the first
 * traced process of a session, whose table came small from the command's
 * fork (an exec'd one inherits its parent's, grown already). Grown while
 * the program's thread is the only one, it costs microseconds and stays
 * grown. For np_engine_preinit: a descriptor for a moment, errno kept. */
void np_fd_table_grow(void)
{
	int saved = errno;
	int fd = open("/", O_PATH | O_CLOEXEC);
	int high = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, NP_FD_HIGH) : -1;
	if (high >= 0)
		close(high);
	if (fd >= 0)
		close(fd);
	errno = saved;
}

void np_code_begin(void)
{
	np_maps_call_begin();
	np_reclaim_call_begin();
}

/* Trampolines written while a batch is being built are gathered into one
 * write per run of nearby allocations (the gaps between them rewritten
 * with the bytes they hold), written before any other write to code,
 * so always before a jump can lead to them, and by np_codemem_flush before
 * the trap table can (a late SIGTRAP at a region's address goes to its
 * trampoline). */
#define STAGE_MAX (64 * 1024)
static struct {
	bool on; /* a batch is open (np_codemem_stage) */
	uint64_t at;
	size_t len;
	uint8_t buf[STAGE_MAX];
} stage;

void np_codemem_stage(bool on)
{
	stage.on = on;
}

static int stage_flush(void);

int np_codemem_flush(void)
{
	return stage_flush();
}

static int stage_flush(void)
{
	size_t len = stage.len;
	stage.len = 0;
	return len ? np_code_write_now(stage.at, stage.buf, len) : 0;
}

static const struct chunk *chunk_of(uint64_t addr)
{
	for (const struct chunk *c = chunks; c; c = c->next)
		if (addr >= c->base && addr < c->base + CHUNK)
			return c;
	return NULL;
}

/* A run stays within one chunk, whose memory is all readable. The bytes
 * between two allocations staged one after the other are written back as
 * they are: reclaimed memory is handed out out of order, and the gap may
 * hold a live trampoline (a direct write flushes the stage first, so
 * what the gap holds is what was last written there). */
int np_codemem_fill(uint64_t addr, const void *src, size_t len)
{
	if (!stage.on || len > STAGE_MAX)
		return np_code_write(addr, src, len);
	uint64_t end = stage.at + stage.len;
	if (!stage.len || addr < end || addr - end > 256 || addr - stage.at + len > STAGE_MAX ||
	    chunk_of(addr) != chunk_of(stage.at)) {
		int err = stage_flush();
		if (err)
			return err;
		stage.at = addr, end = addr;
	}
	/* the bytes between: their own (reclaimed memory between two
	 * allocations may be another trampoline's, live) */
	memcpy(stage.buf + stage.len, (const void *)(uintptr_t)end, addr - end);
	memcpy(stage.buf + (addr - stage.at), src, len);
	stage.len = addr - stage.at + len;
	return 0;
}

/* Does trampoline memory hold these bytes at addr, or is it about to
 * (staged, not written yet)? Each byte of it is written once. */
bool np_codemem_equals(uint64_t addr, const void *bytes, size_t len)
{
	const uint8_t *b = bytes;
	if (!len || !chunk_of(addr) || chunk_of(addr) != chunk_of(addr + len - 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		uint64_t a = addr + i;
		bool staged = stage.len && a >= stage.at && a - stage.at < stage.len;
		if ((staged ? stage.buf[a - stage.at] : *(const uint8_t *)(uintptr_t)a) != b[i])
			return false;
	}
	return true;
}

int np_code_write(uint64_t addr, const void *src, size_t len)
{
	int err = stage_flush();
	return err ? err : np_code_write_now(addr, src, len);
}

bool np_code_mapped_exec(uint64_t addr, size_t len)
{
	struct np_map m;
	if (np_maps_lookup(addr, &m) || !m.x)
		return false;
	return addr + len <= m.end || np_code_mapped_exec(m.end, addr + len - m.end);
}

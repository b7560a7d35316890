/* SPDX-License-Identifier: MIT */
/*
 * The script interpreter: runs one block of checked bytecode (vm.h) for a
 * hit, on the probed thread.
 *
 * Why an interpreter. A bpftrace action is a handful of operations (load
 * an argument, compare, hash a key, bump a counter); the probe around it
 * costs about 5 ns. A direct-threaded interpreter (np_vm_run) adds about
 * a nanosecond per simple instruction here (docs/performance.md,
 * "Scripts"), so the predicate that rejects a hit (3 instructions) or
 * `@[arg0] = count()` (5) stay within a few ns of hand-written C, which
 * native code generation would at best reach. Generating code would also
 * mean writable-then-executable memory in the traced program, a code
 * generator per ISA (x86-64, arm64, riscv64) and the same verifier on
 * top: the bytecode runs unchanged on every ISA the engine supports, and
 * its safety is checked once on a linear array (vm_verify.c), not on
 * machine code.
 *
 * The rules of the hit path hold here: built with -mgeneral-regs-only,
 * no libc, no lock (a key insert claims its slot with one compare-and-
 * swap; a reader meeting a slot being written waits a bounded number of
 * rounds, then treats it as another key), no allocation, no system call
 * except around reads of arbitrary pointers (str, buf, *ptr), which check
 * that the thread does not block SIGSEGV first (as trace's fetches do).
 * Stack walks and stack arguments read only [sp, stack top) of the
 * thread's own stack, which is mapped: no fault, no system call.
 *
 * Aggregations live in the thread's own area: an entry per key slot with
 * the epoch of the slot it was written under. delete(), clear() and
 * zero() bump the slot's epoch, which voids every thread's entry at once
 * without touching it; the next update of that thread starts from zero.
 */
#include "agent/vm_run.h"

#include "core/nolibc.h"

#include <signal.h>
#include <sys/syscall.h>

#include "host/host.h" /* np_host_syscall */

#define SPIN_ROUNDS 256 /* a key being inserted by another thread */
#define STACK_SPAN (1ull << 30) /* sp to the stack's top at most */

static inline uint64_t ext_of(const struct np_vm_insn *i)
{
	uint64_t v;
	__builtin_memcpy(&v, i + 1, 8);
	return v;
}

/* --- records ---------------------------------------------------------------- */

static void emit(const struct np_vm_env *env, unsigned kind, uint32_t id, const uint8_t *payload,
		 uint32_t len)
{
	struct np_ring *r = env->ring;
	if (!r)
		return;
	uint64_t head = r->head;
	uint32_t total = (uint32_t)sizeof(struct np_rec) + ((len + 7u) & ~7u);
	struct np_rec *rec = np_ring_reserve(r, env->ring_data, env->ring_bytes, total, &head);
	if (!rec)
		return;
	int cpu = np_cpu();
	rec->len = total;
	rec->probe = (uint16_t)env->site->probe;
	rec->cpu = cpu < 0 ? 0xffff : (uint16_t)cpu;
	rec->fault_mask = 0;
	rec->reserved = (uint32_t)kind << 24 | (id & 0xffffff);
	rec->ts = np_clock_ns();
	rec->pc = env->ctx ? np_ctx_pc(env->ctx) : 0;
	rec->func = 0;
	rec->entry_ts = 0;
	uint8_t *p = (uint8_t *)(rec + 1);
	for (uint32_t i = 0; i < len; i++)
		p[i] = payload[i];
	for (uint32_t i = len; i < ((len + 7u) & ~7u); i++)
		p[i] = 0;
	__atomic_store_n(&r->head, head + total, __ATOMIC_RELEASE);
}

/* --- reading the program's memory ------------------------------------------- */

/* The top of the calling thread's stack, so that walks read only
 * [sp, top): a glibc thread's control block (the thread pointer) sits
 * just above its stack, on x86-64 and arm64 alike, and the main thread's
 * stack ends above __libc_stack_end. 0 when sp is in neither (a
 * coroutine's or a signal's alternate stack): nothing is read then. */
static uint64_t stack_top(const struct np_vm_env *env, uint64_t sp)
{
	uint64_t tp = (uint64_t)(uintptr_t)__builtin_thread_pointer();
	if (sp < tp && tp - sp < STACK_SPAN)
		return tp;
	if (sp < env->site->main_stack_end && env->site->main_stack_end - sp < STACK_SPAN)
		return env->site->main_stack_end;
	return 0;
}

static int stack_word(uint64_t addr, uint64_t sp, uint64_t top, uint64_t *v)
{
	if (addr < sp || addr > top - 8 || (addr & 7))
		return -1;
	*v = *(const volatile uint64_t *)(uintptr_t)addr;
	return 0;
}

/* Frame pointers, as the kernel's user stack walk: the pc; at a function
 * entry, the return address on top of the stack (the frame is not built
 * yet); then each frame's saved return address, following saved frame
 * pointers while they stay on the stack. */
static uint32_t walk_stack(const struct np_vm_env *env, uint64_t *frames, uint32_t max)
{
	if (!env->ctx || !max)
		return 0;
	struct np_ctx *ctx = env->ctx;
	uint64_t sp = np_ctx_sp(ctx), top = stack_top(env, sp), fp, ret;
	uint32_t n = 0;
	frames[n++] = np_ctx_is_return(ctx) ? np_ctx_func(ctx) : np_ctx_pc(ctx);
	if (!top)
		return n;
	if (env->site->at_entry && n < max && stack_word(sp, sp, top, &ret) == 0 && ret)
		frames[n++] = ret;
	if (np_ctx_is_return(ctx) && n < max)
		frames[n++] = np_ctx_pc(ctx); /* where the call returns to */
	fp = np_ctx_reg(ctx, env->site->fp_reg);
	while (n < max) {
		uint64_t next;
		if (stack_word(fp, sp, top, &next) || stack_word(fp + 8, sp, top, &ret) || !ret)
			break;
		frames[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static uint64_t sarg(const struct np_vm_env *env, int32_t i)
{
	if (!env->ctx || i < 0)
		return 0;
	uint64_t sp = np_ctx_sp(env->ctx), top = stack_top(env, sp), v = 0;
	if (top)
		stack_word(sp + 8 * ((uint64_t)i + env->site->sarg_skip), sp, top, &v);
	return v;
}

/* Is [addr, addr + len) on the thread's stack, its red zone included? At
 * a probe inside a function the code may keep values below sp there (the
 * trampoline leaves it alone); the pages are mapped, since the trampoline
 * wrote below them. */
static int on_stack(const struct np_vm_env *env, uint64_t addr, uint32_t len)
{
	uint64_t sp = np_ctx_sp(env->ctx), top = stack_top(env, sp);
	uint64_t low = sp - (env->site->at_entry ? 0 : env->site->red_zone);
	return top && addr >= low && addr <= top && len <= top - addr;
}

/* A thread that blocks SIGSEGV or SIGBUS cannot survive even a caught
 * fault: unblock them around a read of an arbitrary pointer. */
static uint64_t faults_unblock(void)
{
	uint64_t mask = 0, want = (1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1));
	np_host_syscall(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&mask, sizeof(mask), 0, 0);
	if (mask & want)
		np_host_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&want, 0, sizeof(want), 0, 0);
	return mask & want;
}

static void faults_reblock(uint64_t blocked)
{
	if (blocked)
		np_host_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&blocked, 0, sizeof(blocked), 0, 0);
}

static int read_mem(const struct np_vm_env *env, void *dst, uint64_t addr, uint32_t len)
{
	if (!env->ctx) /* the command's own BEGIN/END: nothing of the program's */
		return -1;
	int saved = *np_errno();
	uint64_t blocked = faults_unblock();
	int rc = np_read_user(dst, addr, len);
	faults_reblock(blocked);
	*np_errno() = saved;
	return rc;
}

/* Memory that is mapped for certain: the thread's stack, or the probe's
 * module's own data, which lies in a segment of the file (the command
 * checked) and stays mapped while its code runs. A sanitizer would take
 * the program's stack for the engine's. */
__attribute__((no_sanitize("address"))) static uint64_t read_mapped(uint64_t addr, uint32_t len)
{
	uint64_t v = 0;
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)addr;
	for (uint32_t i = 0; i < len && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i); /* little-endian: every ISA we run on */
	return v;
}

static void read_str(const struct np_vm_env *env, uint8_t *dst, uint64_t addr, uint32_t size,
		     uint64_t limit)
{
	np_zero(dst, size);
	if (!env->ctx || size == 0)
		return;
	uint32_t max = size;
	if (limit < (uint64_t)max - 1)
		max = (uint32_t)limit + 1;
	int saved = *np_errno();
	uint64_t blocked = faults_unblock();
	long n = np_read_user_str((char *)dst, addr, max);
	faults_reblock(blocked);
	*np_errno() = saved;
	if (n < 0)
		np_zero(dst, size);
}

/* --- maps --------------------------------------------------------------------- */

static inline uint64_t hash_key(const uint64_t *k, uint32_t words)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ words;
	for (uint32_t i = 0; i < words; i++) {
		h ^= k[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

static inline int key_equal(const uint64_t *a, const uint64_t *b, uint32_t words)
{
	for (uint32_t i = 0; i < words; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static inline struct np_vm_map_header *map_header(const struct np_vm_env *env,
						  const struct np_vm_map *m)
{
	return (struct np_vm_map_header *)(env->site->shared + m->shared_off);
}

static inline struct np_vm_slot *slot_at(const struct np_vm_env *env, const struct np_vm_map *m,
					 uint32_t i)
{
	return (struct np_vm_slot *)(env->site->shared + m->shared_off +
				     sizeof(struct np_vm_map_header) + (uint64_t)i * m->slot_size);
}

static inline uint64_t *slot_key(struct np_vm_slot *s)
{
	return (uint64_t *)(s + 1);
}

/* The slot of key, inserted when `create`; -1 when absent (or the map is
 * full: a drop, counted, when creating). */
static int64_t map_probe(const struct np_vm_env *env, const struct np_vm_map *m,
			 const uint64_t *key, int create)
{
	uint32_t words = m->key_size / 8, mask = m->nslots - 1;
	uint64_t h = hash_key(key, words);
	for (uint32_t i = 0; i < NP_VM_PROBE_LIMIT && i < m->nslots; i++) {
		uint32_t idx = (uint32_t)(h + i) & mask;
		struct np_vm_slot *s = slot_at(env, m, idx);
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == VM_SLOT_EMPTY) {
			if (!create)
				return -1;
			struct np_vm_map_header *hd = map_header(env, m);
			if (__atomic_load_n(&hd->keys, __ATOMIC_RELAXED) >= m->max_keys)
				break;
			uint32_t empty = VM_SLOT_EMPTY;
			if (__atomic_compare_exchange_n(&s->state, &empty, VM_SLOT_BUSY, 0,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				__atomic_fetch_add(&hd->keys, 1, __ATOMIC_RELAXED);
				uint64_t *k = slot_key(s);
				for (uint32_t w = 0; w < words; w++)
					k[w] = key[w];
				s->epoch = 1;
				__atomic_store_n(&s->state, VM_SLOT_READY, __ATOMIC_RELEASE);
				return idx;
			}
			st = empty;
		}
		for (unsigned spin = 0; st == VM_SLOT_BUSY && spin < SPIN_ROUNDS; spin++)
			st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == VM_SLOT_READY && key_equal(slot_key(s), key, words))
			return idx;
	}
	if (create)
		__atomic_fetch_add(&map_header(env, m)->drops, 1, __ATOMIC_RELAXED);
	return -1;
}

/* map_probe, with no call for a map without keys (@c = count()): its one
 * slot is taken at the first update, and then always the answer. */
static inline int64_t map_find(const struct np_vm_env *env, const struct np_vm_map *m,
			       const uint64_t *key, int create)
{
	if (m->key_size == 0 &&
	    __atomic_load_n(&slot_at(env, m, 0)->state, __ATOMIC_ACQUIRE) == VM_SLOT_READY)
		return 0;
	return map_probe(env, m, key, create);
}

static inline uint64_t *slot_value(struct np_vm_slot *s, const struct np_vm_map *m)
{
	return (uint64_t *)((uint8_t *)(s + 1) + m->key_size);
}

static void map_get(const struct np_vm_env *env, const struct np_vm_map *m, const uint64_t *key,
		    uint64_t *reg, uint8_t *blob)
{
	int64_t i = map_find(env, m, key, 0);
	struct np_vm_slot *s = i < 0 ? NULL : slot_at(env, m, (uint32_t)i);
	int present = s && __atomic_load_n(&s->present, __ATOMIC_ACQUIRE);
	if (!blob) {
		*reg = present ? __atomic_load_n(slot_value(s, m), __ATOMIC_RELAXED) : 0;
		return;
	}
	const uint64_t *v = present ? slot_value(s, m) : NULL;
	uint64_t *out = (uint64_t *)blob;
	for (uint32_t w = 0; w < m->value_size / 8; w++)
		out[w] = v ? v[w] : 0;
	*reg = present;
}

static void map_set(const struct np_vm_env *env, const struct np_vm_map *m, const uint64_t *key,
		    uint64_t val, const uint8_t *blob)
{
	int64_t i = map_find(env, m, key, 1);
	if (i < 0)
		return;
	struct np_vm_slot *s = slot_at(env, m, (uint32_t)i);
	uint64_t *v = slot_value(s, m);
	if (blob) {
		const uint64_t *b = (const uint64_t *)blob;
		for (uint32_t w = 0; w < m->value_size / 8; w++)
			__atomic_store_n(&v[w], b[w], __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(v, val, __ATOMIC_RELAXED);
	}
	if (!__atomic_load_n(&s->present, __ATOMIC_RELAXED))
		__atomic_store_n(&s->present, 1, __ATOMIC_RELEASE);
}

static void slot_void(struct np_vm_slot *s, int keep_key)
{
	__atomic_fetch_add(&s->epoch, 1, __ATOMIC_RELEASE);
	if (!keep_key)
		__atomic_store_n(&s->present, 0, __ATOMIC_RELEASE);
}

static void map_del(const struct np_vm_env *env, const struct np_vm_map *m, const uint64_t *key)
{
	int64_t i = map_find(env, m, key, 0);
	if (i >= 0)
		slot_void(slot_at(env, m, (uint32_t)i), 0);
}

static void map_each_void(const struct np_vm_env *env, const struct np_vm_map *m, int keep_key)
{
	for (uint32_t i = 0; i < m->nslots; i++) {
		struct np_vm_slot *s = slot_at(env, m, i);
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != VM_SLOT_READY)
			continue;
		if (keep_key && m->kind == VM_MAP_VALUE) {
			uint64_t *v = slot_value(s, m);
			for (uint32_t w = 0; w < m->value_size / 8; w++)
				__atomic_store_n(&v[w], 0, __ATOMIC_RELAXED);
		}
		slot_void(s, keep_key);
	}
}

void np_vm_map_void(const struct np_vm_prog *prog, uint8_t *shared, uint32_t map, int keep_key)
{
	struct np_vm_site site = {.prog = prog, .shared = shared};
	struct np_vm_env env = {.site = &site};
	if (map < prog->nmaps)
		map_each_void(&env, &np_vm_maps(prog)[map], keep_key);
}

/* bpftrace's hist(): slot 0 for negatives, 1 for 0, 2 for 1, then one per
 * power of two. */
static inline uint32_t hist_slot(int64_t v)
{
	if (v < 0)
		return 0;
	if (v == 0)
		return 1;
	return 2u + 63u - (uint32_t)__builtin_clzll((uint64_t)v);
}

static inline uint32_t lhist_slot(const struct np_vm_map *m, int64_t v)
{
	if (v < m->lmin)
		return 0;
	if (v >= m->lmax)
		return (uint32_t)((m->lmax - m->lmin) / m->lstep) + 1;
	return (uint32_t)((v - m->lmin) / m->lstep) + 1;
}

static void agg(const struct np_vm_env *env, const struct np_vm_map *m, const uint64_t *key,
		uint64_t val)
{
	int64_t i = map_find(env, m, key, 1);
	if (i < 0)
		return;
	struct np_vm_slot *s = slot_at(env, m, (uint32_t)i);
	uint32_t epoch = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE);
	if (!__atomic_load_n(&s->present, __ATOMIC_RELAXED))
		__atomic_store_n(&s->present, 1, __ATOMIC_RELEASE);
	uint64_t *e = (uint64_t *)(env->thread + m->thread_off + (uint64_t)i * m->entry_size);
	uint64_t *d = e + 1;
	if (e[0] != epoch) {
		for (uint32_t w = 0; w < m->entry_size / 8 - 1; w++)
			d[w] = 0;
		e[0] = epoch;
	}
	int64_t sv = (int64_t)val;
	switch (m->agg) {
	case VM_AGG_COUNT: d[0]++; break;
	case VM_AGG_SUM: d[0] += val; break;
	case VM_AGG_MIN:
		if (!d[0] || sv < (int64_t)d[1])
			d[1] = val;
		d[0] = 1;
		break;
	case VM_AGG_MAX:
		if (!d[0] || sv > (int64_t)d[1])
			d[1] = val;
		d[0] = 1;
		break;
	case VM_AGG_AVG:
	case VM_AGG_STATS: d[0]++; d[1] += val; break;
	case VM_AGG_HIST: d[hist_slot(sv)]++; break;
	case VM_AGG_LHIST: d[lhist_slot(m, sv)]++; break;
	}
}

/* --- operations ---------------------------------------------------------------- */

static uint64_t builtin(const struct np_vm_env *env, int32_t which)
{
	switch (which) {
	case VM_B_PID: return env->pid;
	case VM_B_TID: return env->ring ? (uint64_t)(uint32_t)env->ring->tid : 0;
	case VM_B_NSECS: return np_clock_ns();
	case VM_B_ELAPSED: return np_clock_ns() - env->site->start_ns;
	case VM_B_CPU: { int c = np_cpu(); return c < 0 ? 0 : (uint64_t)c; }
	case VM_B_UID: return env->site->uid;
	case VM_B_GID: return env->site->gid;
	case VM_B_PROBE: return env->site->probe_key;
	case VM_B_FUNC: return env->site->func_key;
	case VM_B_PC: return env->ctx ? np_ctx_pc(env->ctx) : 0;
	}
	return 0;
}

static inline int64_t sdiv(int64_t a, int64_t b)
{
	if (b == 0 || (b == -1 && a == INT64_MIN))
		return b == 0 ? 0 : a;
	return a / b;
}

static inline int64_t smod(int64_t a, int64_t b)
{
	if (b == 0 || b == -1)
		return 0;
	return a % b;
}

static inline uint64_t sext(uint64_t v, int32_t bytes)
{
	unsigned bits = (unsigned)bytes * 8u;
	if (bits >= 64 || bits == 0)
		return v;
	uint64_t m = 1ull << (bits - 1);
	v &= (1ull << bits) - 1;
	return (v ^ m) - m;
}

static inline uint64_t zext(uint64_t v, int32_t bytes)
{
	unsigned bits = (unsigned)bytes * 8u;
	return bits >= 64 || bits == 0 ? v : v & ((1ull << bits) - 1);
}

/* A USDT argument where its note says (proto.h), extended to 64
 * bits as its size and sign say. Registers and constants cost nothing;
 * memory on the thread's stack or in the module's data is read directly;
 * any other address (a field through a pointer) through the fault-safe
 * read, as str() reads. 0 for an argument the probe lacks or cannot read. */
static uint64_t usdt_arg(const struct np_vm_env *env, uint32_t i)
{
	if (i >= env->site->nusdt || !env->ctx)
		return 0;
	const struct np_usdt_loc *a = &env->site->usdt[i];
	struct np_ctx *ctx = env->ctx;
	uint64_t v = 0, addr = (uint64_t)a->disp;
	switch (a->kind) {
	case NP_UA_CONST:
		v = addr;
		break;
	case NP_UA_REG:
		v = np_ctx_reg(ctx, a->base) >> (a->shift & 63);
		break;
	case NP_UA_MEM:
		if (a->base != NP_UA_NOREG)
			addr += np_ctx_reg(ctx, a->base);
		if (a->index != NP_UA_NOREG)
			addr += np_ctx_reg(ctx, a->index) * a->scale;
		if (a->flags & NP_UA_MODREL)
			addr += env->site->bias;
		if ((a->flags & NP_UA_INMODULE) || on_stack(env, addr, a->size))
			v = read_mapped(addr, a->size);
		else if (read_mem(env, &v, addr, a->size))
			v = 0;
		break;
	}
	return a->is_signed ? sext(v, a->size) : zext(v, a->size);
}

/* --- the longer instructions ---------------------------------------------------- */

static void scratch_copy(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		dst[k] = src[k];
}

static void buf_read(const struct np_vm_env *env, uint8_t *dst, uint64_t addr, uint64_t want,
		     uint32_t size)
{
	uint64_t n = want < size - 8 ? want : size - 8;
	np_zero(dst, size);
	if (read_mem(env, dst + 8, addr, (uint32_t)n) == 0)
		dst[0] = (uint8_t)n;
}

static uint64_t str_equal(const uint8_t *p, const uint8_t *q, uint32_t size)
{
	for (uint32_t k = 0; k < size; k++) {
		if (p[k] != q[k])
			return 0;
		if (!p[k])
			break;
	}
	return 1;
}

static void comm_copy(const struct np_vm_env *env, uint8_t *dst, uint32_t size)
{
	np_zero(dst, size);
	for (uint32_t k = 0; env->ring && k < 16 && k + 1 < size && env->ring->comm[k]; k++)
		dst[k] = (uint8_t)env->ring->comm[k];
}

/* count | pid << 32, then the frames: the process's pid above the count,
 * since a stack is named with its own process's mappings, and two
 * processes' stacks are two keys, as bpftrace keys them. */
static void ustack_key(const struct np_vm_env *env, uint64_t *f, uint32_t frames)
{
	for (uint32_t k = 0; k <= frames; k++)
		f[k] = 0;
	f[0] = walk_stack(env, f + 1, frames) | env->pid << 32;
}

static uint64_t arg(const struct np_vm_env *env, int32_t n)
{
	if (env->site->usdt)
		return usdt_arg(env, (uint32_t)n);
	return env->ctx && n < 6 ? np_ctx_arg(env->ctx, (unsigned)n) : 0;
}

/* --- the interpreter ------------------------------------------------------------ */

/* A block that begins `ARG r, n; JNCMPI r OP k` and whose compare, when
 * it fails, jumps to an EXIT: a predicate on a register argument, which
 * np_vm_passes can test without entering the interpreter. A USDT
 * probe's arguments are read by its note's specs: not here. */
static bool find_filter(const struct np_vm_site *site)
{
	const struct np_vm_insn *a = site->code, *j = a + 1;
	if (site->usdt || a->op != VM_ARG || a->imm < 0 || a->imm >= 6 || j->op != VM_JNCMPI ||
	    j->a != a->dst || j->imm <= 0)
		return false;
	return j[2 + j->imm].op == VM_EXIT;
}

void np_vm_site_bind(struct np_vm_site *site)
{
	const struct np_vm_prog *prog = site->prog;
	site->code = np_vm_insns(prog) + np_vm_blocks(prog)[site->block];
	site->maps = np_vm_maps(prog);
	site->consts = np_vm_consts(prog);
	site->filter = find_filter(site);
}

/*
 * Direct threading (GCC's labels as values, which clang has too): each
 * instruction's code ends in a jump of its own to the next one's, which
 * the branch predictor learns per instruction, where a switch in a loop
 * shares one indirect jump among all and decodes every operand of every
 * instruction first. An instruction reads only the operands it has.
 */
#define REG(x) r[(x) & (NP_VM_NREGS - 1)]
#define D REG(i->dst)
#define A REG(i->a)
#define B REG(i->b)
#define EXT ext_of(i)
#define E0 ((uint32_t)EXT)
#define E1 ((uint32_t)(EXT >> 32))
#define MAP (&site->maps[i->imm])
#define KEY ((const uint64_t *)(scratch + E0))
#define BLOB (MAP->agg == VM_VAL_INT ? NULL : scratch + E1)
#define NEXT(words)                                                                   \
	do {                                                                          \
		i += (words);                                                         \
		goto *(i->op < VM_NOPS ? ops[i->op] : &&bad); /* none: checked */     \
	} while (0)
#define BINARY(op, expr) op: D = (expr); NEXT(1);

/* A designated table leaves an op it does not name NULL: an op added to
 * vm.h stops the build here until it has its entry below. */
_Static_assert(VM_NOPS == 58 && VM_EMIT + 1 == VM_NOPS, "a new op needs its entry in ops[]");

int np_vm_run(const struct np_vm_env *env)
{
	static const void *const ops[VM_NOPS] = {
		[VM_EXIT] = &&exit, [VM_MOVI] = &&movi, [VM_MOVW] = &&movw, [VM_MOV] = &&mov,
		[VM_ADD] = &&add, [VM_SUB] = &&sub, [VM_MUL] = &&mul, [VM_DIVU] = &&divu,
		[VM_MODU] = &&modu, [VM_DIVS] = &&divs, [VM_MODS] = &&mods, [VM_AND] = &&and,
		[VM_OR] = &&or, [VM_XOR] = &&xor, [VM_SHL] = &&shl, [VM_SHR] = &&shr,
		[VM_SAR] = &&sar, [VM_EQ] = &&compare, [VM_NE] = &&compare, [VM_LTS] = &&compare,
		[VM_LES] = &&compare, [VM_GTS] = &&compare, [VM_GES] = &&compare,
		[VM_LTU] = &&compare, [VM_LEU] = &&compare, [VM_GTU] = &&compare,
		[VM_GEU] = &&compare, [VM_NEG] = &&neg, [VM_BNOT] = &&bnot, [VM_LNOT] = &&lnot,
		[VM_SEXT] = &&sext, [VM_ZEXT] = &&zext, [VM_JMP] = &&jmp, [VM_JZ] = &&jz,
		[VM_JNZ] = &&jnz, [VM_JNCMPI] = &&jncmpi, [VM_BUILTIN] = &&builtin,
		[VM_ARG] = &&arg, [VM_SARG] = &&sarg, [VM_RETVAL] = &&retval, [VM_READ] = &&read,
		[VM_LDS] = &&lds, [VM_STS] = &&sts, [VM_CONST] = &&const_, [VM_COPY] = &&copy,
		[VM_ZERO] = &&zero, [VM_STR] = &&str, [VM_BUF] = &&buf, [VM_STREQ] = &&streq,
		[VM_COMM] = &&comm, [VM_USTACK] = &&ustack, [VM_MGET] = &&mget,
		[VM_MSET] = &&mset, [VM_MDEL] = &&mdel, [VM_AGG] = &&agg, [VM_MCLEAR] = &&mclear,
		[VM_MZERO] = &&mzero, [VM_EMIT] = &&emit,
	};
	const struct np_vm_site *site = env->site;
	uint8_t *scratch = env->thread;
	/* not zeroed: that would be a memset call, libc's, vector code; a
	 * register read before it is written holds garbage, which no
	 * instruction can turn into an unchecked access */
	uint64_t r[NP_VM_NREGS];
	const struct np_vm_insn *i = site->code;
	if (env->filtered) { /* its ARG and JNCMPI (find_filter) done */
		REG(i->dst) = env->filter_arg;
		i += 3;
	}
	NEXT(0);

exit:	return 0;
movi:	D = (uint64_t)(int64_t)i->imm; NEXT(1);
movw:	D = EXT; NEXT(2);
mov:	D = A; NEXT(1);
	BINARY(add, A + B)
	BINARY(sub, A - B)
	BINARY(mul, A * B)
	BINARY(divu, B ? A / B : 0)
	BINARY(modu, B ? A % B : 0)
	BINARY(divs, (uint64_t)sdiv((int64_t)A, (int64_t)B))
	BINARY(mods, (uint64_t)smod((int64_t)A, (int64_t)B))
	BINARY(and, A & B)
	BINARY(or, A | B)
	BINARY(xor, A ^ B)
	BINARY(shl, A << (B & 63))
	BINARY(shr, A >> (B & 63))
	BINARY(sar, (uint64_t)((int64_t)A >> (B & 63)))
	BINARY(compare, (uint64_t)np_vm_cmp(i->op, A, B))
neg:	D = -A; NEXT(1);
bnot:	D = ~A; NEXT(1);
lnot:	D = !A; NEXT(1);
sext:	D = sext(A, i->imm); NEXT(1);
zext:	D = zext(A, i->imm); NEXT(1);
jmp:	NEXT(1 + i->imm);
jz:	NEXT(A ? 1 : 1 + i->imm);
jnz:	NEXT(A ? 1 + i->imm : 1);
jncmpi:	NEXT(np_vm_cmp(i->dst, A, EXT) ? 2 : 2 + i->imm);
builtin: D = builtin(env, i->imm); NEXT(1);
arg:	D = arg(env, i->imm); NEXT(1);
sarg:	D = sarg(env, i->imm); NEXT(1);
retval:	D = env->ctx ? np_ctx_retval(env->ctx) : 0; NEXT(1);
read: {
	uint64_t v = 0;
	D = read_mem(env, &v, A, (uint32_t)i->imm) ? 0 : v;
	NEXT(1);
}
lds:	__builtin_memcpy(&D, scratch + i->imm, 8); NEXT(1);
sts:	__builtin_memcpy(scratch + i->imm, &A, 8); NEXT(1);
const_:	scratch_copy(scratch + i->imm, site->consts + E0, E1); NEXT(2);
copy:	scratch_copy(scratch + (uint32_t)i->imm, scratch + E0, E1); NEXT(2);
zero:	np_zero(scratch + i->imm, E1); NEXT(2);
str:	read_str(env, scratch + i->imm, A, E1, i->b == 0xff ? ~0ull : B); NEXT(2);
buf:	buf_read(env, scratch + i->imm, A, B, E1); NEXT(2);
streq:	D = str_equal(scratch + i->imm, scratch + E0, E1); NEXT(2);
comm:	comm_copy(env, scratch + i->imm, E1); NEXT(2);
ustack:	ustack_key(env, (uint64_t *)(scratch + i->imm), E0); NEXT(2);
mget:	map_get(env, MAP, KEY, &D, BLOB); NEXT(2);
mset:	map_set(env, MAP, KEY, A, BLOB); NEXT(2);
mdel:	map_del(env, MAP, KEY); NEXT(2);
agg:	agg(env, MAP, KEY, A); NEXT(2);
mclear:	map_each_void(env, MAP, 0); NEXT(1);
mzero:	map_each_void(env, MAP, 1); NEXT(1);
emit:
	emit(env, i->dst, (uint32_t)i->imm, scratch + E0, E1);
	if (i->dst == VM_REC_EXIT)
		return 1;
	NEXT(2);
bad:	return -1; /* the verifier lets none through */
}

/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the end-to-end tests (C and C++): a log sink that keeps
 * the engine's last message so a test can show why an attach was refused,
 * a counting handler, and a way to keep the compiler from inlining,
 * cloning or constant-folding the functions we probe.
 */
#ifndef NP_E2E_H
#define NP_E2E_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nanoprobe/nanoprobe.h>

/* A probed function must stay a real, separately called function. */
#if defined(__clang__)
#define E2E_NOIPA __attribute__((noinline, optnone, used))
#else
#define E2E_NOIPA __attribute__((noipa, used))
#endif

struct e2e_log {
	char last[512];
	unsigned count;
};

static struct e2e_log e2e_log_state;

static inline void e2e_log_fn(enum np_log_level level, const char *msg, void *user)
{
	(void)user;
	e2e_log_state.count++;
	snprintf(e2e_log_state.last, sizeof e2e_log_state.last, "%s", msg ? msg : "");
	if (getenv("E2E_VERBOSE"))
		fprintf(stderr, "# np[%d]: %s\n", (int)level, msg ? msg : "(null)");
}

/* Start capturing: forget earlier messages. */
static inline void e2e_log_capture(void)
{
	e2e_log_state.count = 0;
	e2e_log_state.last[0] = '\0';
	np_set_log_fn(e2e_log_fn, NULL);
}

/* Counting handler: data points to one of these. */
struct e2e_counter {
	uint64_t hits; /* atomic: handlers may run on several threads */
	uint64_t addr; /* expected np_ctx_pc, 0: do not check */
	uint64_t bad_pc;
	uint64_t last_bad_pc;
};

static inline void e2e_count(struct np_ctx *ctx, void *data)
{
	struct e2e_counter *c = (struct e2e_counter *)data;

	__atomic_fetch_add(&c->hits, 1, __ATOMIC_RELAXED);
	if (c->addr && np_ctx_pc(ctx) != c->addr) {
		__atomic_fetch_add(&c->bad_pc, 1, __ATOMIC_RELAXED);
		c->last_bad_pc = np_ctx_pc(ctx);
	}
}

static inline struct np_probe_opts e2e_opts(np_handler_fn fn, void *data,
					    enum np_strategy strategy)
{
	struct np_probe_opts o;

	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.on_entry = fn;
	o.data = data;
	o.strategy = strategy;
	return o;
}

/* Detach, then release the handle (counters are not read afterwards). */
static inline int e2e_detach_free(struct np_probe *p)
{
	int rc = np_probe_detach(p);

	np_probe_free(p);
	return rc;
}

static inline int e2e_ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

/* Every unmapped page within 'reach' of addr, mapped PROT_NONE: no
 * trampoline memory can go there afterwards (the heap cannot grow by brk
 * either; malloc falls back to mmap). */
static inline int e2e_reserve_around(uint64_t addr, uint64_t reach)
{
	const uint64_t floor = 1ull << 20;
	uint64_t lo = addr > reach + floor ? (addr - reach) & ~0xfffull : floor, hi = addr + reach;
	uint64_t at = lo, s, e;
	char line[512];
	int gaps = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	/* the mappings in address order: the gaps are between them */
	for (bool more = true; more && at < hi;) {
		more = fgets(line, sizeof(line), f) != NULL;
		if (!more || sscanf(line, "%lx-%lx", &s, &e) != 2)
			s = e = hi;
		if (e <= at)
			continue;
		uint64_t gap_end = s < hi ? s : hi;
		if (gap_end > at) {
			void *p = mmap((void *)at, gap_end - at, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
				       -1, 0);
			if (p != (void *)at) {
				fprintf(stderr, "# cannot reserve 0x%lx..0x%lx\n", at, gap_end);
				if (p != MAP_FAILED)
					munmap(p, gap_end - at);
				fclose(f);
				return -1;
			}
			gaps++;
		}
		at = e > at ? e : at;
	}
	fclose(f);
	printf("# reserved %d gaps within %lu MiB of 0x%lx\n", gaps, reach >> 20, addr);
	return 0;
}

#endif

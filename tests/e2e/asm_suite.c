/* SPDX-License-Identifier: MIT */
/*
 * Probe every labelled instruction of the assembly suite
 * (asm_suite_x86_64.S, asm_suite_arm64.S, asm_suite_riscv64.S): one at a time under AUTO (bounds from the ELF
 * symbols, and bounds passed in the options), under forced TRAP and forced
 * JUMP, and all of a group at once. Each group must still return MAGIC, each
 * handler must fire exactly as often as its instruction ran, and once the
 * probes are gone the code bytes must be the originals.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "test.h"

#define MAGIC 0x600dcafe
#define SITE_MUST_JUMP 1

/* What each ISA's suite holds at least: a suite that shrank fails. */
#if defined(__x86_64__)
#define MIN_GROUPS 13
#define MIN_SITES 400
#elif defined(__aarch64__)
#define MIN_GROUPS 10
#define MIN_SITES 280
#elif defined(__riscv)
#define MIN_GROUPS 10
#define MIN_SITES 240
#endif

struct site {
	uint8_t *addr;
	uint32_t count; /* executions per call of its group */
	uint32_t flags;
};
struct func {
	uint8_t *start;
	uint64_t size;
};
struct group {
	uint8_t *fn; /* entry, also the group's first byte */
	uint8_t *end;
	const char *name;
};

extern struct site __start_np_sites[], __stop_np_sites[];
extern struct func __start_np_funcs[], __stop_np_funcs[];
extern struct group __start_np_groups[], __stop_np_groups[];
uint64_t suite_call(void *group_fn);

#define for_each_group(g) \
	for (struct group *g = __start_np_groups; g < __stop_np_groups; g++)
#define for_each_site(g, s)                                          \
	for (struct site *s = __start_np_sites; s < __stop_np_sites; s++) \
		if (s->addr >= (g)->fn && s->addr < (g)->end)

/* Copies of every group's bytes taken before any probe was attached. */
static uint8_t *pristine[64];

static const struct func *func_of(const uint8_t *addr)
{
	for (struct func *f = __start_np_funcs; f < __stop_np_funcs; f++)
		if (addr >= f->start && addr < f->start + f->size)
			return f;
	return NULL;
}

static size_t group_index(const struct group *g)
{
	return (size_t)(g - __start_np_groups);
}

static void snapshot_groups(void)
{
	for_each_group(g) {
		size_t i = group_index(g);

		if (pristine[i] || i >= 64)
			continue;
		pristine[i] = malloc((size_t)(g->end - g->fn));
		memcpy(pristine[i], g->fn, (size_t)(g->end - g->fn));
	}
}

static int group_bytes_restored(const struct group *g)
{
	return memcmp(pristine[group_index(g)], g->fn, (size_t)(g->end - g->fn)) == 0;
}

static uint64_t run_group(const struct group *g)
{
	uint64_t r = suite_call(g->fn);

	if (r != MAGIC)
		fprintf(stderr, "# %s returned 0x%" PRIx64 " (0xbad0000 + line: failed check)\n",
			g->name, r);
	return r;
}

struct tally {
	unsigned jump, trap, refused;
};

enum bounds { BOUNDS_FROM_ELF, BOUNDS_PASSED };

static struct np_probe *attach_site(const struct site *s, struct e2e_counter *c,
				    enum np_strategy strategy, enum bounds b)
{
	struct np_probe_opts o = e2e_opts(e2e_count, c, strategy);
	const struct func *f = func_of(s->addr);

	memset(c, 0, sizeof *c);
	c->addr = (uint64_t)(uintptr_t)s->addr;
	if (b == BOUNDS_PASSED && f) {
		o.func_start = f->start;
		o.func_size = f->size;
	}
	return np_probe_attach(s->addr, &o);
}

static void report_site(const struct group *g, const struct site *s, const char *what)
{
	fprintf(stderr, "# %s+0x%tx (%s): %s; last log: %s\n", g->name, s->addr - g->fn,
		func_of(s->addr) ? "in function" : "no function", what,
		e2e_log_state.last);
}

/* Probe one site, run its group once, check magic, count and bytes. */
static void probe_one(const struct group *g, const struct site *s,
		      enum np_strategy strategy, enum bounds b, struct tally *t)
{
	struct e2e_counter c;
	struct np_probe *p = attach_site(s, &c, strategy, b);

	if (!p) {
		/* Forced JUMP may be refused, with a reason; nothing else may. */
		if (strategy == NP_STRATEGY_JUMP && errno == EOPNOTSUPP &&
		    e2e_log_state.last[0]) {
			t->refused++;
			CHECK_EQ(run_group(g), MAGIC);
			CHECK(group_bytes_restored(g));
			return;
		}
		report_site(g, s, strerror(errno));
		CHECK(p != NULL);
		return;
	}
	CHECK(np_probe_addr(p) == s->addr);
	enum np_strategy got = np_probe_strategy(p);
	if (got == NP_STRATEGY_JUMP)
		t->jump++;
	else if (got == NP_STRATEGY_TRAP)
		t->trap++;
	if (strategy != NP_STRATEGY_AUTO)
		CHECK_EQ(got, strategy);
	else
		CHECK(got == NP_STRATEGY_JUMP || got == NP_STRATEGY_TRAP);
	if (strategy == NP_STRATEGY_AUTO && (s->flags & SITE_MUST_JUMP) &&
	    got != NP_STRATEGY_JUMP) {
		report_site(g, s, "function-entry site did not get JUMP");
		CHECK_EQ(got, NP_STRATEGY_JUMP);
	}

	uint64_t r = run_group(g);
	CHECK_EQ(r, MAGIC);
	if (c.hits != s->count || c.bad_pc)
		report_site(g, s, "wrong hit count or pc");
	CHECK_EQ(c.hits, s->count);
	CHECK_EQ(c.bad_pc, 0);
	CHECK_EQ(np_probe_hits(p), s->count);
	CHECK_EQ(np_probe_missed(p), 0);
	CHECK_EQ(np_probe_detach(p), 0);
	CHECK_EQ(np_probe_hits(p), c.hits); /* readable until freed */
	np_probe_free(p);
	if (!group_bytes_restored(g)) {
		report_site(g, s, "code bytes differ after detach");
		CHECK(0);
	}
	CHECK_EQ(run_group(g), MAGIC); /* and still works with no probe */
	CHECK_EQ(c.hits, s->count);
}

static void probe_every_site(enum np_strategy strategy, enum bounds b)
{
	struct tally t = {0};
	unsigned n = 0;

	e2e_log_capture();
	snapshot_groups();
	for_each_group(g) {
		for_each_site(g, s) {
			probe_one(g, s, strategy, b, &t);
			n++;
		}
	}
	printf("# %s, bounds %s: %u sites, %u JUMP, %u TRAP, %u refused\n",
	       np_strategy_name(strategy), b == BOUNDS_PASSED ? "passed" : "from ELF",
	       n, t.jump, t.trap, t.refused);
	CHECK(n >= MIN_SITES);
}

TEST(every_group_returns_magic_without_probes)
{
	unsigned n = 0;

	snapshot_groups();
	for_each_group(g) {
		CHECK_EQ(run_group(g), MAGIC);
		n++;
	}
	CHECK(n >= MIN_GROUPS);
}

TEST(every_site_has_a_function_with_elf_bounds)
{
	for (struct site *s = __start_np_sites; s < __stop_np_sites; s++)
		CHECK(func_of(s->addr) != NULL);
}

TEST(every_instruction_probed_alone_auto_bounds_from_elf)
{
	probe_every_site(NP_STRATEGY_AUTO, BOUNDS_FROM_ELF);
}

TEST(every_instruction_probed_alone_auto_bounds_passed)
{
	probe_every_site(NP_STRATEGY_AUTO, BOUNDS_PASSED);
}

TEST(every_instruction_probed_alone_forced_trap)
{
	probe_every_site(NP_STRATEGY_TRAP, BOUNDS_FROM_ELF);
}

TEST(every_instruction_forced_jump_works_or_is_refused_with_reason)
{
	probe_every_site(NP_STRATEGY_JUMP, BOUNDS_PASSED);
}

/* Attach to every site of a group, run it, check all counts, detach all in
 * the given order and compare the bytes. */
static void probe_whole_group(const struct group *g, enum np_strategy strategy,
			      bool reverse_detach, struct tally *t)
{
	enum { MAX = 256 };
	struct site *sites[MAX];
	struct np_probe *probes[MAX];
	struct e2e_counter *counters = calloc(MAX, sizeof *counters);
	size_t n = 0;

	for_each_site(g, s) {
		if (n == MAX)
			break;
		sites[n] = s;
		probes[n] = attach_site(s, &counters[n], strategy, BOUNDS_FROM_ELF);
		if (!probes[n])
			report_site(g, s, strerror(errno));
		CHECK(probes[n] != NULL);
		if (probes[n] && np_probe_strategy(probes[n]) == NP_STRATEGY_JUMP)
			t->jump++;
		else if (probes[n])
			t->trap++;
		n++;
	}
	for (int round = 1; round <= 2; round++) {
		CHECK_EQ(run_group(g), MAGIC);
		for (size_t i = 0; i < n; i++) {
			if (!probes[i])
				continue;
			if (counters[i].hits != round * sites[i]->count)
				report_site(g, sites[i], "wrong count with the whole group probed");
			CHECK_EQ(counters[i].hits, round * sites[i]->count);
			CHECK_EQ(counters[i].bad_pc, 0);
			CHECK_EQ(np_probe_hits(probes[i]), counters[i].hits);
		}
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = reverse_detach ? n - 1 - k : k;

		if (probes[i])
			CHECK_EQ(e2e_detach_free(probes[i]), 0);
	}
	if (!group_bytes_restored(g)) {
		fprintf(stderr, "# %s: bytes differ after detaching all\n", g->name);
		CHECK(0);
	}
	CHECK_EQ(run_group(g), MAGIC);
	free(counters);
}

static void probe_all_groups_whole(enum np_strategy strategy)
{
	struct tally t = {0};

	e2e_log_capture();
	snapshot_groups();
	for_each_group(g)
		probe_whole_group(g, strategy, group_index(g) % 2, &t);
	printf("# whole groups, %s: %u JUMP, %u TRAP\n", np_strategy_name(strategy),
	       t.jump, t.trap);
}

TEST(all_instructions_of_a_group_at_once_auto_then_bytes_restored)
{
	probe_all_groups_whole(NP_STRATEGY_AUTO);
}

TEST(all_instructions_of_a_group_at_once_trap_then_bytes_restored)
{
	probe_all_groups_whole(NP_STRATEGY_TRAP);
}

/* Two probes on every site (one given bounds, one not): both fire. */
TEST(two_probes_per_site_both_count_every_execution)
{
	e2e_log_capture();
	snapshot_groups();
	for_each_group(g) {
		for_each_site(g, s) {
			struct e2e_counter c1, c2;
			struct np_probe *p1 = attach_site(s, &c1, NP_STRATEGY_AUTO, BOUNDS_FROM_ELF);
			struct np_probe *p2 = attach_site(s, &c2, NP_STRATEGY_AUTO, BOUNDS_PASSED);

			CHECK(p1 && p2);
			CHECK_EQ(run_group(g), MAGIC);
			if (p1)
				CHECK_EQ(c1.hits, s->count);
			if (p2)
				CHECK_EQ(c2.hits, s->count);
			if (p2)
				CHECK_EQ(e2e_detach_free(p2), 0);
			CHECK_EQ(run_group(g), MAGIC);
			if (p1)
				CHECK_EQ(c1.hits, 2 * s->count);
			if (p2)
				CHECK_EQ(c2.hits, s->count);
			if (p1)
				CHECK_EQ(e2e_detach_free(p1), 0);
			CHECK(group_bytes_restored(g));
		}
	}
}

TEST_MAIN()

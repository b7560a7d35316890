/* SPDX-License-Identifier: MIT */
/*
 * Retired trampolines are reclaimed (docs/reliability.md, issue 17 item
 * 13): attach and detach one probe many times, with and without a return
 * handler, JUMP and TRAP, while threads call the probed function and one
 * thread waits in read() on a pipe, and the trampoline memory handed out
 * (np_codemem_committed: chunk bytes used at least once) stays bounded.
 * Before reclaim, every cycle took a new trampoline (or out-of-line copy)
 * for good: that grew by hundreds of bytes per cycle, megabytes over the
 * run (the code mapped, the chunks, with it).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../e2e/e2e.h"
#include "core/codemem.h"
#include "host/layout.h"
#include "test.h"

static E2E_NOIPA uint64_t probed(uint64_t x)
{
	return x * 7 + 3;
}

static atomic_bool stop;
static atomic_ulong wrong, calls;

static void *worker(void *arg)
{
	(void)arg;
	uint64_t (*volatile f)(uint64_t) = probed;
	for (uint64_t i = 0; !atomic_load(&stop); i++) {
		if (f(i) != i * 7 + 3)
			atomic_fetch_add(&wrong, 1);
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

static int pipefd[2];
static atomic_long read_result = -2;

/* Blocked in a system call throughout: looked at from outside, never
 * interrupted (a signal would end its read early). It runs the probed
 * function once first: under qemu-user a thread waiting in a system call
 * shows the emulator's pc and stack pointer, and the census can look at
 * its stack only where its thread block has learnt the bounds (one that
 * never hit a probe makes the census unsure there, docs/design.md). */
static atomic_bool reader_hit;

static void *reader(void *arg)
{
	(void)arg;
	char c;
	uint64_t (*volatile f)(uint64_t) = probed;
	f(1);
	atomic_store(&reader_hit, true);
	atomic_store(&read_result, (long)read(pipefd[0], &c, 1));
	return NULL;
}

/* The resident set in KiB, for the record (not checked: noise). */
static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static unsigned cycles(void)
{
	const char *env = getenv("E2E_RECLAIM_CYCLES");
	return env ? (unsigned)atoi(env) : 4000;
}

static void noop(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(void)data;
}

/* n attach/detach cycles; the trampoline memory handed out after them. */
static uint64_t cycle(unsigned n, enum np_strategy s, bool ret, int *failed)
{
	struct e2e_counter c = {0};
	for (unsigned i = 0; i < n; i++) {
		struct np_probe_opts o = e2e_opts(e2e_count, &c, s);
		if (ret)
			o.on_return = noop;
		struct np_probe *p = np_probe_attach((void *)(uintptr_t)probed, &o);
		if (!p || e2e_detach_free(p)) {
			fprintf(stderr, "# cycle %u: %s\n", i, e2e_log_state.last);
			(*failed)++;
			return 0;
		}
	}
	return np_codemem_committed();
}

/* What may be handed out beyond the warm-up's: the memory that waits
 * for a census (reclaim.c: a sixteenth of a 256 KiB chunk), and more. */
#define SLACK (40 * 1024)

/* An out-of-line copy is small: more cycles for its leak to show. */
static void reclaim_case(enum np_strategy s, bool ret)
{
	pthread_t w[2], r;
	int failed = 0, nw = e2e_ncpus() > 1 ? 2 : 1;
	unsigned n = cycles() * (s == NP_STRATEGY_TRAP ? 3 : 1);

	e2e_log_capture();
	atomic_store(&stop, false);
	CHECK(pipe(pipefd) == 0);
	for (int i = 0; i < nw; i++)
		pthread_create(&w[i], NULL, worker, NULL);
	struct e2e_counter first = {0};
	struct np_probe_opts o = e2e_opts(e2e_count, &first, NP_STRATEGY_AUTO);
	struct np_probe *p = np_probe_attach((void *)(uintptr_t)probed, &o);
	CHECK(p != NULL);
	atomic_store(&reader_hit, false);
	pthread_create(&r, NULL, reader, NULL);
	while (!atomic_load(&reader_hit))
		usleep(1000);
	CHECK(p && e2e_detach_free(p) == 0);
	/* the first cycles fill the chunks that serve from then on */
	uint64_t warm = cycle(n / 4, s, ret, &failed);
	long rss_warm = rss_kib();
	uint64_t after = failed ? 0 : cycle(n, s, ret, &failed);
	long rss_after = rss_kib();
	atomic_store(&stop, true);
	for (int i = 0; i < nw; i++)
		pthread_join(w[i], NULL);
	CHECK(write(pipefd[1], "x", 1) == 1);
	pthread_join(r, NULL);
	close(pipefd[0]);
	close(pipefd[1]);
	printf("# %s%s: %u cycles, trampoline memory %lu KiB after warm-up, %lu KiB after; "
	       "RSS %ld KiB, %ld KiB\n",
	       s == NP_STRATEGY_TRAP ? "TRAP" : "AUTO", ret ? " + return" : "", n,
	       (unsigned long)(warm >> 10), (unsigned long)(after >> 10), rss_warm, rss_after);
	CHECK_EQ(failed, 0);
	CHECK_EQ(atomic_load(&wrong), 0);
	CHECK(atomic_load(&calls) > 0);
	CHECK_EQ(atomic_load(&read_result), 1); /* never ended early (EINTR) */
	/* bounded, where each cycle used to take a trampoline for good */
	CHECK(after <= warm + SLACK);
}

TEST(entry_probe_attached_and_detached_many_times_reuses_its_trampolines)
{
	reclaim_case(NP_STRATEGY_AUTO, false);
}

TEST(return_probe_attached_and_detached_many_times_reuses_its_trampolines)
{
	reclaim_case(NP_STRATEGY_AUTO, true);
}

TEST(trap_probe_attached_and_detached_many_times_reuses_its_copies)
{
	reclaim_case(NP_STRATEGY_TRAP, false);
}

TEST_MAIN()

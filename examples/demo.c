/* SPDX-License-Identifier: MIT */
/*
 * make demo: nanoprobe on a small program, through the C API.
 *
 * The "program" parses a few log lines and checksums them. We
 *   1. count every call of checksum() with a JUMP probe,
 *   2. trace parse_line() with its argument and its return value,
 *   3. time parse_line() from entry to return,
 *   4. inject a fault: make is_valid() return 0 without running it,
 * and print which strategy the engine chose for each site and why.
 */
#include <nanoprobe/nanoprobe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- the program being probed ------------------------------------------ */

__attribute__((noinline)) unsigned checksum(const char *s, size_t n)
{
	unsigned h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

__attribute__((noinline)) int is_valid(const char *line)
{
	return strchr(line, '=') != NULL;
}

__attribute__((noinline)) long parse_line(const char *line)
{
	if (!is_valid(line))
		return -1;
	long total = 0;
	for (const char *p = line; *p; p++)
		total += checksum(p, 1) & 0xff;
	return total;
}

static const char *const lines[] = {
	"user=alice action=login",
	"user=bob action=upload size=4096",
	"malformed line",
	"user=carol action=logout",
};

static long run_workload(int rounds)
{
	long sum = 0;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
			sum += parse_line(lines[i]);
	return sum;
}

/* --- the probes ------------------------------------------------------------ */

static uint64_t checksum_calls;
static int traced;

static void count(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	(*(uint64_t *)data)++;
}

static void trace_entry(struct np_ctx *ctx, void *data)
{
	(void)data;
	if (traced < 4)
		printf("  parse_line(\"%s\")\n", (const char *)np_ctx_arg(ctx, 0));
}

static void trace_return(struct np_ctx *ctx, void *data)
{
	(void)data;
	if (traced++ < 4)
		printf("  parse_line returned %ld to 0x%llx\n", (long)np_ctx_retval(ctx),
		       (unsigned long long)np_ctx_pc(ctx));
}

static __thread struct timespec t_entry;
static uint64_t lat_ns_total, lat_calls;

static void lat_entry(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
	clock_gettime(CLOCK_MONOTONIC, &t_entry);
}

static void lat_return(struct np_ctx *ctx, void *data)
{
	struct timespec t;
	(void)ctx, (void)data;
	clock_gettime(CLOCK_MONOTONIC, &t);
	lat_ns_total += (uint64_t)((t.tv_sec - t_entry.tv_sec) * 1000000000L +
				   (t.tv_nsec - t_entry.tv_nsec));
	lat_calls++;
}

static void fail_validation(struct np_ctx *ctx, void *data)
{
	(void)data;
	np_ctx_override_return(ctx, 0);
}

static void log_to_stdout(enum np_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= NP_LOG_WARN)
		printf("  [engine] %s\n", msg);
}

static struct np_probe *attach(void *fn, const char *name, struct np_probe_opts o)
{
	o.name = name;
	struct np_probe *p = np_probe_attach(fn, &o);
	if (!p) {
		perror(name);
		exit(1);
	}
	printf("probe on %-11s at %p: %s\n", name, fn, np_strategy_name(np_probe_strategy(p)));
	return p;
}

int main(void)
{
	np_set_log_fn(log_to_stdout, NULL);
	long expect = run_workload(1000);
	printf("unprobed workload result: %ld\n\n", expect);

	printf("1. counting calls\n");
	struct np_probe *c = attach((void *)checksum, "checksum",
				    NP_PROBE_OPTS(.on_entry = count, .data = &checksum_calls));
	long got = run_workload(1000);
	printf("  checksum called %llu times (probe hits: %llu), result %s\n\n",
	       (unsigned long long)checksum_calls, (unsigned long long)np_probe_hits(c),
	       got == expect ? "unchanged" : "CHANGED");
	np_probe_free(c);

	printf("2. tracing arguments and return values\n");
	struct np_probe *t = attach((void *)parse_line, "parse_line",
				    NP_PROBE_OPTS(.on_entry = trace_entry, .on_return = trace_return));
	run_workload(1);
	np_probe_free(t);

	printf("\n3. latency of parse_line\n");
	struct np_probe *l = attach((void *)parse_line, "parse_line",
				    NP_PROBE_OPTS(.on_entry = lat_entry, .on_return = lat_return));
	run_workload(2000);
	printf("  %llu calls, average %.0f ns\n\n", (unsigned long long)lat_calls,
	       lat_calls ? (double)lat_ns_total / (double)lat_calls : 0.0);
	np_probe_free(l);

	printf("4. fault injection: is_valid() returns 0 without running\n");
	struct np_probe *f = attach((void *)is_valid, "is_valid",
				    NP_PROBE_OPTS(.on_entry = fail_validation));
	printf("  workload result with the fault: %ld (every line rejected: %ld)\n",
	       run_workload(1), -(long)(sizeof(lines) / sizeof(lines[0])));
	np_probe_free(f);
	printf("  after detach: %ld, the original code is back\n", run_workload(1000));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe latency: time from entry to return of each call, as a
 * power-of-two histogram in the look of bpftrace's hist(). The entry's
 * timestamp travels with the call (np_ctx_call_data); the return adds the
 * difference to the calling thread's own histogram; we sum them at the end.
 *
 *   @usecs:
 *   [16, 32)             12 |@@@@@@@@@@@@@@@@                                    |
 *   [32, 64)             39 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "session.h"

#define BAR 52

struct unit {
	const char *name;
	unsigned ns;
};
static const struct unit units[] = {{"nsecs", 1}, {"usecs", 1000}, {"msecs", 1000000}};

/* 1024 -> "1K", as bpftrace labels its buckets. */
static void human(uint64_t v, char *buf, size_t len)
{
	static const char suffix[] = " KMGTPE";
	unsigned i = 0;
	while (v >= 1024 && v % 1024 == 0 && i < 6) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%llu%c" : "%llu", (unsigned long long)v, suffix[i]);
}

static void bucket_label(unsigned b, char *buf, size_t len)
{
	char lo[16], hi[16];
	if (b < 2) {
		snprintf(buf, len, "[%u]", b);
		return;
	}
	human(1ull << (b - 1), lo, sizeof(lo));
	human(b < 64 ? 1ull << b : 0, hi, sizeof(hi));
	snprintf(buf, len, "[%s, %s)", lo, hi);
}

static void print_hist(FILE *out, const struct np_hist *h, const struct unit *u)
{
	int first = -1, last = -1;
	uint64_t top = 0;
	for (int b = 0; b < NP_HIST_BUCKETS; b++)
		if (h->bucket[b]) {
			first = first < 0 ? b : first;
			last = b;
			top = h->bucket[b] > top ? h->bucket[b] : top;
		}
	fprintf(out, "@%s:\n", u->name);
	for (int b = first; b >= 0 && b <= last; b++) {
		char label[48], bar[BAR + 1];
		size_t n = (size_t)(h->bucket[b] * BAR / top);
		memset(bar, '@', n);
		memset(bar + n, ' ', BAR - n);
		bar[BAR] = 0;
		bucket_label((unsigned)b, label, sizeof(label));
		fprintf(out, "%-20s %8llu |%s|\n", label, (unsigned long long)h->bucket[b], bar);
	}
	if (!h->count)
		fprintf(out, "(no calls)\n");
	fprintf(out, "\ncount %llu, average %llu %s, min %llu %s, max %llu %s, total %llu %s\n",
	       (unsigned long long)h->count,
	       (unsigned long long)(h->count ? h->sum / h->count / u->ns : 0), u->name,
	       (unsigned long long)(h->min / u->ns), u->name, (unsigned long long)(h->max / u->ns),
	       u->name, (unsigned long long)(h->sum / u->ns), u->name);
}

/* bpftrace -f json: {"type": "hist", "data": {"@usecs": [{"min":..,"max":..,"count":..}]}} */
static void print_hist_json(FILE *out, const struct np_hist *h, const struct unit *u)
{
	bool any = false;
	fprintf(out, "{\"type\":\"hist\",\"data\":{\"@%s\":[", u->name);
	for (unsigned b = 0; b < NP_HIST_BUCKETS; b++) {
		if (!h->bucket[b])
			continue;
		uint64_t lo = b < 2 ? b : 1ull << (b - 1), hi = b < 2 ? b : (1ull << b) - 1;
		fprintf(out, "%s{\"min\":%llu,\"max\":%llu,\"count\":%llu}", any ? "," : "",
		       (unsigned long long)lo, (unsigned long long)hi,
		       (unsigned long long)h->bucket[b]);
		any = true;
	}
	fprintf(out, "]}}\n{\"type\":\"stats\",\"data\":{\"unit\":\"%s\",\"count\":%llu,\"average\":%llu,"
	       "\"min\":%llu,\"max\":%llu,\"total\":%llu}}\n",
	       u->name, (unsigned long long)h->count,
	       (unsigned long long)(h->count ? h->sum / h->count / u->ns : 0),
	       (unsigned long long)(h->min / u->ns), (unsigned long long)(h->max / u->ns),
	       (unsigned long long)(h->sum / u->ns));
}

static int latency_option(int opt, const char *arg, struct session_opts *o, void *cookie)
{
	const struct unit **u = cookie;
	if (opt == 'u')
		*u = &units[1];
	else if (opt == 'm')
		*u = &units[2];
	else
		return -1;
	o->hist_unit = (*u)->ns;
	return 0;
}

static void latency_results(const struct session_opts *o, const struct totals *t, void *cookie)
{
	const struct unit *const *u = cookie;
	if (o->json)
		print_hist_json(o->out, &t->hist, *u);
	else
		print_hist(o->out, &t->hist, *u);
}

int cmd_latency(int argc, char **argv)
{
	static const struct option longs[] = {{"microseconds", no_argument, NULL, 'u'},
					       {"milliseconds", no_argument, NULL, 'm'},
					       {0}};
	static const struct verb verb = {
		.name = "latency", .action = NP_ACT_LATENCY, .banner = true, .short_opts = "um",
		.long_opts = longs, .option = latency_option, .results = latency_results,
	};
	const struct unit *u = &units[0];
	return session_verb_main(&verb, &u, argc, argv);
}

/* SPDX-License-Identifier: MIT */
/*
 * shop: a small order pipeline for nanoprobe to trace (examples/demo.sh,
 * docs/cli.md).
 *
 * An order is one line of text: an id, up to four SKU:QTY items and an
 * optional coupon.
 *
 *   1001 apple:3 coffee:1 SAVE10
 *
 * parse_order() reads the line; checkout() prices each item with
 * price_item(), which asks price_lookup() for the unit price; then
 * apply_discount() applies the coupon, confirm_payment() asks the bank
 * about a large total, and the total goes to the day's takings.
 *
 *   shop [N]      check out N generated orders (default 5000), the same
 *                 ones on every run, and print a summary
 *   shop --serve  check out the orders read from stdin, one per line,
 *                 until the end of input; waits while there are none
 *
 * The traced functions are noinline and noipa so that the compiler keeps
 * each one a real function that takes its arguments as the calling
 * convention says: that is what a probe and its $argN see.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define TRACED __attribute__((noinline, optnone))
#else
#define TRACED __attribute__((noinline, noipa))
#endif
#define MAX_ITEMS 4
#define NAME_MAX_LEN 16

struct item {
	char sku[NAME_MAX_LEN];
	int qty;
};

struct order {
	long id;
	int nitems;
	struct item items[MAX_ITEMS];
	char coupon[NAME_MAX_LEN];
};

static const struct {
	const char *sku;
	long cents;
} catalogue[] = {
	{"apple", 45},  {"bread", 320}, {"cheese", 690}, {"coffee", 1150},
	{"eggs", 289},  {"milk", 119},  {"pear", 60},    {"tea", 475},
};
#define NCATALOGUE (sizeof(catalogue) / sizeof(*catalogue))

/* The day's figures, globals that a probe can read too (@takings). */
long takings; /* cents */
long orders_done;

/* Unit price in cents, -1 for an unknown SKU. */
TRACED long price_lookup(const char *sku)
{
	for (size_t i = 0; i < NCATALOGUE; i++)
		if (!strcmp(catalogue[i].sku, sku))
			return catalogue[i].cents;
	return -1;
}

/* Price of qty units in cents: 5% off from ten units; 0 if unknown. */
TRACED long price_item(const char *sku, int qty)
{
	long unit = price_lookup(sku);
	if (unit < 0)
		return 0;
	long cents = unit * qty;
	if (qty >= 10)
		cents -= cents / 20;
	return cents;
}

TRACED long apply_discount(long cents, const char *coupon)
{
	if (!strcmp(coupon, "SAVE10"))
		return cents - cents / 10;
	if (!strcmp(coupon, "FIVEOFF") && cents >= 2000)
		return cents - 500;
	return cents;
}

/* Totals of 100 EUR or more are confirmed with the bank: a round trip of
 * about 20 us, simulated by waiting, which gives checkout's latency its
 * second hump. It takes what the bank would be sent, for probes to see. */
TRACED void confirm_payment(long id, long cents)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec) < 20000);
}

/* "ID SKU:QTY... [COUPON]" into *o: 0, or -1 if the line is no order. */
TRACED int parse_order(const char *line, struct order *o)
{
	int n;
	memset(o, 0, sizeof(*o));
	if (sscanf(line, "%ld%n", &o->id, &n) != 1)
		return -1;
	for (line += n; *line; line += n) {
		struct item *it = &o->items[o->nitems];
		if (o->nitems < MAX_ITEMS &&
		    sscanf(line, " %15[a-z]:%d%n", it->sku, &it->qty, &n) == 2 && it->qty > 0)
			o->nitems++;
		else if (sscanf(line, " %15s%n", o->coupon, &n) != 1)
			break; /* only blanks left */
	}
	return o->nitems ? 0 : -1;
}

/* The order's total in cents, added to the day's takings. */
TRACED long checkout(const struct order *o)
{
	long cents = 0;
	for (int i = 0; i < o->nitems; i++)
		cents += price_item(o->items[i].sku, o->items[i].qty);
	cents = apply_discount(cents, o->coupon);
	if (cents >= 10000)
		confirm_payment(o->id, cents);
	takings += cents;
	orders_done++;
	return cents;
}

/* --- where the orders come from ----------------------------------------- */

static unsigned long long seed = 42;

static unsigned pick(unsigned limit)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(seed >> 33) % limit;
}

/* A generated order; the same sequence on every run. */
static void make_order(long id, char *line, size_t len)
{
	static const char *const coupons[] = {"", "", "", "SAVE10", "FIVEOFF"};
	size_t n = (size_t)snprintf(line, len, "%ld", id);
	unsigned items = 1 + pick(MAX_ITEMS);
	for (unsigned i = 0; i < items && n < len; i++)
		n += (size_t)snprintf(line + n, len - n, " %s:%u", catalogue[pick(NCATALOGUE)].sku,
				      1 + pick(12));
	const char *coupon = coupons[pick(5)];
	if (*coupon && n < len)
		snprintf(line + n, len - n, " %s", coupon);
}

static bool next_order(bool serve, long i, long n, char *line, size_t len)
{
	if (serve)
		return fgets(line, (int)len, stdin) != NULL;
	if (i >= n)
		return false;
	make_order(1001 + i, line, len);
	return true;
}

int main(int argc, char **argv)
{
	bool serve = argc > 1 && !strcmp(argv[1], "--serve");
	long n = argc > 1 && !serve ? atol(argv[1]) : 5000, rejected = 0;
	char line[256];
	struct order o;
	if (serve) {
		/* With Yama's ptrace_scope at 1 only a parent may attach: let
		 * `nanoprobe -p` (or a debugger) in, as a server would allow. */
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
		setvbuf(stdout, NULL, _IOLBF, 0);
		printf("shop: pid %d, waiting for orders on stdin\n", (int)getpid());
	}
	for (long i = 0; next_order(serve, i, n, line, sizeof(line)); i++) {
		if (parse_order(line, &o))
			rejected++;
		else
			checkout(&o);
	}
	printf("shop: %ld order%s, %ld rejected, takings %ld.%02ld EUR\n", orders_done,
	       orders_done == 1 ? "" : "s", rejected, takings / 100, takings % 100);
	return 0;
}

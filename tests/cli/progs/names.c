/* SPDX-License-Identifier: MIT */
/* Names that outputs must carry whole: a thread named in UTF-8 ("café"),
 * strings in UTF-8 and not (say()), and functions with names much longer
 * than a column (the count table's must stay in line). `names N` makes N
 * calls of each, then prints one line. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "progs.h"

NOINLINE int say(const char *s)
{
	int n = 0;
	while (s[n])
		n++;
	return n;
}

NOINLINE long a_function_whose_name_is_much_longer_than_the_forty_four_columns(long i)
{
	return i + 1;
}

NOINLINE long short_one(long i)
{
	return i * 2;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1, sum = 0;
	/* UTF-8, then bytes that are not: a lone continuation byte, an
	 * overlong NUL, a surrogate; and a control character */
	static const char *const said[] = {"café", "日本語 ✓", "bad \xff\x80 \xc0\x80 \xed\xa0\x80",
					   "tab\there \x01"};
	prctl(PR_SET_NAME, "café", 0, 0, 0);
	for (unsigned i = 0; i < sizeof(said) / sizeof(*said); i++)
		sum += say(said[i]);
	for (long i = 0; i < n; i++)
		sum += a_function_whose_name_is_much_longer_than_the_forty_four_columns(i) +
		       short_one(i);
	printf("names: n=%ld sum=%ld\n", n, sum);
	return 0;
}

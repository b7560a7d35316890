/* SPDX-License-Identifier: MIT */
/*
 * ipa-callers-prog [SCALE]: runs every workload (ipa_callers.h) and prints
 * their results, for the command to probe (tests/reliability/ipa_callers.py).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ipa_callers.h"

int main(int argc, char **argv)
{
	static const struct ipa_workload *const all[] = {&ipa_loop, &ipa_pressure, &ipa_vector};
	long scale = argc > 1 ? atol(argv[1]) : 10;

	for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
		struct ipa_out o = {.len = 0};

		all[i]->run(&o, scale);
		fputs(o.text, stdout);
	}
	return 0;
}

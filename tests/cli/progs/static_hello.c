/* SPDX-License-Identifier: MIT */
/* A statically linked program: LD_PRELOAD cannot bring the agent into it,
 * so a session that follows the processes a program starts says it did not
 * trace this one (test_tree.py). */
#include <stdio.h>

int main(void)
{
	puts("static hello");
	return 0;
}

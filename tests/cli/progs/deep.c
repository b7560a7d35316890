/* SPDX-License-Identifier: MIT */
/* Recursion deeper than a thread's return-probe stack, then a pause and a
 * SIGKILL: the returns of the frames beyond that depth are missed, and the
 * program never reaches an exit where the agent could say so. Only the
 * agent's periodic report tells the command of them. */
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "progs.h"

NOINLINE long descend(long depth)
{
	volatile long here = depth; /* keeps the call from being a tail call */
	return depth > 0 ? descend(depth - 1) + here : 0;
}

int main(int argc, char **argv)
{
	long depth = argc > 1 ? atol(argv[1]) : 20000;
	struct timespec pause = {0, 300 * 1000 * 1000};
	if (descend(depth) != depth * (depth + 1) / 2)
		return 1;
	nanosleep(&pause, NULL); /* several of the agent's 10 ms ticks */
	raise(SIGKILL);
	return 2;
}

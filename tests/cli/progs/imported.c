/* SPDX-License-Identifier: MIT */
/* The library importer links with (importer.c). */
#include "progs.h"

NOINLINE long imported_fn(long v)
{
	return v * 5 + 2;
}

NOINLINE long other_fn(long v)
{
	return v - 1;
}

/* SPDX-License-Identifier: MIT */
#include "nobuildid_lib.h"

int nobuildid_lib_add(int x)
{
	return x + 1;
}

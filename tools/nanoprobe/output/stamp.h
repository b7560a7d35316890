/* SPDX-License-Identifier: MIT */
/* The wall-clock time of an interval's report: HH:MM:SS.mmm, so that two
 * reports within one second (-i 0.5) are told apart. */
#ifndef NP_CLI_STAMP_H
#define NP_CLI_STAMP_H
#include <stddef.h>

void stamp_now(char *buf, size_t len);
#endif

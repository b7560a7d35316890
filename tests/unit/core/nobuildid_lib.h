/* SPDX-License-Identifier: MIT */
/* A library linked without a GNU build ID (scan_cache_test.c). */
#ifndef NOBUILDID_LIB_H
#define NOBUILDID_LIB_H
int nobuildid_lib_add(int x);
#endif

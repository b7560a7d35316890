/* SPDX-License-Identifier: MIT */
#ifndef NP_CLI_DEMANGLE_H
#define NP_CLI_DEMANGLE_H
/* The demangled C++ name (malloc'd), or NULL for a name that is not one. */
char *np_demangle(const char *name);
/* Without its parameter list and const: "Shop::price" (malloc'd). */
char *np_demangled_short(const char *demangled);
#endif

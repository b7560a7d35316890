/* SPDX-License-Identifier: MIT */
#ifndef NP_TEST_IFUNC_LIB_H
#define NP_TEST_IFUNC_LIB_H

/* x + 1, through the library's own ifunc */
int ifunc_lib_call(int x);
/* the implementation the ifunc resolves to */
void *ifunc_lib_picked(void);
/* x - 1: an ifunc the program binds to (GOT, PLT) */
int ifunc_lib_sub(int x);
/* its implementation */
void *ifunc_lib_sub_picked(void);
/* x + 3, through an ifunc whose implementation another function jumps
 * into past its entry */
int ifunc_lib_call3(int x);
void *ifunc_lib_add3_picked(void);
/* a function with unwind info that no slot holds */
void *ifunc_lib_unpicked(void);

#endif

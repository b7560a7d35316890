/* SPDX-License-Identifier: MIT */
/*
 * A library built stripped (-s), as Debian's libc is: its ifuncs'
 * implementations are static, so once stripped no symbol names them. Only
 * the slots the loader fills say which one is called: the library's own
 * IRELATIVE slot for lib_add, the program's GOT slot bound to the
 * exported ifunc_lib_sub.
 */
#include "ifunc_lib.h"

static int add_one(int x)
{
	return x + 1;
}

static int add_two(int x) /* never picked: an FDE, no call through a slot */
{
	return x + 2;
}

static int (*pick_add(void))(int)
{
	return add_one;
}

/* static: called from within, so the link leaves an IRELATIVE slot */
static int lib_add(int x) __attribute__((ifunc("pick_add")));

static int sub_one(int x)
{
	return x - 1;
}

static int (*pick_sub(void))(int)
{
	return sub_one;
}

/* exported, never called from within: no IRELATIVE slot here */
int ifunc_lib_sub(int x) __attribute__((ifunc("pick_sub")));

void *ifunc_lib_sub_picked(void)
{
	return (void *)pick_sub();
}

int ifunc_lib_call(int x)
{
	return lib_add(x);
}

void *ifunc_lib_picked(void)
{
	return (void *)pick_add();
}

void *ifunc_lib_unpicked(void)
{
	return (void *)add_two;
}

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

/* x + 3, an implementation that another function jumps into past its
 * entry, as hand-written string functions do: hidden, so that -s leaves
 * no symbol for it or for the jumper. */
#if defined(__x86_64__)
#define ADD3 "lea 3(%rdi), %eax"
#define RET "ret"
#define JUMP "jmp"
#elif defined(__aarch64__)
#define ADD3 "add w0, w0, #3"
#define RET "ret"
#define JUMP "b"
#elif defined(__riscv)
#define ADD3 "addiw a0, a0, 3"
#define RET "ret"
#define JUMP "j"
#endif
__asm__(".text\n"
	".globl ifunc_lib_add3_impl\n"
	".hidden ifunc_lib_add3_impl\n"
	".type ifunc_lib_add3_impl, %function\n"
	"ifunc_lib_add3_impl:\n"
	".cfi_startproc\n"
	ADD3 "\n"
	"1: " RET "\n"
	".cfi_endproc\n"
	".type ifunc_lib_jumper, %function\n"
	"ifunc_lib_jumper:\n" /* local: never called, only jumps */
	".cfi_startproc\n"
	JUMP " 1b\n"
	".cfi_endproc\n");
int ifunc_lib_add3_impl(int x) __attribute__((visibility("hidden")));

static int (*pick_add3(void))(int)
{
	return ifunc_lib_add3_impl;
}

static int lib_add3(int x) __attribute__((ifunc("pick_add3")));

int ifunc_lib_call3(int x)
{
	return lib_add3(x);
}

void *ifunc_lib_add3_picked(void)
{
	return (void *)pick_add3();
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

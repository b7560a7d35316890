/* SPDX-License-Identifier: MIT */
/*
 * The hit paths' replacements for libc (see nolibc.h). Built with
 * -fno-builtin and without loop-to-memcpy distribution, so that the loops
 * below stay loops.
 */
#include "core/nolibc.h"
#include "host/host.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>

ptrdiff_t np_errno_offset;

typedef int (*clock_fn)(clockid_t, struct timespec *);
typedef int (*getcpu_fn)(unsigned *, unsigned *, void *);
static clock_fn vdso_clock;
static getcpu_fn vdso_getcpu;

/* glibc 2.35 and later register an rseq area per thread and say where;
 * weak, so that an older libc simply has none. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
#define RSEQ_CPU_ID_OFF 4 /* struct rseq: cpu_id_start, then cpu_id */

/* A symbol of the vDSO by name, through its section headers (the kernel
 * maps the whole image). NULL if absent. */
static void *vdso_sym(const char *const *names)
{
	const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || !eh->e_shoff)
		return NULL;
	const char *base = (const char *)eh;
	const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
	uintptr_t load = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			load = (uintptr_t)base + ph[i].p_offset - ph[i].p_vaddr;
			break;
		}
	const ElfW(Shdr) *sh = (const void *)(base + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const ElfW(Sym) *sym = (const void *)(base + sh[i].sh_offset);
		const char *str = base + sh[sh[i].sh_link].sh_offset;
		size_t n = sh[i].sh_entsize ? sh[i].sh_size / sh[i].sh_entsize : 0;
		for (size_t k = 0; k < n; k++)
			for (const char *const *name = names; *name; name++)
				if (sym[k].st_shndx != SHN_UNDEF && !strcmp(str + sym[k].st_name, *name))
					return (void *)(load + sym[k].st_value);
	}
	return NULL;
}

int np_nolibc_init(void)
{
	static const char *const clock_names[] = {"__vdso_clock_gettime",
						  "__kernel_clock_gettime", NULL};
	static const char *const getcpu_names[] = {"__vdso_getcpu", "__kernel_getcpu", NULL};
	np_errno_offset = (char *)&errno - (char *)__builtin_thread_pointer();
	vdso_clock = (clock_fn)vdso_sym(clock_names);
	vdso_getcpu = (getcpu_fn)vdso_sym(getcpu_names);
	return 0;
}

uint64_t np_vdso_clock_ns(void)
{
	struct timespec ts = {0, 0};
	if (!vdso_clock || vdso_clock(CLOCK_MONOTONIC, &ts))
		np_host_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int np_cpu(void)
{
	if (&__rseq_size && &__rseq_offset && __rseq_size) {
		const volatile uint32_t *id = (const volatile uint32_t *)(
			(char *)__builtin_thread_pointer() + __rseq_offset + RSEQ_CPU_ID_OFF);
		if ((int32_t)*id >= 0)
			return (int)*id;
	}
	unsigned cpu = 0;
	if (vdso_getcpu && vdso_getcpu(&cpu, NULL, NULL) == 0)
		return (int)cpu;
	if (np_host_syscall(SYS_getcpu, (long)&cpu, 0, 0, 0, 0, 0) == 0)
		return (int)cpu;
	return -1;
}

void np_futex_wait(uint32_t *word, uint32_t expect)
{
	np_host_syscall(SYS_futex, (long)word, FUTEX_WAIT_PRIVATE, expect, 0, 0, 0);
}

void np_futex_wake(uint32_t *word)
{
	np_host_syscall(SYS_futex, (long)word, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0, 0);
}

void np_copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

void np_zero(void *dst, size_t n)
{
	unsigned char *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = 0;
}

bool np_same(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return false;
	return true;
}

const void *np_find_byte(const void *s, int c, size_t n)
{
	const unsigned char *p = s;
	for (size_t i = 0; i < n; i++)
		if (p[i] == (unsigned char)c)
			return p + i;
	return NULL;
}

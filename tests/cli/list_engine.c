/* SPDX-License-Identifier: MIT */
/*
 * What the engine places, for test_list_engine.py to hold against what
 * `nanoprobe list` says of the same sites.
 *
 * usage: list-engine MODULE
 *        list-engine --functions
 *        list-engine --libc
 *
 * MODULE is a file mapped in this process: the program itself (its path)
 * or the libc it runs with. Each line of stdin is "VADDR FUNC_VADDR
 * FUNC_SIZE" (hexadecimal, hexadecimal, decimal: the bounds the command
 * passes, tools/nanoprobe/symbols/resolve.c); for each, a probe is attached there
 * with NP_STRATEGY_AUTO and detached at once, and a line "VADDR STRATEGY
 * REASON" printed: jump, trap or refused, and the engine's last log line.
 * One probe at a time, as list plans each site alone.
 *
 * The program links the e2e suites' assembly (the .S files of tests/e2e/), whose
 * functions it never calls: --functions prints their vaddrs (the np_funcs
 * section of their FUNC/ENDF macros); --libc the path of the libc it
 * runs with (which `ldd` cannot say of a program run under qemu-user).
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <link.h>
#include <nanoprobe/nanoprobe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct func {
	uint64_t start, size;
};
extern struct func __start_np_funcs[], __stop_np_funcs[];

static char last_log[512];

static void keep_log(enum np_log_level level, const char *msg, void *user)
{
	(void)level, (void)user;
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void count(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	__atomic_add_fetch((uint64_t *)data, 1, __ATOMIC_RELAXED);
}

struct find {
	const char *path;
	uint64_t bias;
	bool found;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct find *f = cookie;
	char real[PATH_MAX];
	const char *name = info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
	(void)size;
	if (!realpath(name, real) || strcmp(real, f->path))
		return 0;
	f->bias = info->dlpi_addr;
	f->found = true;
	return 1;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], line[256];
	uint64_t hits = 0;
	if (argc == 2 && !strcmp(argv[1], "--functions")) {
		Dl_info di;
		uintptr_t bias = dladdr((void *)main, &di) ? (uintptr_t)di.dli_fbase : 0;
		for (struct func *f = __start_np_funcs; f < __stop_np_funcs; f++)
			printf("%llx\n", (unsigned long long)(f->start - bias));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--libc")) {
		Dl_info di;
		/* a function of libc's own: a sanitizer's runtime intercepts
		 * malloc, and would be taken for libc */
		if (!dladdr((void *)(uintptr_t)gnu_get_libc_version, &di) ||
		    !realpath(di.dli_fname, path))
			return 1;
		printf("%s\n", path);
		return 0;
	}
	if (argc != 2 || !realpath(argv[1], path)) {
		fprintf(stderr, "usage: list-engine MODULE | --functions\n");
		return 2;
	}
	struct find f = {path, 0, false};
	dl_iterate_phdr(find_module, &f);
	if (!f.found) {
		fprintf(stderr, "list-engine: %s is not mapped here\n", path);
		return 1;
	}
	np_set_log_fn(keep_log, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long vaddr, fn, size;
		if (sscanf(line, "%llx %llx %llu", &vaddr, &fn, &size) != 3)
			continue;
		struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = count, .data = &hits,
						       .func_start = (void *)(uintptr_t)(f.bias + fn),
						       .func_size = size);
		last_log[0] = '\0';
		struct np_probe *p = np_probe_attach((void *)(uintptr_t)(f.bias + vaddr), &o);
		const char *s = p ? np_strategy_name(np_probe_strategy(p)) : "refused";
		bool jump = p && np_probe_strategy(p) == NP_STRATEGY_JUMP;
		printf("%llx %s %s\n", vaddr, s, jump ? "" : last_log);
		if (p) {
			np_probe_detach(p);
			np_probe_free(p);
		}
	}
	fflush(stdout);
	_exit(0); /* not back through libc's frames: nothing of it was probed then */
}

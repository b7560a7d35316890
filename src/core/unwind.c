/* SPDX-License-Identifier: MIT */
/*
 * Return probes versus stack unwinders, and versus stack switches.
 *
 * A return probe replaces a return address with a trampoline. An unwinder
 * walking the stack (a C++ throw, pthread_exit's and pthread_cancel's
 * forced unwind, backtrace()) would find no unwind info for the
 * trampoline and stop: a C++ exception would end in std::terminate. So
 * before the first return probe goes in, the engine puts entry probes on
 * every unwinder's entry points; their handler writes the real return
 * address of each frame the unwinder may walk back where it lives now
 * (np_shadow_unwind). Those frames then never return through the
 * trampoline: their return handlers are counted as missed, and the
 * program is unaffected.
 *
 * Which unwinder meets a frame is the program's business: libgcc_s (C++
 * with the shared runtime; glibc's backtrace and thread cancellation
 * always), a static copy of libgcc_eh in the executable or in any library
 * built with -static-libgcc (its functions are local symbols: only the
 * symbol table names them), LLVM's libunwind, shared or static. One throw
 * may use two: a program linked with -static-libgcc but the shared
 * libstdc++ raises through libgcc_s, and its own landing pads resume
 * through its own copy. So every module's symbol tables are searched,
 * .symtab included, for the _Unwind_* entry points, at the first return
 * probe and then for each module loaded since (at every attach and
 * np_maintain while return probes exist; the agent runs that from its
 * dlopen hook, before dlopen returns).
 *
 * A module with an unwinder of its own and no symbol table (a stripped
 * executable linked with -static-libgcc) cannot be guarded: an exception
 * it throws through a return probe would end the program. Return probes
 * are then refused, with the reason; if they were in place already when
 * such a module is loaded, they are turned off (np_shadow_disarm): calls
 * made from then on are not armed, and their returns count as missed.
 *
 * swapcontext and setcontext are hooked as well: the frames on the shadow
 * stack when a thread switches stacks say nothing, by their addresses,
 * about the stack it comes back on (np_shadow_switch).
 *
 * libgcc_s is loaded here if the program has not loaded it yet; glibc
 * loads it anyway on the first pthread_exit or cancellation.
 */

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/maps.h"
#include "core/modules.h"
#include "core/shadow.h"
#include "core/thread.h"
#include "host/host.h"
#include "host/layout.h"

static const char *const names[] = {
	"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_ForcedUnwind",
	"_Unwind_Resume_or_Rethrow", "_Unwind_Backtrace", "swapcontext", "setcontext", NULL,
};
#define NNAMES (sizeof(names) / sizeof(names[0]) - 1)
#define FIRST_SWITCHER 5

/* The unwinder's entry sp: the stack it will walk from. The handler
 * itself may run elsewhere (a breakpoint's signal, on an alternate stack:
 * ASan gives every thread one). */
static void put_returns_back(struct np_ctx *ctx, void *data)
{
	(void)data;
	struct np_thread *t = np_thread_peek();
	if (t)
		np_shadow_unwind(t, np_ctx_sp(ctx));
}

static void switches_stacks(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
	struct np_thread *t = np_thread_peek();
	if (t)
		np_shadow_switch(t);
}

/* What was looked at: modules by load address and the loader's name for
 * them (a module unloaded and another loaded at its place differ in one
 * or the other, or are the same file again), with the loader's bias;
 * functions hooked. */
struct seen {
	uint64_t at, bias;
	char name[256];
};
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct seen *seen;
static size_t nseen, capseen;
static uint64_t *hooked;
static size_t nhooked, caphooked;
static bool active;          /* a return probe was asked for */
static char refusal[512];    /* why return probes are refused, or "" */

static void hook(uint64_t fn, const char *name)
{
	for (size_t i = 0; i < nhooked; i++)
		if (hooked[i] == fn)
			return;
	if (!np_grow(&hooked, &caphooked, nhooked, sizeof(*hooked)))
		return;
	bool unwinder = strncmp(name, "_Unwind_", 8) == 0;
	struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = unwinder ? put_returns_back
								   : switches_stacks,
					       .name = name, .flags = NP_PROBE_NO_FPU);
	struct np_probe *p = np_probe_attach((void *)(uintptr_t)fn, &o);
	if (!p) {
		np_logf(NP_LOG_WARN, "cannot guard %s at %#llx: %s", name, (unsigned long long)fn,
			unwinder ? "exceptions thrown through functions with return probes may abort"
				 : "return probes on coroutines may lose track of returns");
		return;
	}
	p->internal = true;
	hooked[nhooked++] = fn;
}

/* The modules the loader lists, collected first and looked at after: the
 * callback runs under the loader's lock. */
struct loads {
	struct seen *v;
	size_t n, cap;
};

static int note_module(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct loads *l = cookie;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			if (np_grow(&l->v, &l->cap, l->n, sizeof(*l->v))) {
				l->v[l->n].at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
				l->v[l->n].bias = info->dlpi_addr;
				snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s",
					 info->dlpi_name ? info->dlpi_name : "");
				l->n++;
			}
			break;
		}
	return 0;
}

/* The file mapped at addr, from a snapshot of the maps of our own: the
 * cached one is the engine's, and this runs without its lock. */
static bool mapped_file(uint64_t addr, char *path, size_t len)
{
	struct np_maps maps;
	bool found = false;
	if (np_maps_read(&maps))
		return false;
	for (int i = 0; i < maps.n && !found; i++)
		if (addr >= maps.v[i].start && addr < maps.v[i].end && maps.v[i].path[0] == '/') {
			snprintf(path, len, "%s", maps.v[i].path);
			found = true;
		}
	np_maps_free(&maps);
	return found;
}

/* The module's file: the loader's name for it when that is a path from
 * the root, which it is but for the program itself (unnamed) and for a
 * dlopen of a relative name; those are found in the maps. The vDSO has
 * no file: false. */
static bool module_path(const struct seen *m, char *path, size_t len)
{
	if (m->name[0] == '/') {
		snprintf(path, len, "%s", m->name);
		return true;
	}
	return mapped_file(m->at, path, len);
}

/* A module not looked at yet: its guards placed, or the reason return
 * probes cannot be had from now on. Each is read once. */
static void look_at(const struct seen *m)
{
	uint64_t fn[NNAMES];
	char path[256];
	bool unnamed;
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].at == m->at && !strcmp(seen[i].name, m->name))
			return;
	if (!np_grow(&seen, &capseen, nseen, sizeof(*seen)))
		return;
	seen[nseen++] = *m;
	if (!module_path(m, path, sizeof(path)) ||
	    np_module_functions(path, m->bias, names, fn, &unnamed))
		return;
	for (size_t k = 0; k < NNAMES; k++)
		if (fn[k])
			hook(fn[k], names[k]);
	if (unnamed && !refusal[0])
		snprintf(refusal, sizeof(refusal),
			 "%s has a stack unwinder of its own (a static libgcc_eh or libunwind) and no "
			 "symbol table to find it by: a C++ exception it throws through a return "
			 "probe would end in std::terminate",
			 path);
}

static int refresh_locked(void)
{
	struct loads l = {0};
	dl_iterate_phdr(note_module, &l);
	for (size_t i = 0; i < l.n; i++)
		look_at(&l.v[i]);
	free(l.v);
	if (!refusal[0])
		return 0;
	np_shadow_disarm(refusal);
	return -EOPNOTSUPP;
}

/* Called without the engine lock, before return probes go in: from then
 * on every refresh looks at the modules loaded since. */
int np_unwind_guard_refresh(bool returns)
{
	pthread_mutex_lock(&lock);
	if (returns && !active) {
		active = true;
		dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_GLOBAL);
	}
	int err = active ? refresh_locked() : 0;
	pthread_mutex_unlock(&lock);
	return err;
}

const char *np_unwind_refusal(void)
{
	return refusal;
}

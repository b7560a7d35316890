/* SPDX-License-Identifier: MIT */
/*
 * Return probes versus stack unwinders.
 *
 * A return probe replaces a return address with the return trampoline. An
 * unwinder walking the stack (a C++ throw, pthread_exit's forced unwind,
 * backtrace()) would find no unwind info for the trampoline and stop, and a
 * C++ exception would end in std::terminate. So before the first return
 * probe goes in, the engine puts entry probes on the unwinder's entry
 * points; their handler writes every real return address of the calling
 * thread back into its stack slot and empties its shadow stack. The frames
 * being unwound then never return through the trampoline: their return
 * handlers are counted as missed, and the program is unaffected.
 *
 * libgcc_s is loaded here if the program has not loaded it yet; glibc
 * loads it anyway on the first pthread_exit or cancellation.
 */
#include "core/internal.h"

#include <dlfcn.h>
#include <stdbool.h>

static const char *const entry_points[] = {
	"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_ForcedUnwind",
	"_Unwind_Resume_or_Rethrow", "_Unwind_Backtrace",
};

static bool hooked;

static void put_returns_back(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
	struct np_thread *t = np_thread_peek();
	if (t)
		np_shadow_unwind_all(t);
}

static void hook(void *fn, const char *name)
{
	struct np_probe_opts o = NP_PROBE_OPTS(.on_entry = put_returns_back, .name = name,
					       .flags = NP_PROBE_NO_FPU);
	if (fn && !np_probe_attach(fn, &o))
		np_logf(NP_LOG_WARN, "cannot guard %s: exceptions thrown through functions with "
				     "return probes may abort", name);
}

/* Called without the engine lock, before the first return probe. */
void np_unwind_guard_install(void)
{
	if (__atomic_exchange_n(&hooked, true, __ATOMIC_ACQ_REL))
		return;
	void *gcc_s = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_GLOBAL);
	for (unsigned i = 0; i < sizeof(entry_points) / sizeof(entry_points[0]); i++) {
		void *in_gcc_s = gcc_s ? dlsym(gcc_s, entry_points[i]) : NULL;
		void *global = dlsym(RTLD_DEFAULT, entry_points[i]);
		hook(in_gcc_s, entry_points[i]);
		if (global && global != in_gcc_s)
			hook(global, entry_points[i]); /* a static copy in the program */
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * A module with an unwinder of its own, loaded after return probes exist
 * and by a relative name (the loader then keeps that name, not a path from
 * the root): the engine must still find its file, guard its local
 * _Unwind_* functions, and so let an exception it throws pass the
 * return-probed frames. Unguarded, the throw ends in std::terminate.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e.h"
#include "test.h"

static int returns;

static void on_return(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
	__atomic_fetch_add(&returns, 1, __ATOMIC_RELAXED);
}

static E2E_NOIPA int unprobed(int n)
{
	return n + 1;
}

/* Loaded from the test's own folder by "./libunwinddl.so". */
static void *load_by_relative_name(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	if (chdir(dirname(exe)))
		return NULL;
	return dlopen("./libunwinddl.so", RTLD_NOW);
}

TEST(an_exception_in_a_module_loaded_by_a_relative_name_passes_its_probed_frames)
{
	const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};
	/* a return probe first, so that the module is loaded after the
	 * unwinder guard is armed */
	struct np_probe_opts o = e2e_opts(NULL, NULL, NP_STRATEGY_AUTO);
	o.on_return = on_return;
	struct np_probe *first = np_probe_attach((void *)unprobed, &o);
	CHECK(first != NULL);
	if (!first)
		return;
	void *h = load_by_relative_name();
	if (!h)
		fprintf(stderr, "# dlopen: %s\n", dlerror());
	CHECK(h != NULL);
	if (!h)
		return;
	int (*thrower)(int) = (int (*)(int))dlsym(h, "lib_thrower");
	int (*catcher)(int) = (int (*)(int))dlsym(h, "lib_catcher");
	CHECK(thrower && catcher);
	if (!thrower || !catcher)
		return;
	for (size_t s = 0; s < sizeof(strategies) / sizeof(*strategies); s++) {
		o.strategy = strategies[s];
		struct np_probe *p = np_probe_attach((void *)catcher, &o);
		struct np_probe *q = np_probe_attach((void *)thrower, &o);
		CHECK(p && q);
		if (!p || !q)
			return;
		returns = 0;
		int sum = 0;
		for (int i = 0; i < 50; i++)
			sum += catcher(1) + 10 * catcher(0);
		CHECK_EQ(sum, 50 * 9);
		/* calls that throw nothing return through their probes; the
		 * frames an unwinder walked (the catching one too) may not */
		int seen = __atomic_load_n(&returns, __ATOMIC_RELAXED);
		CHECK(seen >= 50 * 2 && seen <= 50 * 3);
		CHECK_EQ(e2e_detach_free(q), 0);
		CHECK_EQ(e2e_detach_free(p), 0);
	}
	CHECK_EQ(unprobed(1), 2);
	CHECK_EQ(e2e_detach_free(first), 0);
	dlclose(h);
}

TEST_MAIN()

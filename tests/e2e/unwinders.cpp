// SPDX-License-Identifier: MIT
//
// C++ exceptions and backtrace() through return-probed frames, whichever
// unwinder the program carries. Built several times (tests/e2e/meson.build):
// with the shared libgcc_s, with a static libgcc_eh inside the executable
// (-static-libgcc -static-libstdc++, whose _Unwind_* are local symbols), the
// same stripped (no symbol table to find them by: return probes must be
// refused, the program unaffected), and with libc++ on LLVM's libunwind.
// The unwinder meets the frames with their return addresses replaced by
// the return trampoline unless the engine puts them back first.
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <execinfo.h>
#include <stdexcept>
#include <unwind.h>

#include "cxx_frames.h"
#include "e2e.h"
extern "C" {
#include "test.h"
}

namespace {

int catcher(int n, bool do_throw);
int rethrower(int n, bool do_throw);
int (*volatile catcher_p)(int, bool) = catcher;
int (*volatile rethrower_p)(int, bool) = rethrower;

// Catches, cleans up, and throws the same exception on.
E2E_NOIPA int rethrower(int n, bool do_throw)
{
	try {
		return middle_p(n, do_throw) + 1000;
	} catch (const std::runtime_error &) {
		dtors += 10;
		throw;
	}
}

// Catches what the frames below throw and returns normally.
E2E_NOIPA int catcher(int n, bool do_throw)
{
	try {
		return rethrower_p(n, do_throw);
	} catch (const std::runtime_error &e) {
		return strcmp(e.what(), "boom") == 0 ? -1 : -2;
	}
}

const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};

#ifdef E2E_UNWIND_STRIPPED
const bool refused = true; // the unwinder has no symbol to be found by
#else
const bool refused = false;
#endif

struct probes {
	enum { N = 4 };
	struct np_probe *p[N];
	rets r[N]; // thrower, middle, rethrower, catcher

	probes(enum np_strategy s, bool returns)
	{
		void *fn[N] = {(void *)thrower, (void *)middle, (void *)rethrower, (void *)catcher};

		memset(r, 0, sizeof r);
		for (int i = 0; i < N; i++) {
			struct np_probe_opts o = e2e_opts(on_entry, &r[i], s);

			o.on_return = returns ? on_return : nullptr;
			p[i] = np_probe_attach(fn[i], &o);
			if (!p[i])
				fprintf(stderr, "# attach %d (%s): %s; log: %s\n", i,
					np_strategy_name(s), strerror(errno), e2e_log_state.last);
			CHECK(p[i] != nullptr);
		}
	}
	~probes()
	{
		for (int i = 0; i < N; i++)
			if (p[i])
				CHECK_EQ(e2e_detach_free(p[i]), 0);
	}
	void reset() { memset(r, 0, sizeof r); }
};

// Which unwinder raises: the module _Unwind_RaiseException is in.
const char *raiser()
{
	Dl_info info;
	void *fn = reinterpret_cast<void *>(&_Unwind_RaiseException);
	return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

} // namespace

TEST(exceptions_thrown_rethrown_and_caught_across_probed_frames)
{
	e2e_log_capture();
	printf("# _Unwind_RaiseException in %s\n", raiser());
	if (refused)
		return;
	for (enum np_strategy s : strategies) {
		probes pr(s, true);
		int bad = 0;

		for (int i = 0; i < 200; i++) {
			pr.reset();
			dtors = 0;
			// six thrower frames, middle's guard, rethrower's cleanup
			if (catcher_p(5, true) != -1 || dtors != 7 + 10)
				bad++;
			if (pr.r[0].entries != 6 || pr.r[0].returns != 0 || pr.r[1].returns != 0 ||
			    pr.r[2].returns != 0 || pr.r[3].entries != 1 || pr.r[3].returns > 1)
				bad++;
			pr.reset();
			dtors = 0;
			// and calls that return still return through their own frames
			if (catcher_p(3, false) != 1104 || dtors != 5)
				bad++;
			if (pr.r[0].returns != 4 || pr.r[0].last != 4 || pr.r[1].last != 104 ||
			    pr.r[2].last != 1104 || pr.r[3].returns != 1 || pr.r[3].last != 1104)
				bad++;
		}
		CHECK_EQ(bad, 0);
	}
}

TEST(an_exception_leaving_every_probed_frame_reaches_an_unprobed_catch)
{
	e2e_log_capture();
	if (refused)
		return;
	for (enum np_strategy s : strategies) {
		probes pr(s, true);
		bool caught = false;

		dtors = 0;
		try {
			rethrower_p(4, true);
		} catch (const std::runtime_error &e) {
			caught = strcmp(e.what(), "boom") == 0;
		}
		CHECK(caught);
		CHECK_EQ(dtors, 6 + 10);
		CHECK_EQ(middle_p(2, false), 103);
		CHECK_EQ(pr.r[1].last, 103);
	}
}

// ---- backtrace() under return probes ----------------------------------------

namespace {
int bt_depth;
void *bt_frames[64];

int bt_inner(int n);
int (*volatile bt_inner_p)(int) = bt_inner;

E2E_NOIPA int bt_inner(int n)
{
	if (n == 0) {
		bt_depth = backtrace(bt_frames, 64);
		return 0;
	}
	return 1 + bt_inner_p(n - 1);
}

// One call site for the walks compared (not a tail call: its return
// address is the outermost probed frame's): the frames up to it match.
E2E_NOIPA int bt_run()
{
	int r = bt_inner_p(4);
	__asm__ volatile("" ::: "memory");
	return r;
}

} // namespace

// The frames backtrace() reports under probes are the ones it reports
// without: the real return addresses, never a trampoline's.
TEST(backtrace_inside_probed_frames_shows_the_frames_it_shows_without_probes)
{
	void *plain[64];

	e2e_log_capture();
	if (refused)
		return;
	CHECK_EQ(bt_run(), 4);
	int nplain = bt_depth;
	memcpy(plain, bt_frames, sizeof plain);
	CHECK(nplain > 6);
	for (enum np_strategy s : strategies) {
		rets r = {};
		struct np_probe_opts o = e2e_opts(on_entry, &r, s);

		o.on_return = on_return;
		struct np_probe *p = np_probe_attach((void *)bt_inner, &o);
		CHECK(p);
		bt_depth = 0;
		memset(bt_frames, 0, sizeof bt_frames);
		CHECK_EQ(bt_run(), 4);
		CHECK(bt_depth > 6);
		for (int i = 0; i <= 5 && i < bt_depth; i++) /* bt_inner x5, bt_run */
			if (bt_frames[i] != plain[i]) {
				fprintf(stderr, "# frame %d: %p, without probes %p\n", i, bt_frames[i],
					plain[i]);
				CHECK(bt_frames[i] == plain[i]);
			}
		CHECK_EQ(r.entries, 5);
		// the walked frames' returns came back straight: counted missed
		if (p) {
			CHECK_EQ(r.returns + np_probe_missed(p), 5);
			CHECK_EQ(e2e_detach_free(p), 0);
		}
		r = {};
		// and with the frames back, a call returns through its probe
		struct np_probe *q = np_probe_attach((void *)thrower, &o);
		CHECK(q);
		CHECK_EQ(thrower_p(2, false), 3);
		CHECK_EQ(r.returns, 3);
		if (q)
			CHECK_EQ(e2e_detach_free(q), 0);
	}
}

// ---- through a probed library function ---------------------------------------

namespace {
int throwing_compare(const void *a, const void *b)
{
	if (*static_cast<const int *>(a) == 3 || *static_cast<const int *>(b) == 3)
		throw std::runtime_error("boom");
	return *static_cast<const int *>(a) - *static_cast<const int *>(b);
}

// libc's qsort between the throw (its comparator) and the catch.
E2E_NOIPA bool sort_throws()
{
	int v[] = {5, 1, 4, 3, 2};
	try {
		qsort(v, 5, sizeof v[0], throwing_compare);
	} catch (const std::runtime_error &) {
		return true;
	}
	return false;
}

} // namespace

// An exception from the program's code through a return-probed libc
// function. Where the program's unwinder is a stripped static copy,
// nothing names its entry points, so that exception would end the
// program: return probes are refused there, with the reason. Entry probes
// are not, and exceptions under them go on as ever.
TEST(an_exception_through_a_probed_libc_function_or_its_refusal)
{
	e2e_log_capture();
	for (enum np_strategy s : strategies) {
		rets r = {};
		struct np_probe_opts o = e2e_opts(on_entry, &r, s);

		o.on_return = on_return;
		errno = 0;
		struct np_probe *p = np_probe_attach((void *)qsort, &o);
		if (refused) {
			CHECK(!p);
			CHECK_EQ(errno, EOPNOTSUPP);
			printf("# refused: %s\n", e2e_log_state.last);
			CHECK(strstr(e2e_log_state.last, "unwinder") != nullptr);
			o.on_return = nullptr;
			p = np_probe_attach((void *)qsort, &o);
		}
		CHECK(p);
		CHECK(sort_throws());
		CHECK(sort_throws());
		CHECK_EQ(r.entries, 2);
		CHECK_EQ(r.returns, 0);
		if (p)
			CHECK_EQ(e2e_detach_free(p), 0);
	}
	if (!refused)
		return;
	for (enum np_strategy s : strategies) {
		probes pr(s, false);
		dtors = 0;
		CHECK_EQ(catcher_p(5, true), -1);
		CHECK_EQ(dtors, 17);
		CHECK_EQ(pr.r[0].entries, 6);
		CHECK_EQ(catcher_p(2, false), 1103);
	}
}

extern "C" {
TEST_MAIN()
}

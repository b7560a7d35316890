// SPDX-License-Identifier: MIT
//
// C++ exceptions through frames with return probes: the unwinder walks the
// stack by return address, so it must never see the return trampoline in
// place of the real one. The exception must reach its catch, every
// destructor on the way must run, and later probed calls must still return
// through the right shadow entries. Linked into the retprobe test.
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <inttypes.h>
#include <stdexcept>

#include "cxx_frames.h"
#include "e2e.h"
extern "C" {
#include "test.h"
}

namespace {

int catcher(int n, bool do_throw);
int (*volatile catcher_p)(int, bool) = catcher;

// Catches what the frames below throw and returns normally.
E2E_NOIPA int catcher(int n, bool do_throw)
{
	try {
		return middle_p(n, do_throw);
	} catch (const std::runtime_error &) {
		return -1;
	}
}

struct probes {
	struct np_probe *p[3];
	rets r[3]; // thrower, middle, catcher

	explicit probes(enum np_strategy s)
	{
		void *fn[3] = {(void *)thrower, (void *)middle, (void *)catcher};

		memset(r, 0, sizeof r);
		for (int i = 0; i < 3; i++) {
			struct np_probe_opts o = e2e_opts(on_entry, &r[i], s);

			o.on_return = on_return;
			p[i] = np_probe_attach(fn[i], &o);
			if (!p[i])
				fprintf(stderr, "# attach %d (%s): %s; log: %s\n", i,
					np_strategy_name(s), strerror(errno), e2e_log_state.last);
			CHECK(p[i] != NULL);
		}
	}
	~probes()
	{
		for (int i = 0; i < 3; i++)
			if (p[i])
				CHECK_EQ(e2e_detach_free(p[i]), 0);
	}
	void reset() { memset(r, 0, sizeof r); }
};

const enum np_strategy strategies[] = {NP_STRATEGY_AUTO, NP_STRATEGY_TRAP};

} // namespace

// The catcher's own frame survives the exception: its return handler should
// fire with -1; an engine that gives up on every shadow entry when an
// exception starts must at least count that return as missed.
TEST(cxx_exception_through_probed_frames_reaches_its_catch)
{
	e2e_log_capture();
	for (enum np_strategy s : strategies) {
		probes pr(s);
		int bad = 0;
		unsigned catcher_lost = 0;
		uint64_t missed0 = pr.p[2] ? np_probe_missed(pr.p[2]) : 0;

		for (int i = 0; i < 200; i++) {
			pr.reset();
			dtors = 0;
			if (catcher_p(5, true) != -1)
				bad++;
			if (dtors != 7) // six thrower frames and the middle one
				bad++;
			if (pr.r[2].returns == 0)
				catcher_lost++;
			if (pr.r[0].entries != 6 || pr.r[0].returns != 0 ||
			    pr.r[1].entries != 1 || pr.r[1].returns != 0 ||
			    pr.r[2].entries != 1 || pr.r[2].returns > 1 ||
			    (pr.r[2].returns == 1 && pr.r[2].last != -1)) {
				if (!bad)
					fprintf(stderr, "# thrower %u/%u, middle %u/%u, catcher %u/%u "
						"last %d (entries/returns)\n", pr.r[0].entries,
						pr.r[0].returns, pr.r[1].entries, pr.r[1].returns,
						pr.r[2].entries, pr.r[2].returns, pr.r[2].last);
				bad++;
			}
		}
		CHECK_EQ(bad, 0);
		if (catcher_lost)
			printf("# %s: the catching frame's return handler was lost %u/200 times\n",
			       np_strategy_name(s), catcher_lost);
		if (pr.p[2])
			CHECK_EQ(np_probe_missed(pr.p[2]) - missed0, catcher_lost);
	}
}

TEST(cxx_probed_calls_after_exceptions_return_through_the_right_entries)
{
	e2e_log_capture();
	for (enum np_strategy s : strategies) {
		probes pr(s);
		int bad = 0;

		for (int i = 0; i < 200; i++) {
			pr.reset();
			CHECK_EQ(catcher_p(3, true), (uint64_t)-1);
			pr.reset();
			dtors = 0;
			if (catcher_p(5, false) != 106 || dtors != 7)
				bad++;
			if (pr.r[0].returns != 6 || pr.r[0].last != 6 || pr.r[1].returns != 1 ||
			    pr.r[1].last != 106 || pr.r[2].returns != 1 || pr.r[2].last != 106)
				bad++;
		}
		CHECK_EQ(bad, 0);
	}
}

TEST(cxx_exception_leaving_every_probed_frame_reaches_an_unprobed_catch)
{
	e2e_log_capture();
	for (enum np_strategy s : strategies) {
		probes pr(s);
		bool caught = false;

		dtors = 0;
		try {
			middle_p(4, true);
		} catch (const std::runtime_error &e) {
			caught = strcmp(e.what(), "boom") == 0;
		}
		CHECK(caught);
		CHECK_EQ(dtors, 6);
		CHECK_EQ(pr.r[0].returns + pr.r[1].returns, 0);
		CHECK_EQ(middle_p(2, false), 103); // and the next call is right
		CHECK_EQ(pr.r[1].last, 103);
	}
}

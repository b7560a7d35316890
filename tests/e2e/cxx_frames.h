// SPDX-License-Identifier: MIT
//
// The frames a C++ exception crosses in the return-probe tests
// (retprobe_cxx.cpp, unwinders.cpp), and the handlers that count what the
// probes on them saw. Each test file includes it once: everything here has
// internal linkage.
#ifndef NP_E2E_CXX_FRAMES_H
#define NP_E2E_CXX_FRAMES_H

#include <cstdint>
#include <stdexcept>

#include "e2e.h"

namespace {

int dtors; // destructors run since the test last cleared it
struct Guard {
	~Guard() { dtors++; }
};

int thrower(int n, bool do_throw);
int middle(int n, bool do_throw);
int (*volatile thrower_p)(int, bool) = thrower;
int (*volatile middle_p)(int, bool) = middle;

// 1 + depth if it returns; throws from the innermost frame if asked.
E2E_NOIPA int thrower(int n, bool do_throw)
{
	Guard g;
	if (n == 0) {
		if (do_throw)
			throw std::runtime_error("boom");
		return 1;
	}
	return 1 + thrower_p(n - 1, do_throw);
}

// Unwound through: a destructor to run, no handler.
E2E_NOIPA int middle(int n, bool do_throw)
{
	Guard g;
	return thrower_p(n, do_throw) + 100;
}

// What the probes on one function saw.
struct rets {
	unsigned entries, returns;
	int last;
};

void on_entry(struct np_ctx *, void *data)
{
	static_cast<rets *>(data)->entries++;
}

void on_return(struct np_ctx *ctx, void *data)
{
	rets *r = static_cast<rets *>(data);

	r->returns++;
	r->last = (int)(uint32_t)np_ctx_retval(ctx);
}

} // namespace

#endif

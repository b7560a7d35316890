// SPDX-License-Identifier: MIT
//
// libunwinddl.so: a library with a stack unwinder of its own (linked with
// -static-libgcc -static-libstdc++: its _Unwind_* are local symbols), which
// e2e-unwind-dlopen loads by a relative name once return probes exist, and
// which throws and catches through its own frames.
#include <stdexcept>

#define LIB_NOIPA __attribute__((noinline, noipa))

extern "C" LIB_NOIPA int lib_thrower(int n)
{
	if (n > 0)
		throw std::runtime_error("boom");
	return n;
}

extern "C" LIB_NOIPA int lib_catcher(int n)
{
	try {
		return lib_thrower(n) + 1;
	} catch (const std::runtime_error &) {
		return -1;
	}
}

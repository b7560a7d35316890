// Built against an installed nanoprobe from C++, with warnings as errors:
// the header must serve C++ too, &NP_PROBE_OPTS(...) as the README shows
// it included (C++ has no compound literals whose address can be taken).
#include <nanoprobe/nanoprobe.h>

#include <cstdio>

namespace {

unsigned long calls;

void count(struct np_ctx *, void *data)
{
	++*static_cast<unsigned long *>(data);
}

} // namespace

extern "C" __attribute__((noinline)) int triple(int x)
{
	__asm__ volatile("");
	return 3 * x;
}

int main()
{
	struct np_probe *p = np_probe_attach(reinterpret_cast<void *>(triple),
					     &NP_PROBE_OPTS(.on_entry = count, .data = &calls));
	if (!p)
		return 1;
	int sum = 0;
	for (int i = 0; i < 100; i++)
		sum += triple(i);
	np_probe_free(p);
	std::printf("%lu calls, sum %d\n", calls, sum);
	return calls == 100 && sum == 14850 ? 0 : 1;
}

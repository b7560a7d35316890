/* Built against an installed nanoprobe with nothing but pkg-config: the
 * header, the library and nanoprobe.pc must all be in place. */
#include <nanoprobe/nanoprobe.h>

#include <stdio.h>

static unsigned long calls;

__attribute__((noinline)) int triple(int x)
{
	__asm__ volatile("");
	return 3 * x;
}

static void count(struct np_ctx *ctx, void *data)
{
	(void)ctx;
	++*(unsigned long *)data;
}

int main(void)
{
	struct np_probe *p = np_probe_attach((void *)triple,
					     &NP_PROBE_OPTS(.on_entry = count, .data = &calls));
	if (!p)
		return 1;
	int sum = 0;
	for (int i = 0; i < 100; i++)
		sum += triple(i);
	np_probe_free(p);
	printf("%lu calls, sum %d\n", calls, sum);
	return calls == 100 && sum == 14850 ? 0 : 1;
}

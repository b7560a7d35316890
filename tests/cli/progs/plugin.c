/* SPDX-License-Identifier: MIT */
/* A library loaded with dlopen by plugin_host. */
__attribute__((noinline)) int plugin_fn(int x)
{
	return x * 7 + 3;
}

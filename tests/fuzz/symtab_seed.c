/* SPDX-License-Identifier: MIT */
/* A small program whose ELF file seeds the symtab fuzzer (built, not
 * checked in): a few functions, a static one, data. */
int fuzz_seed_data = 42;
static int helper(int x)
{
	return x * 3 + fuzz_seed_data;
}
int fuzz_seed_fn(int x);
int fuzz_seed_fn(int x)
{
	return helper(x) - 1;
}
int main(int argc, char **argv)
{
	(void)argv;
	return fuzz_seed_fn(argc) == 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Disassembly text. The vector table's expected strings are checked two
 * ways: against format() here, and, when aarch64-linux-gnu-as and
 * aarch64-linux-gnu-objdump are installed (on any host), against objdump
 * itself: each vector assembled as .inst in its own section, disassembled
 * at 0x401000, objdump's "401010 <sym>" rewritten as 0x401010 and its
 * "// b.any"-style alias comments dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "a64_test.h"

static int format(uint32_t w, uint64_t pc, char *text, size_t cap)
{
	uint8_t b[4];

	a64_le(b, w);
	return ISA->format(b, 4, pc, text, cap);
}

TEST(every_vector_formats_as_objdump_prints_it)
{
	for (size_t i = 0; i < a64_nvectors; i++) {
		char text[128];
		int n = format(a64_vectors[i].w, PC, text, sizeof(text));

		CHECK(n > 0);
		CHECK_STR(n > 0 ? text : "(error)", a64_vectors[i].text);
		CHECK_EQ(n, strlen(a64_vectors[i].text));
	}
}

TEST(format_prints_branch_targets_absolute_from_pc)
{
	char text[64];

	CHECK(format(0x94000001, 0x7f0000001000ull, text, sizeof(text)) > 0); /* bl .+4 */
	CHECK_STR(text, "bl\t0x7f0000001004");
}

TEST(format_prints_an_unknown_word_as_inst)
{
	char text[64];

	CHECK(format(0xffffffff, PC, text, sizeof(text)) > 0);
	CHECK_STR(text, ".inst\t0xffffffff");
}

TEST(format_fails_with_enospc_rather_than_truncating)
{
	char text[8];

	CHECK_EQ(format(0xa9bf7bfd, PC, text, sizeof(text)), -ENOSPC);
}

TEST(format_of_a_partial_word_is_enodata)
{
	const uint8_t b[3] = {0x1f, 0x20, 0x03};
	char text[64];

	CHECK_EQ(ISA->format(b, sizeof(b), PC, text, sizeof(text)), -ENODATA);
}

/* ------------------------------------------------------------------ */
/* The same table against objdump                                      */

TEST(vector_table_matches_objdump_when_installed)
{
	uint32_t *w = calloc(a64_nvectors, sizeof(*w));
	char(*text)[128] = calloc(a64_nvectors, sizeof(*text));
	int n;

	CHECK(w && text);
	for (size_t i = 0; w && i < a64_nvectors; i++)
		w[i] = a64_vectors[i].w;
	n = w && text ? a64_objdump(w, a64_nvectors, text) : 0;
	if (n < 0)
		printf("# skip: no aarch64-linux-gnu-as/objdump (make deps installs them)\n");
	for (int i = 0; i < n; i++) {
		if (strcmp(text[i], a64_vectors[i].text) != 0)
			fprintf(stderr, "vector %d (0x%08x): objdump says \"%s\"\n", i,
				a64_vectors[i].w, text[i]);
		CHECK_STR(text[i], a64_vectors[i].text);
	}
	if (n >= 0)
		CHECK_EQ((size_t)n, a64_nvectors);
	free(w);
	free(text);
}

TEST_MAIN()

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

static bool write_vectors(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	for (size_t i = 0; i < a64_nvectors; i++)
		fprintf(f, ".section .text.v%zu,\"ax\"\n.inst 0x%08x\n", i, a64_vectors[i].w);
	return fclose(f) == 0;
}

/* Compares section by section: one instruction line after each header. */
static void compare_objdump(FILE *p)
{
	char line[256], text[256];
	size_t v = 0, lines = 0;
	bool want = false;

	while (fgets(line, sizeof(line), p)) {
		char *tab = strchr(line, '\t');

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Disassembly of section .text.v", 30) == 0) {
			v = strtoul(line + 30, NULL, 10);
			want = v < a64_nvectors;
			continue;
		}
		if (!want || !tab || !strchr(line, ':'))
			continue;
		a64_gnu_text(tab + 1, text, sizeof(text));
		if (strcmp(text, a64_vectors[v].text) != 0)
			fprintf(stderr, "vector %zu (0x%08x): objdump says \"%s\"\n", v,
				a64_vectors[v].w, text);
		CHECK_STR(text, a64_vectors[v].text);
		want = false;
		lines++;
	}
	CHECK_EQ(lines, a64_nvectors);
}

#define AS      "aarch64-linux-gnu-as"
#define OBJDUMP "aarch64-linux-gnu-objdump"

TEST(vector_table_matches_objdump_when_installed)
{
	char dir[] = "/tmp/np-a64-vectors-XXXXXX", cmd[512], src[128], obj[128];
	FILE *p;

	if (system("command -v " AS " >/dev/null 2>&1 && command -v " OBJDUMP
		   " >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir)) {
		printf("# skip: no " AS "/" OBJDUMP " (make deps installs them)\n");
		return;
	}
	snprintf(src, sizeof(src), "%s/v.s", dir);
	snprintf(obj, sizeof(obj), "%s/v.o", dir);
	CHECK(write_vectors(src));
	snprintf(cmd, sizeof(cmd), AS " -o %s %s", obj, src);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), OBJDUMP " -d -z --no-show-raw-insn --adjust-vma=0x%llx %s",
		 (unsigned long long)PC, obj);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	if (p) {
		compare_objdump(p);
		pclose(p);
	}
	unlink(src);
	unlink(obj);
	rmdir(dir);
}

TEST_MAIN()

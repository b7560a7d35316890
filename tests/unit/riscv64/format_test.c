/* SPDX-License-Identifier: MIT */
/*
 * Disassembly text. The vector table's strings are checked against
 * format() here and, when riscv64-linux-gnu-as and -objdump are installed
 * (any host), against objdump itself: each vector assembled with .insn in
 * its own section and disassembled at PC, objdump's "10040 <sym>" written
 * 0x10040 and its "# value" comments dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit/objdump_text.h"
#include "rv_test.h"

TEST(every_vector_formats_as_objdump_prints_it)
{
	for (size_t i = 0; i < rv_nvectors; i++) {
		uint8_t b[4];
		char text[128];
		size_t n = rv_vec_bytes(&rv_vectors[i], b);
		int r = ISA->format(b, n, PC, text, sizeof(text));

		CHECK(r > 0);
		CHECK_STR(r > 0 ? text : "(error)", rv_vectors[i].text);
		CHECK_EQ(r, strlen(rv_vectors[i].text));
	}
}

TEST(format_prints_branch_targets_absolute_from_pc)
{
	const uint8_t b[] = {0xef, 0x00, 0x00, 0x10}; /* jal .+0x100 */
	char text[64];

	CHECK(ISA->format(b, sizeof(b), 0x3ff7f0000ull, text, sizeof(text)) > 0);
	CHECK_STR(text, "jal\t0x3ff7f0100");
}

TEST(format_fails_with_enospc_rather_than_truncating)
{
	const uint8_t b[] = {0x13, 0x01, 0x01, 0xfe}; /* "add\tsp,sp,-32": 13 characters */
	char text[14];

	CHECK_EQ(ISA->format(b, sizeof(b), PC, text, 13), -ENOSPC);
	CHECK_EQ(ISA->format(b, sizeof(b), PC, text, 14), 13);
}

TEST(format_of_invalid_bytes_is_eilseq)
{
	const uint8_t b[] = {0x57, 0x00, 0x00, 0x02}; /* a V-extension word */
	char text[64];

	CHECK_EQ(ISA->format(b, sizeof(b), PC, text, sizeof(text)), -EILSEQ);
}

/* ------------------------------------------------------------------ */

/* "beq\ta0,a1,10040 <.text.v8+0x40>" -> "beq\ta0,a1,0x10040"; drops " # ..." */
static void gnu_addresses(const char *in, char *out, size_t cap)
{
	static const char *const cut[] = {" #", NULL};
	static const struct objdump_dialect rv = {.cut = cut, .addr_after = "\t ,"};
	objdump_text(&rv, in, out, cap);
}

static bool write_vectors(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	for (size_t i = 0; i < rv_nvectors; i++)
		fprintf(f, ".section .text.v%zu,\"ax\"\n.insn %u, 0x%x\n", i, rv_vectors[i].len,
			rv_vectors[i].w);
	return fclose(f) == 0;
}

static void compare_objdump(FILE *p)
{
	char line[256], text[256];
	size_t v = 0, lines = 0;
	bool want = false;

	while (fgets(line, sizeof(line), p)) {
		char *tab;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Disassembly of section .text.v", 30) == 0) {
			v = strtoul(line + 30, NULL, 10);
			want = v < rv_nvectors;
			continue;
		}
		tab = strchr(line, '\t');
		if (!want || !tab || !strchr(line, ':'))
			continue;
		gnu_addresses(tab + 1, text, sizeof(text));
		CHECK_STR(text, rv_vectors[v].text);
		want = false;
		lines++;
	}
	CHECK_EQ(lines, rv_nvectors);
}

TEST(vector_table_matches_objdump_when_installed)
{
	char dir[] = "/tmp/np-rv-vectors-XXXXXX", cmd[512], src[128], obj[128];
	FILE *p;

	if (system("command -v riscv64-linux-gnu-as >/dev/null 2>&1 && "
		   "command -v riscv64-linux-gnu-objdump >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir)) {
		printf("# skip: no riscv64-linux-gnu-as/objdump\n");
		return;
	}
	snprintf(src, sizeof(src), "%s/v.s", dir);
	snprintf(obj, sizeof(obj), "%s/v.o", dir);
	CHECK(write_vectors(src));
	snprintf(cmd, sizeof(cmd), "riscv64-linux-gnu-as -march=rv64gc -o %s %s", obj, src);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd),
		 "riscv64-linux-gnu-objdump -d -z --no-show-raw-insn --adjust-vma=0x%llx %s",
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

/* SPDX-License-Identifier: MIT */
/*
 * Disassembly text. The vector table's expected strings are checked two
 * ways: against format() here, and, when GNU as and objdump are installed
 * on an x86-64 host, against objdump itself (each vector assembled as
 * .byte in its own section, disassembled at 0x401000, objdump's
 * "401012 <sym>" rewritten as 0x401012).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit/objdump_text.h"
#include "x86_test.h"

TEST(every_vector_formats_as_objdump_prints_it)
{
	for (size_t i = 0; i < x86_nvectors; i++) {
		char text[128];
		int n = ISA->format(x86_vectors[i].b, x86_vectors[i].len, PC, text, sizeof(text));

		CHECK(n > 0);
		CHECK_STR(n > 0 ? text : "(error)", x86_vectors[i].text);
		CHECK_EQ(n, strlen(x86_vectors[i].text));
	}
}

TEST(format_prints_branch_targets_absolute_from_pc)
{
	const uint8_t b[] = {0xe8, 0x00, 0x00, 0x00, 0x00}; /* call next */
	char text[64];

	CHECK(ISA->format(b, sizeof(b), 0x7f0000001000ull, text, sizeof(text)) > 0);
	CHECK_STR(text, "call   0x7f0000001005");
}

TEST(format_fails_with_enospc_rather_than_truncating)
{
	const uint8_t b[] = {0x48, 0x89, 0xe5}; /* mov %rsp,%rbp: 16 characters */
	char text[16];

	CHECK_EQ(ISA->format(b, sizeof(b), PC, text, sizeof(text)), -ENOSPC);
}

TEST(format_of_invalid_bytes_is_eilseq)
{
	const uint8_t b[] = {0x06}; /* push %es: invalid in 64-bit mode */
	char text[64];

	CHECK_EQ(ISA->format(b, sizeof(b), PC, text, sizeof(text)), -EILSEQ);
}

/* ------------------------------------------------------------------ */
/* The same table against objdump                                      */

#if defined(__x86_64__) /* objdump for x86-64 is the host's own */
/* "jmp    401012 <.text.v3+0x12>" -> "jmp    0x401012" */
static void gnu_addresses(const char *in, char *out, size_t cap)
{
	static const struct objdump_dialect x86 = {.cut = NULL, .addr_after = " "};
	objdump_text(&x86, in, out, cap);
}

static bool write_vectors(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	for (size_t i = 0; i < x86_nvectors; i++) {
		fprintf(f, ".section .text.v%zu,\"ax\"\n.byte ", i);
		for (size_t j = 0; j < x86_vectors[i].len; j++)
			fprintf(f, "%s0x%02x", j ? "," : "", x86_vectors[i].b[j]);
		fprintf(f, "\n");
	}
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
			want = v < x86_nvectors;
			continue;
		}
		if (!want || !tab || !strchr(line, ':'))
			continue;
		gnu_addresses(tab + 1, text, sizeof(text));
		CHECK_STR(text, x86_vectors[v].text);
		want = false;
		lines++;
	}
	CHECK_EQ(lines, x86_nvectors);
}
#endif

TEST(vector_table_matches_objdump_when_installed)
{
#if defined(__x86_64__)
	char dir[] = "/tmp/np-x86-vectors-XXXXXX", cmd[512], src[128], obj[128];
	FILE *p;

	if (system("command -v as >/dev/null 2>&1 && command -v objdump >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir)) {
		printf("# skip: no as/objdump\n");
		return;
	}
	snprintf(src, sizeof(src), "%s/v.s", dir);
	snprintf(obj, sizeof(obj), "%s/v.o", dir);
	CHECK(write_vectors(src));
	snprintf(cmd, sizeof(cmd), "as -o %s %s", obj, src);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "objdump -d -z --no-show-raw-insn --adjust-vma=0x%llx %s",
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
#else
	printf("# skip: objdump check runs on x86-64 hosts\n");
#endif
}

TEST_MAIN()

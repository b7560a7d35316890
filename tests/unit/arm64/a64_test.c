/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit/objdump_text.h"
#include "a64_test.h"

void a64_le(uint8_t *p, uint32_t w)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(w >> (8 * i));
}

uint32_t a64_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ------------------------------------------------------------------ */

struct targets {
	uint64_t v[64];
	size_t n;
};

static void add(struct targets *t, uint64_t v)
{
	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		t->v[t->n++] = v;
}

static void original_targets(const uint32_t *src, size_t n, uint64_t pc, struct targets *t)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b[4];
		struct np_insn in;

		a64_le(b, src[i]);
		if (ISA->decode(b, 4, pc + 4 * i, &in))
			return;
		if (in.flags & NP_INSN_CALL) /* the link is an address too */
			add(t, pc + 4 * i + 4);
		if (in.flags & (NP_INSN_BRANCH | NP_INSN_PCREL))
			add(t, in.target);
	}
}

static bool is_ldr_lit8(uint32_t w) /* ldr Xd, .+8 */
{
	return (w & 0xffffffe0u) == 0x58000040u;
}

/* The sequences that stand for one address, and how many words they take
 * (0: none here). adrp+add counts only when add completes the adrp. */
static size_t address_form(const uint8_t *out, size_t words, size_t i, uint64_t pc, uint64_t *to)
{
	uint32_t w = a64_at(out + 4 * i);
	struct np_insn in;

	if (is_ldr_lit8(w) && i + 4 <= words) {
		memcpy(to, out + 4 * i + 8, 8);
		return 4;
	}
	if ((w & 0x9f000000u) == 0x90000000u && i + 1 < words) {
		uint32_t a = a64_at(out + 4 * i + 4);
		unsigned rd = w & 31;

		if ((a & 0xffc003ffu) == (0x91000000u | rd << 5 | rd)) {
			CHECK(ISA->decode(out + 4 * i, 4, pc, &in) == 0);
			*to = in.target + ((a >> 10) & 0xfff);
			return 2;
		}
	}
	return 0;
}

static void output_targets(const uint8_t *out, size_t len, uint64_t pc, struct targets *t)
{
	size_t words = len / 4;

	for (size_t i = 0; i < words;) {
		struct np_insn in;
		uint64_t to;
		size_t k = address_form(out, words, i, pc + 4 * i, &to);

		if (k) {
			add(t, to);
			i += k;
			continue;
		}
		if (ISA->decode(out + 4 * i, len - 4 * i, pc + 4 * i, &in)) {
			CHECK(!"relocated output decodes");
			return;
		}
		if ((in.flags & (NP_INSN_BRANCH | NP_INSN_PCREL)) &&
		    (in.target < pc || in.target > pc + len))
			add(t, in.target);
		i++;
	}
}

int a64_roundtrip(const uint32_t *src, size_t n, uint64_t src_pc, uint64_t dst_pc,
		  uint64_t resume_pc, uint32_t *out, size_t out_cap)
{
	uint8_t in[256], buf[512];
	struct np_reloc r = {in, 4 * n, src_pc, buf, sizeof(buf), dst_pc, resume_pc};
	struct targets want = {0}, got = {0};
	int len;

	for (size_t i = 0; i < n && i < 64; i++)
		a64_le(in + 4 * i, src[i]);
	len = ISA->relocate(&r);
	if (len < 0)
		return len;
	CHECK_EQ(len % 4, 0);
	original_targets(src, n, src_pc, &want);
	if (resume_pc)
		add(&want, resume_pc);
	output_targets(buf, (size_t)len, dst_pc, &got);
	CHECK_EQ(got.n, want.n);
	for (size_t i = 0; i < want.n && i < got.n; i++)
		CHECK_EQ(got.v[i], want.v[i]);
	for (size_t i = 0; out && i < (size_t)len / 4 && i < out_cap; i++)
		out[i] = a64_at(buf + 4 * i);
	return len;
}

/* "b\t401010 <.text.v3+0x10>  // b.any" -> "b\t0x401010" */
void a64_gnu_text(const char *in, char *out, size_t cap)
{
	static const char *const cut[] = {"  //", " ; undefined", NULL};
	static const struct objdump_dialect a64 = {.cut = cut, .addr_after = " \t"};
	objdump_text(&a64, in, out, cap);
}

#define AS      "aarch64-linux-gnu-as"
#define OBJDUMP "aarch64-linux-gnu-objdump"

/* One section per word, so that each is disassembled alone at PC. */
static bool write_words(const char *path, const uint32_t *words, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	for (size_t i = 0; i < n; i++)
		fprintf(f, ".section .text.v%zu,\"ax\"\n.inst 0x%08x\n", i, words[i]);
	return fclose(f) == 0;
}

/* Section by section: the one instruction line after each header. */
static size_t read_texts(FILE *p, size_t n, char (*texts)[128])
{
	char line[256];
	size_t v = 0, lines = 0;
	bool want = false;

	while (fgets(line, sizeof(line), p)) {
		char *tab = strchr(line, '\t'), *alias;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Disassembly of section .text.v", 30) == 0) {
			v = strtoul(line + 30, NULL, 10);
			want = v < n;
			continue;
		}
		if (!want || !tab || !strchr(line, ':'))
			continue;
		if ((alias = strstr(tab, "\t//"))) /* "// #5", "// eq = none" */
			*alias = '\0';
		a64_gnu_text(tab + 1, texts[v], sizeof(texts[v]));
		want = false;
		lines++;
	}
	return lines;
}

int a64_objdump(const uint32_t *words, size_t n, char (*texts)[128])
{
	char dir[] = "/tmp/np-a64-words-XXXXXX", cmd[512], src[128], obj[128];
	long got = -1;
	FILE *p;

	if (system("command -v " AS " >/dev/null 2>&1 && command -v " OBJDUMP
		   " >/dev/null 2>&1") != 0 ||
	    !mkdtemp(dir))
		return -1;
	snprintf(src, sizeof(src), "%s/v.s", dir);
	snprintf(obj, sizeof(obj), "%s/v.o", dir);
	snprintf(cmd, sizeof(cmd), AS " -o %s %s", obj, src);
	if (write_words(src, words, n) && system(cmd) == 0) {
		snprintf(cmd, sizeof(cmd),
			 OBJDUMP " -d -z --no-show-raw-insn --adjust-vma=0x%llx %s",
			 (unsigned long long)PC, obj);
		if ((p = popen(cmd, "r"))) {
			got = (long)read_texts(p, n, texts);
			pclose(p);
		}
	}
	unlink(src);
	unlink(obj);
	rmdir(dir);
	return (int)got;
}

/* SPDX-License-Identifier: MIT */
/*
 * rv-dis FILE VADDR: print every instruction of a flat code file loaded at
 * VADDR as "addr:\ttext", the way objdump lists them (objdump-libc.sh
 * compares the two over a whole libc). Undecodable parcels print "?".
 */
#include <stdio.h>
#include <stdlib.h>

#include "arch/arch.h"

int main(int argc, char **argv)
{
	static uint8_t buf[16 << 20];
	FILE *f = argc == 3 ? fopen(argv[1], "rb") : NULL;
	uint64_t base;
	size_t n;

	if (!f) {
		fprintf(stderr, "usage: rv-dis FILE VADDR\n");
		return 2;
	}
	base = strtoull(argv[2], NULL, 16);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t off = 0; off + 2 <= n;) {
		char text[128];
		struct np_insn in;
		unsigned long long pc = base + off;

		if (np_isa_riscv64.decode(buf + off, n - off, pc, &in) ||
		    np_isa_riscv64.format(buf + off, n - off, pc, text, sizeof(text)) < 0) {
			printf("%llx:\t?\n", pc);
			off += 2;
			continue;
		}
		printf("%llx:\t%s\n", pc, text);
		off += in.len;
	}
	return 0;
}

/* The riscv64 counterparts of targets_x86_64.S: what a probe sees first at
 * the most common function entries, in the compressed forms GCC emits
 * (the assembler compresses the rest too). A 4-byte jal at an entry
 * displaces two of them; over the bare 2-byte ret it takes the alignment
 * padding that no symbol covers. */
	.option norelax
	.text
#define TARGET(name) .p2align 4; .globl name; .type name, %function; name:
#define END(name) .size name, .-name

TARGET(np_bench_nop)		/* nop; ret */
	c.nop
	c.jr ra
END(np_bench_nop)

TARGET(np_bench_push)		/* a frame: ra saved and loaded back */
	c.addi16sp sp, -16
	c.sdsp ra, 8(sp)
	c.ldsp ra, 8(sp)
	c.addi16sp sp, 16
	c.jr ra
END(np_bench_push)

TARGET(np_bench_ret)		/* a bare ret */
	c.jr ra
END(np_bench_ret)

TARGET(np_bench_nop5)		/* the two nops -fpatchable-function-entry=2 leaves */
	c.nop
	c.nop
	c.jr ra
END(np_bench_nop5)

TARGET(np_bench_mid)		/* a site in the middle: full context save */
	addi a0, a0, 1
	slli a1, a0, 1
	add a0, a0, a1
	.globl np_bench_mid_site
np_bench_mid_site:
	addi a0, a0, 7
	addi a0, a0, -7
	ret
END(np_bench_mid)
	.section .note.GNU-stack,"",@progbits

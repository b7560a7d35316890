/* The arm64 counterparts of targets_x86_64.S: what a probe sees first at
 * the most common function entries. */
	.text
#define TARGET(name) .p2align 4; .globl name; .type name, %function; name:
#define END(name) .size name, .-name

TARGET(np_bench_nop)		/* nop; ret */
	nop
	ret
END(np_bench_nop)

TARGET(np_bench_push)		/* a frame-record prologue */
	stp x29, x30, [sp, #-16]!
	mov x29, sp
	ldp x29, x30, [sp], #16
	ret
END(np_bench_push)

TARGET(np_bench_ret)		/* a bare ret */
	ret
END(np_bench_ret)

TARGET(np_bench_nop5)		/* the two nops -fpatchable-function-entry=2 leaves */
	nop
	nop
	ret
END(np_bench_nop5)

TARGET(np_bench_mid)		/* a site in the middle: full context save */
	add x0, x0, #1
	add x0, x0, x0, lsl #1
	.globl np_bench_mid_site
np_bench_mid_site:
	add x0, x0, #7
	sub x0, x0, #7
	ret
END(np_bench_mid)
	.section .note.GNU-stack,"",@progbits

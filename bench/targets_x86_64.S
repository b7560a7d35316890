/* The kernel selftest trigger targets (tools/testing/selftests/bpf/benchs):
 * what a probe sees first at the most common function entries. */
	.text
#define TARGET(name) .p2align 4; .globl name; .type name, @function; name:
#define END(name) .size name, .-name

TARGET(np_bench_nop)		/* nop; ret: two bytes, the jump uses padding */
	nop
	ret
END(np_bench_nop)

TARGET(np_bench_push)		/* a frame-pointer prologue */
	push %rbp
	mov %rsp, %rbp
	pop %rbp
	ret
END(np_bench_push)

TARGET(np_bench_ret)		/* a bare one-byte ret */
	ret
END(np_bench_ret)

TARGET(np_bench_nop5)		/* a 5-byte nop first, as -mfentry/-pg leaves */
	nopl 0(%rax, %rax, 1)
	ret
END(np_bench_nop5)

TARGET(np_bench_mid)		/* a site in the middle: full context save */
	mov %rdi, %rax
	add $1, %rax
	imul $3, %rax, %rax
	.globl np_bench_mid_site
np_bench_mid_site:
	add $7, %rax
	sub $7, %rax
	ret
END(np_bench_mid)
	.section .note.GNU-stack,"",@progbits

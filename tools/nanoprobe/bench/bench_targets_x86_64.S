/* SPDX-License-Identifier: MIT */
/* The kernel selftest trigger targets (tools/testing/selftests/bpf/benchs/
 * bench_trigger.c), as `nanoprobe bench` calls them in a loop: what a probe
 * meets first at the most common function entries. Assembly, so that the
 * bytes are the same whatever the compiler and its flags. */
	.text
#define TARGET(name) .p2align 4; .globl name; .type name, @function; name:
#define END(name) .size name, .-name

TARGET(np_bench_target_nop)	/* nop; ret */
	nop
	ret
END(np_bench_target_nop)

TARGET(np_bench_target_push_body)
	ret
END(np_bench_target_push_body)

TARGET(np_bench_target_push)	/* frame-pointer prologue, then a call */
	push %rbp
	mov %rsp, %rbp
	call np_bench_target_push_body
	pop %rbp
	ret
END(np_bench_target_push)

TARGET(np_bench_target_ret)	/* a bare one-byte ret */
	ret
END(np_bench_target_ret)

TARGET(np_bench_target_nop5)	/* a 5-byte nop first, as -mfentry leaves */
	nopl 0(%rax, %rax, 1)
	ret
END(np_bench_target_nop5)
	.section .note.GNU-stack,"",@progbits

/* SPDX-License-Identifier: MIT */
/*
 * x86-64 copy routines for np_read_user (see src/core/uread.c).
 *
 * Every load from the untrusted source has an entry in
 * np_host_uread_extable: when it faults, the SIGSEGV/SIGBUS handler moves
 * the pc to the entry's fixup, with every register as it was before the
 * load. So each routine keeps its progress in registers, and a fault
 * leaves a precise count of what was copied.
 *
 * Only GPRs: handlers that read memory keep the lean (no XSAVE) path.
 */
	.text

/* size_t np_host_uread(void *dst, uint64_t src, size_t len)
 * Returns the bytes not copied: 0, or how many remain from the fault on. */
	.globl np_host_uread
	.hidden np_host_uread
	.type np_host_uread, @function
	.p2align 4
np_host_uread:
	mov %rdx, %rcx
	cmp $8, %rcx
	jb .Lbytes
.Lwords:
.Lword_load:
	mov (%rsi), %rax	/* faults: .Lword_fault */
	mov %rax, (%rdi)
	add $8, %rsi
	add $8, %rdi
	sub $8, %rcx
	cmp $8, %rcx
	jae .Lwords
.Lbytes:
	test %rcx, %rcx
	jz .Lbytes_done
.Lbyte_loop:
.Lbyte_load:
	movzbl (%rsi), %eax	/* faults: return what remains (.Lbytes_done) */
	mov %al, (%rdi)
	inc %rsi
	inc %rdi
	dec %rcx
	jnz .Lbyte_loop
.Lbytes_done:
	mov %rcx, %rax
	ret
/* A word that straddles into a bad page faults before any of its bytes
 * land: retry them one at a time for the exact prefix. A word inside one
 * page (4 KiB or larger) faulted on its first byte: done. */
.Lword_fault:
	mov %esi, %eax
	and $4095, %eax
	cmp $4088, %eax
	ja .Lbytes
	mov %rcx, %rax
	ret
	.size np_host_uread, . - np_host_uread

/* long np_host_uread_str(char *dst, uint64_t src, size_t max)
 * Copies bytes up to, not including, a NUL, at most max of them (the
 * caller stores the terminator). Returns how many it copied, or -(n + 1)
 * when the load after n copied bytes faulted.
 *
 * Bytes one at a time until src is 8-aligned, then aligned words while no
 * byte of the word is zero, then bytes again up to the NUL or max. An
 * aligned word never straddles two pages, so when one faults, the byte at
 * the current position is the first unreadable one: the count stays exact,
 * and the word loop needs no byte-by-byte retry. */
	.globl np_host_uread_str
	.hidden np_host_uread_str
	.type np_host_uread_str, @function
	.p2align 4
np_host_uread_str:
	xor %ecx, %ecx
	movabs $0x0101010101010101, %r8
	movabs $0x8080808080808080, %r9
.Lstr_head:
	cmp %rdx, %rcx
	jae .Lstr_done
	lea (%rsi,%rcx), %rax
	test $7, %al
	jz .Lstr_words
.Lstr_head_load:
	movzbl (%rsi,%rcx), %eax	/* faults: .Lstr_fault */
	test %al, %al
	jz .Lstr_done
	mov %al, (%rdi,%rcx)
	inc %rcx
	jmp .Lstr_head
.Lstr_words:
	lea 8(%rcx), %rax
	cmp %rdx, %rax
	ja .Lstr_tail
.Lstr_word_load:
	mov (%rsi,%rcx), %rax		/* faults: .Lstr_fault */
	mov %rax, %r10			/* a zero byte: (w - 0x01..) & ~w & 0x80.. */
	sub %r8, %r10
	mov %rax, %r11
	not %r11
	and %r11, %r10
	test %r9, %r10
	jnz .Lstr_tail
	mov %rax, (%rdi,%rcx)
	add $8, %rcx
	jmp .Lstr_words
.Lstr_tail:
	cmp %rdx, %rcx
	jae .Lstr_done
.Lstr_tail_load:
	movzbl (%rsi,%rcx), %eax	/* faults: .Lstr_fault */
	test %al, %al
	jz .Lstr_done
	mov %al, (%rdi,%rcx)
	inc %rcx
	jmp .Lstr_tail
.Lstr_done:
	mov %rcx, %rax
	ret
.Lstr_fault:
	mov %rcx, %rax
	not %rax		/* -(copied + 1) */
	ret
	.size np_host_uread_str, . - np_host_uread_str

/* { faulting load, where to resume } pairs, ended by a zero pair. */
	.section .data.rel.ro, "aw"
	.p2align 3
	.globl np_host_uread_extable
	.hidden np_host_uread_extable
	.type np_host_uread_extable, @object
np_host_uread_extable:
	.quad .Lword_load, .Lword_fault
	.quad .Lbyte_load, .Lbytes_done
	.quad .Lstr_head_load, .Lstr_fault
	.quad .Lstr_word_load, .Lstr_fault
	.quad .Lstr_tail_load, .Lstr_fault
	.quad 0, 0
	.size np_host_uread_extable, . - np_host_uread_extable

	.section .note.GNU-stack,"",@progbits

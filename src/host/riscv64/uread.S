/* SPDX-License-Identifier: MIT */
/*
 * riscv64 copy routines for np_read_user (see src/core/uread.c), the same
 * contract as src/host/x86_64/uread.S and src/host/arm64/uread.S.
 *
 * Every load from the untrusted source has an entry in
 * np_host_uread_extable: when it faults, the SIGSEGV/SIGBUS handler moves
 * the pc to the entry's fixup, with every register as it was before the
 * load. So each routine keeps its progress in registers, and a fault
 * leaves a precise count of what was copied. Only a0-a7 and t0-t1 are
 * used. Words are loaded only from 8-aligned addresses (a misaligned load
 * may trap to the kernel's emulation, or fault, on RISC-V), so a word
 * never straddles two pages: when one faults, its first byte is the
 * first unreadable one.
 */
	.text
	.option push
	.option norvc	/* the table names exact instructions */

/* size_t np_host_uread(void *dst a0, uint64_t src a1, size_t len a2)
 * Returns the bytes not copied: 0, or how many remain from the fault on. */
	.globl np_host_uread
	.hidden np_host_uread
	.type np_host_uread, %function
	.p2align 2
np_host_uread:
.Lhead:				/* bytes until src is 8-aligned */
	beqz	a2, .Lbytes_done
	andi	t0, a1, 7
	beqz	t0, .Lwords
.Lhead_load:
	lbu	t1, 0(a1)		/* faults: .Lbytes_done */
	sb	t1, 0(a0)
	addi	a0, a0, 1
	addi	a1, a1, 1
	addi	a2, a2, -1
	j	.Lhead
.Lwords:
	li	t0, 8
	bltu	a2, t0, .Lbytes
.Lword_load:
	ld	t1, 0(a1)		/* faults: .Lbytes_done */
	sb	t1, 0(a0)		/* dst may be misaligned: bytes */
	srli	t1, t1, 8
	sb	t1, 1(a0)
	srli	t1, t1, 8
	sb	t1, 2(a0)
	srli	t1, t1, 8
	sb	t1, 3(a0)
	srli	t1, t1, 8
	sb	t1, 4(a0)
	srli	t1, t1, 8
	sb	t1, 5(a0)
	srli	t1, t1, 8
	sb	t1, 6(a0)
	srli	t1, t1, 8
	sb	t1, 7(a0)
	addi	a0, a0, 8
	addi	a1, a1, 8
	addi	a2, a2, -8
	j	.Lwords
.Lbytes:
	beqz	a2, .Lbytes_done
.Lbyte_load:
	lbu	t1, 0(a1)		/* faults: .Lbytes_done */
	sb	t1, 0(a0)
	addi	a0, a0, 1
	addi	a1, a1, 1
	addi	a2, a2, -1
	j	.Lbytes
.Lbytes_done:
	mv	a0, a2
	ret
	.size np_host_uread, . - np_host_uread

/* long np_host_uread_str(char *dst a0, uint64_t src a1, size_t max a2)
 * Copies bytes up to, not including, a NUL, at most max of them (the
 * caller stores the terminator). Returns how many it copied, or -(n + 1)
 * when the load after n copied bytes faulted.
 *
 * Bytes one at a time until src is 8-aligned, then aligned words while no
 * byte of the word is zero, then bytes again up to the NUL or max. */
	.globl np_host_uread_str
	.hidden np_host_uread_str
	.type np_host_uread_str, %function
	.p2align 2
np_host_uread_str:
	li	a3, 0			/* bytes copied */
	li	a6, 0x0101010101010101
	slli	a7, a6, 7		/* 0x8080808080808080 */
.Lstr_head:
	bgeu	a3, a2, .Lstr_done
	add	a4, a1, a3
	andi	a4, a4, 7
	beqz	a4, .Lstr_words
	add	a4, a1, a3
.Lstr_head_load:
	lbu	a5, 0(a4)		/* faults: .Lstr_fault */
	beqz	a5, .Lstr_done
	add	a4, a0, a3
	sb	a5, 0(a4)
	addi	a3, a3, 1
	j	.Lstr_head
.Lstr_words:
	addi	a4, a3, 8
	bgtu	a4, a2, .Lstr_tail
	add	a4, a1, a3
.Lstr_word_load:
	ld	a5, 0(a4)		/* faults: .Lstr_fault */
	sub	t0, a5, a6		/* a zero byte: (w - 0x01..) & ~w & 0x80.. */
	not	t1, a5
	and	t0, t0, t1
	and	t0, t0, a7
	bnez	t0, .Lstr_tail
	add	a4, a0, a3
	li	t0, 8
.Lstr_store:
	sb	a5, 0(a4)
	srli	a5, a5, 8
	addi	a4, a4, 1
	addi	t0, t0, -1
	bnez	t0, .Lstr_store
	addi	a3, a3, 8
	j	.Lstr_words
.Lstr_tail:
	bgeu	a3, a2, .Lstr_done
	add	a4, a1, a3
.Lstr_tail_load:
	lbu	a5, 0(a4)		/* faults: .Lstr_fault */
	beqz	a5, .Lstr_done
	add	a4, a0, a3
	sb	a5, 0(a4)
	addi	a3, a3, 1
	j	.Lstr_tail
.Lstr_done:
	mv	a0, a3
	ret
.Lstr_fault:
	not	a0, a3			/* -(copied + 1) */
	ret
	.size np_host_uread_str, . - np_host_uread_str
	.option pop

/* { faulting load, where to resume } pairs, ended by a zero pair. */
	.section .data.rel.ro, "aw"
	.p2align 3
	.globl np_host_uread_extable
	.hidden np_host_uread_extable
	.type np_host_uread_extable, %object
np_host_uread_extable:
	.quad .Lhead_load, .Lbytes_done
	.quad .Lword_load, .Lbytes_done
	.quad .Lbyte_load, .Lbytes_done
	.quad .Lstr_head_load, .Lstr_fault
	.quad .Lstr_word_load, .Lstr_fault
	.quad .Lstr_tail_load, .Lstr_fault
	.quad 0, 0
	.size np_host_uread_extable, . - np_host_uread_extable

	.section .note.GNU-stack,"",%progbits

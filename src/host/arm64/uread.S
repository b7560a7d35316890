/* SPDX-License-Identifier: MIT */
/*
 * arm64 copy routines for np_read_user (see src/core/uread.c), the same
 * contract as src/host/x86_64/uread.S.
 *
 * Every load from the untrusted source has an entry in
 * np_host_uread_extable: when it faults, the SIGSEGV/SIGBUS handler moves
 * the pc to the entry's fixup, with every register as it was before the
 * load. So each routine keeps its progress in registers, and a fault
 * leaves a precise count of what was copied. Only general registers are
 * used (x0-x9): handlers that read memory keep the lean path. Unaligned
 * loads are fine: Linux runs user space with alignment checks off for
 * normal memory.
 */
	.text

/* size_t np_host_uread(void *dst x0, uint64_t src x1, size_t len x2)
 * Returns the bytes not copied: 0, or how many remain from the fault on. */
	.globl np_host_uread
	.hidden np_host_uread
	.type np_host_uread, %function
	.p2align 4
np_host_uread:
	cmp	x2, #8
	b.lo	.Lbytes
.Lwords:
.Lword_load:
	ldr	x3, [x1]		/* faults: .Lword_fault */
	str	x3, [x0], #8
	add	x1, x1, #8
	sub	x2, x2, #8
	cmp	x2, #8
	b.hs	.Lwords
.Lbytes:
	cbz	x2, .Lbytes_done
.Lbyte_loop:
.Lbyte_load:
	ldrb	w3, [x1]		/* faults: return what remains (.Lbytes_done) */
	strb	w3, [x0], #1
	add	x1, x1, #1
	subs	x2, x2, #1
	b.ne	.Lbyte_loop
.Lbytes_done:
	mov	x0, x2
	ret
/* A word that straddles into a bad page faults before any of its bytes
 * land: retry them one at a time for the exact prefix. A word inside one
 * page (4 KiB or larger) faulted on its first byte: done. */
.Lword_fault:
	and	x3, x1, #4095
	cmp	x3, #4088
	b.hi	.Lbytes
	mov	x0, x2
	ret
	.size np_host_uread, . - np_host_uread

/* long np_host_uread_str(char *dst x0, uint64_t src x1, size_t max x2)
 * Copies bytes up to, not including, a NUL, at most max of them (the
 * caller stores the terminator). Returns how many it copied, or -(n + 1)
 * when the load after n copied bytes faulted.
 *
 * Bytes one at a time until src is 8-aligned, then aligned words while no
 * byte of the word is zero, then bytes again up to the NUL or max. An
 * aligned word never straddles two pages, so when one faults, the byte at
 * the current position is the first unreadable one. */
	.globl np_host_uread_str
	.hidden np_host_uread_str
	.type np_host_uread_str, %function
	.p2align 4
np_host_uread_str:
	mov	x3, #0			/* bytes copied */
	mov	x8, #0x0101010101010101
	mov	x9, #0x8080808080808080
.Lstr_head:
	cmp	x3, x2
	b.hs	.Lstr_done
	add	x4, x1, x3
	tst	x4, #7
	b.eq	.Lstr_words
.Lstr_head_load:
	ldrb	w5, [x1, x3]		/* faults: .Lstr_fault */
	cbz	w5, .Lstr_done
	strb	w5, [x0, x3]
	add	x3, x3, #1
	b	.Lstr_head
.Lstr_words:
	add	x4, x3, #8
	cmp	x4, x2
	b.hi	.Lstr_tail
.Lstr_word_load:
	ldr	x5, [x1, x3]		/* faults: .Lstr_fault */
	sub	x6, x5, x8		/* a zero byte: (w - 0x01..) & ~w & 0x80.. */
	bic	x6, x6, x5
	tst	x6, x9
	b.ne	.Lstr_tail
	str	x5, [x0, x3]
	add	x3, x3, #8
	b	.Lstr_words
.Lstr_tail:
	cmp	x3, x2
	b.hs	.Lstr_done
.Lstr_tail_load:
	ldrb	w5, [x1, x3]		/* faults: .Lstr_fault */
	cbz	w5, .Lstr_done
	strb	w5, [x0, x3]
	add	x3, x3, #1
	b	.Lstr_tail
.Lstr_done:
	mov	x0, x3
	ret
.Lstr_fault:
	mvn	x0, x3			/* -(copied + 1) */
	ret
	.size np_host_uread_str, . - np_host_uread_str

/* { faulting load, where to resume } pairs, ended by a zero pair. */
	.section .data.rel.ro, "aw"
	.p2align 3
	.globl np_host_uread_extable
	.hidden np_host_uread_extable
	.type np_host_uread_extable, %object
np_host_uread_extable:
	.quad .Lword_load, .Lword_fault
	.quad .Lbyte_load, .Lbytes_done
	.quad .Lstr_head_load, .Lstr_fault
	.quad .Lstr_word_load, .Lstr_fault
	.quad .Lstr_tail_load, .Lstr_fault
	.quad 0, 0
	.size np_host_uread_extable, . - np_host_uread_extable

	.section .note.GNU-stack,"",%progbits

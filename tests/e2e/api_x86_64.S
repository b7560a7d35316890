/* SPDX-License-Identifier: MIT */
/*
 * Functions with a known instruction layout for api.c, which checks the
 * bytes before relying on the offsets below.
 */
#include "asm_x86_64.h"

	.text
	.p2align 4
/* uint64_t api_seq(uint64_t x): 3x + 7 */
FUNC(api_seq)
	push %rbp			/* +0  55 */
	mov %rsp, %rbp			/* +1  48 89 e5 */
	lea (%rdi,%rdi,2), %rax		/* +4  48 8d 04 7f */
	add $7, %rax			/* +8  48 83 c0 07 */
	pop %rbp			/* +12 5d */
	ret				/* +13 c3 */
ENDF(api_seq)

/* The same function three bytes before a page ends: its first instructions
 * (push, mov) lie in one page, the lea at +4 in the next, so a probe there
 * must find the region that starts in the page before (region_index.c). */
	.p2align 12
	.skip 4096 - 3, 0xcc
FUNC(api_seq_straddle)
	push %rbp			/* +0  55 */
	mov %rsp, %rbp			/* +1  48 89 e5 */
	lea (%rdi,%rdi,2), %rax		/* +4  48 8d 04 7f */
	add $7, %rax			/* +8  48 83 c0 07 */
	pop %rbp			/* +12 5d */
	ret				/* +13 c3 */
ENDF(api_seq_straddle)

	.p2align 4
/* uint64_t api_loop(uint64_t x, uint64_t n): x * n, n >= 1. The loop head
 * at +2 is a branch target inside the first 5 bytes. */
FUNC(api_loop)
	xor %eax, %eax			/* +0  31 c0 */
1:	add %rdi, %rax			/* +2  48 01 f8 */
	dec %rsi			/* +5  48 ff ce */
	jnz 1b				/* +8  75 f8 */
	ret				/* +10 c3 */
ENDF(api_loop)

	.p2align 4
/* uint64_t api_tail_ptr(uint64_t x): 3x + 7 (api_seq's), or 0 for x = 0,
 * through a tail call with no frame: sqlite3_mutex_enter's shape. The
 * jump through the loaded pointer cannot land in the test and je the
 * entry's jump displaces: nothing the program holds points there. */
FUNC(api_tail_ptr)
	test %rdi, %rdi			/* +0  48 85 ff */
	je 1f				/* +3  74 09 */
	mov api_tail_slot(%rip), %rax	/* +5  48 8b 05 rel32 */
	jmp *%rax			/* +12 ff e0 */
1:	xor %eax, %eax			/* +14 31 c0 */
	ret				/* +16 c3 */
ENDF(api_tail_ptr)

	.p2align 4
/* uint64_t api_held(uint64_t n): n for n >= 1, counting up through a
 * jump through a pointer the data holds to its own second instruction
 * (a computed goto's label kept in a static): a jump at the entry may not
 * displace that one. Loaded into a register, where the scan of the code
 * does not read it: only the module's words tell. */
FUNC(api_held)
	xor %eax, %eax			/* +0  31 c0 */
.Lapi_held_again:
	add $1, %eax			/* +2  83 c0 01 */
	cmp %edi, %eax			/* +5  39 f8 */
	jae 1f				/* +7  73 09 */
	mov api_held_slot(%rip), %rcx	/* +9  48 8b 0d rel32 */
	jmp *%rcx			/* +16 ff e1 */
1:	ret				/* +18 c3 */
ENDF(api_held)

	.data
	.balign 8
api_tail_slot:
	.quad api_seq
api_held_slot:
	.quad .Lapi_held_again
	.text

	.p2align 4
/* A 1-byte function with no padding after it: the next function starts at
 * +1, so a 5-byte jump cannot fit. */
FUNC(api_tiny_nopad)
	ret				/* +0 c3 */
ENDF(api_tiny_nopad)
FUNC(api_after_tiny)
	mov $1, %eax
	ret
ENDF(api_after_tiny)

	.p2align 4
/* uint64_t api_pun(void): the address its callee returns to (api_pun + 9),
 * read by the callee itself. The call starts 4 bytes in: a jump at the
 * entry can end on its first byte (plan.c, np_plan_pun). */
FUNC(api_pun)
	push %rbp			/* +0  55 */
	mov %rsp, %rbp			/* +1  48 89 e5 */
	call api_retaddr		/* +4  e8 rel32 */
	pop %rbp			/* +9  5d */
	ret				/* +10 c3 */
ENDF(api_pun)

	.p2align 4
/* The same with the call 3 bytes in: two bytes of it under the jump. */
FUNC(api_pun2)
	push %r12			/* +0  41 54 */
	push %rbp			/* +2  55 */
	call api_retaddr		/* +3  e8 rel32 */
	pop %rbp			/* +8  5d */
	pop %r12			/* +9  41 5c */
	ret				/* +11 c3 */
ENDF(api_pun2)

	.p2align 4
FUNC(api_retaddr)
	mov (%rsp), %rax		/* where this call returns */
	ret
ENDF(api_retaddr)

	.p2align 4
/* uint64_t api_nop5(uint64_t x): 3x. Its jump displaces one instruction,
 * the 5-byte nop, so no thread can be stopped inside what it replaces. */
FUNC(api_nop5)
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00 /* +0 nopl 0x0(%rax,%rax,1) */
	lea (%rdi,%rdi,2), %rax		/* +5  48 8d 04 7f */
	ret				/* +9  c3 */
ENDF(api_nop5)

	NOTE_GNU_STACK

	.text
	.p2align 4
/* uint64_t api_nb_tail(uint64_t x): x + 1, by jumping into the middle of
 * the next function, as glibc's __mempcpy_* does into __memmove_*. With
 * unwind info, as real functions have: the engine finds neighbours
 * through .eh_frame_hdr. */
FUNC(api_nb_tail)
	.cfi_startproc
	mov %rdi, %rax			/* +0  48 89 f8 */
	jmp .Lnb_inner			/* +3 */
	.cfi_endproc
ENDF(api_nb_tail)

	.p2align 4
/* uint64_t api_nb_target(uint64_t x): 2x + 1; +4 is entered from api_nb_tail */
FUNC(api_nb_target)
	.cfi_startproc
	lea (%rdi,%rdi), %rax		/* +0  48 8d 04 3f */
.Lnb_inner:
	add $1, %rax			/* +4  48 83 c0 01 */
	ret				/* +8  c3 */
	.cfi_endproc
ENDF(api_nb_target)

	.p2align 4
/* uint64_t api_far_target(uint64_t x): 3x + 1; +4 is entered from
 * api_far_tail, 16 KiB away, as a hot function's .cold part jumps back
 * into it from megabytes away. */
FUNC(api_far_target)
	.cfi_startproc
	lea (%rdi,%rdi,2), %rax		/* +0  48 8d 04 7f */
.Lfar_inner:
	add $1, %rax			/* +4  48 83 c0 01 */
	ret				/* +8  c3 */
	.cfi_endproc
ENDF(api_far_target)

	.skip 16384, 0xcc
	.p2align 4
/* uint64_t api_far_tail(uint64_t x): x + 1, through api_far_target+4 */
FUNC(api_far_tail)
	.cfi_startproc
	mov %rdi, %rax
	jmp .Lfar_inner
	.cfi_endproc
ENDF(api_far_tail)

	.p2align 4
/* uint64_t api_nb_onto(void): 0x5a. No jump of its own fits at +8 (the
 * ret at +11 is followed by more of the function), so one would go at the
 * or at +5 and cover +8; but api_nb_onto_tail jumps to +8, as a .cold part
 * jumps back into its function. */
FUNC(api_nb_onto)
	.cfi_startproc
	push %rbp			/* +0  55 */
	push %rbx			/* +1  53 */
	push %rdx			/* +2  52 */
	xor %eax, %eax			/* +3  31 c0 */
	or $0x5a, %eax			/* +5  83 c8 5a */
.Lnb_onto:
	pop %rdx			/* +8  5a */
	pop %rbx			/* +9  5b */
	pop %rbp			/* +10 5d */
	ret				/* +11 c3 */
	mov $1, %eax			/* +12 never run */
	ret
	.cfi_endproc
ENDF(api_nb_onto)

	.p2align 4
/* uint64_t api_nb_onto_tail(void): 0x5a, through api_nb_onto+8 */
FUNC(api_nb_onto_tail)
	.cfi_startproc
	push %rbp
	push %rbx
	push %rdx
	mov $0x5a, %eax
	jmp .Lnb_onto
	.cfi_endproc
ENDF(api_nb_onto_tail)

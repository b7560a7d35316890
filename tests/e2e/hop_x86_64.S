/* SPDX-License-Identifier: MIT */
/*
 * Functions where a 5-byte jmp rel32 does not fit at the entry, for the
 * jump to a hop (src/plan/hop.c; hop.c checks the layout):
 *
 * h_move is glibc's __memmove_avx_unaligned_erms in small: a 3-byte mov
 * at +0, and h_pcpy (mempcpy's part) jumps to +3, so a jmp rel32 at +0
 * would displace a branch target. A jmp rel8 displaces the mov alone and
 * goes to the 5-byte nop after the ret at +12, which nothing reaches (the
 * jb lands after it). h_move+18 (a 3-byte sub whose next byte h_pcpy
 * jumps to) has the same hop in reach: one probe at a time gets it.
 *
 * The others keep their TRAP, each for a reason of the hop's:
 *   h_neg   the nop after the ret is the jb's target: not dead;
 *   h_fall  the nop follows a conditional branch: it runs;
 *   h_tiny  3 bytes, the next function's code right after: no padding.
 * Each function is followed at once by the next (no alignment padding
 * between them), so that the only padding in reach is the one above.
 * Each has unwind info, as real functions do: the engine finds the
 * neighbours' branches through .eh_frame_hdr.
 *
 * h_move(a, b) = b >= 32 ? a + b : a - b
 * h_pcpy(a, b) = b == 0 ? a + 1 : h_move(a + 1, b) from +3
 * h_neg(a, b) = h_move(a, b); h_neg_pcpy(a, b) = h_neg(a + 1, b)
 * h_fall(a, b) = b >= 32 ? a : a - b; h_fall_pcpy(a, b) = h_fall(a + 1, b)
 */
#include "asm_x86_64.h"

#define NOP5 .byte 0x0f, 0x1f, 0x44, 0x00, 0x00 /* nopl 0x0(%rax,%rax,1) */

	.text
	.p2align 4
FUNC(h_pcpy)
	.cfi_startproc
	lea 1(%rdi), %rax
	test %rsi, %rsi
	jz .Lh_move_ret
	jmp .Lh_move_body
	.cfi_endproc
ENDF(h_pcpy)

FUNC(h_move)
	.cfi_startproc
	mov %rdi, %rax		/* +0: the probe site */
.Lh_move_body:
	cmp $0x20, %rsi		/* +3: h_pcpy lands here */
	jb 1f			/* +7 */
	add %rsi, %rax		/* +9 */
	ret			/* +12 */
	NOP5			/* +13: the hop */
1:	sub %rsi, %rax		/* +18: a second site, 3 bytes */
.Lh_move_ret:
	ret			/* +21: h_pcpy lands here */
	.cfi_endproc
ENDF(h_move)

FUNC(h_neg_pcpy)
	.cfi_startproc
	lea 1(%rdi), %rax
	jmp .Lh_neg_body
	.cfi_endproc
ENDF(h_neg_pcpy)

FUNC(h_neg)
	.cfi_startproc
	mov %rdi, %rax		/* +0 */
.Lh_neg_body:
	cmp $0x20, %rsi		/* +3: h_neg_pcpy lands here */
	jb 1f
	add %rsi, %rax
	ret
1:	NOP5			/* the jb's target: run */
	sub %rsi, %rax
	ret
	.cfi_endproc
ENDF(h_neg)

FUNC(h_fall_pcpy)
	.cfi_startproc
	lea 1(%rdi), %rax
	jmp .Lh_fall_body
	.cfi_endproc
ENDF(h_fall_pcpy)

FUNC(h_fall)
	.cfi_startproc
	mov %rdi, %rax		/* +0 */
.Lh_fall_body:
	cmp $0x20, %rsi		/* +3: h_fall_pcpy lands here */
	jae 1f
	NOP5			/* falls through from the jae: run */
	sub %rsi, %rax
1:	ret
	.cfi_endproc
ENDF(h_fall)

FUNC(h_tiny)
	.cfi_startproc
	xor %eax, %eax		/* +0 */
	ret			/* +2 */
	.cfi_endproc
ENDF(h_tiny)

FUNC(h_after)			/* code right after h_tiny */
	.cfi_startproc
	mov $1, %eax
	ret
	.cfi_endproc
ENDF(h_after)

	NOTE_GNU_STACK

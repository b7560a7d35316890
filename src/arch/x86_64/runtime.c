/* SPDX-License-Identifier: MIT */
/*
 * x86-64 host runtime: builds region trampolines from the templates in
 * tramp.S, converts between ucontext and struct np_regs, and knows where a
 * function keeps its return address at entry.
 *
 * A region trampoline is, for each displaced instruction in order:
 *   [site block: save, call np__dispatch, restore]   if a probe sits there
 *   the instruction, relocated
 * and then a jump back to the end of the displaced bytes.
 */
#include "core/internal.h"

#include <errno.h>
#include <string.h>
#include <sys/ucontext.h>

#define TPL(name)                                                            \
	extern const uint8_t name##_begin[], name##_end[]

TPL(np_x86_save_full);
TPL(np_x86_save_entry);
TPL(np_x86_save_tail);
TPL(np_x86_sse16_save);
TPL(np_x86_sse16_restore);
TPL(np_x86_sse8_save);
TPL(np_x86_sse8_restore);
TPL(np_x86_call);
TPL(np_x86_restore_full);
TPL(np_x86_restore_entry);
TPL(np_x86_redirect);
extern const uint8_t np_x86_save_full_pc_imm[], np_x86_save_entry_pc_imm[];
extern const uint8_t np_x86_save_tail_site_imm[], np_x86_call_fn_imm[];
extern const uint8_t np_x86_restore_full_redirect_imm[], np_x86_restore_entry_redirect_imm[];
extern const uint8_t np_x86_redirect_tls_a[], np_x86_redirect_tls_b[];
extern const uint8_t np_x86_redirect_noflags[];
extern const uint8_t np_x86_ret_tramp[];

/* The copies of the redirect routine: with rflags, and without (an entry or
 * a return, where the ABI says the flags are dead). */
__attribute__((visibility("hidden"))) uint64_t np_x86_redirect_ptr, np_x86_redirect_nf_ptr;
__thread uint64_t np_tls_redirect __attribute__((tls_model("initial-exec")));

_Static_assert(offsetof(struct np_ctx, regs) == NP_CTX_REGS_OFF, "ctx layout");
_Static_assert(offsetof(struct np_ctx, redirect) == 12, "ctx layout");
_Static_assert(sizeof(struct np_ctx) == 288, "ctx layout used by tramp.S");

/* A template piece being copied out, with its 8-byte slots to fill. */
struct piece {
	const uint8_t *begin, *end;
	const uint8_t *slot;
	uint64_t value;
};

static size_t piece_len(const struct piece *p)
{
	return (size_t)(p->end - p->begin);
}

static size_t emit_piece(uint8_t *out, const struct piece *p)
{
	size_t n = piece_len(p);
	if (out) {
		memcpy(out, p->begin, n);
		if (p->slot)
			memcpy(out + (p->slot - p->begin), &p->value, sizeof(p->value));
	}
	return n;
}

#define PIECE(name, slot_sym, val)                                           \
	((struct piece){name##_begin, name##_end, slot_sym, (uint64_t)(val)})

/* The block that runs a site's handlers; out == NULL measures it. */
static size_t site_block(uint8_t *out, const struct np_site *site)
{
	bool entry = site->func_entry;
	bool sse = site->fpu == NP_FPU_SSE;
	struct piece seq[7];
	int n = 0;

	if (entry)
		seq[n++] = PIECE(np_x86_save_entry, np_x86_save_entry_pc_imm, site->addr);
	else
		seq[n++] = PIECE(np_x86_save_full, np_x86_save_full_pc_imm, site->addr);
	seq[n++] = PIECE(np_x86_save_tail, np_x86_save_tail_site_imm, site);
	if (sse)
		seq[n++] = entry ? PIECE(np_x86_sse8_save, NULL, 0) : PIECE(np_x86_sse16_save, NULL, 0);
	seq[n++] = PIECE(np_x86_call, np_x86_call_fn_imm, &np__dispatch);
	if (sse)
		seq[n++] = entry ? PIECE(np_x86_sse8_restore, NULL, 0)
				 : PIECE(np_x86_sse16_restore, NULL, 0);
	if (entry)
		seq[n++] = PIECE(np_x86_restore_entry, np_x86_restore_entry_redirect_imm,
				 np_x86_redirect_nf_ptr);
	else
		seq[n++] = PIECE(np_x86_restore_full, np_x86_restore_full_redirect_imm,
				 np_x86_redirect_ptr);

	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += emit_piece(out ? out + len : NULL, &seq[i]);
	return len;
}

size_t np_host_tramp_size(const struct np_region *r)
{
	size_t len = 32; /* the jump back, generously */
	for (unsigned i = 0; i < r->ninsn; i++) {
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP)
			len += site_block(NULL, r->sites[i]);
		len += 64; /* a relocated instruction grows to at most ~30 bytes */
	}
	return len;
}

int np_host_build_tramp(struct np_region *r, uint8_t *buf, size_t cap, uint64_t at)
{
	size_t pos = 0;
	for (unsigned i = 0; i < r->ninsn; i++) {
		const struct np_insn *in = &r->insn[i];
		r->tramp_off[i] = (uint32_t)pos;
		if (r->sites[i] && r->strategy == NP_STRATEGY_JUMP) {
			if (pos + site_block(NULL, r->sites[i]) > cap)
				return -ENOSPC;
			pos += site_block(buf + pos, r->sites[i]);
		}
		bool last = i + 1 == r->ninsn;
		struct np_reloc rl = {
			.src = r->orig + (in->pc - r->start),
			.src_len = in->len,
			.src_pc = in->pc,
			.dst = buf + pos,
			.dst_cap = cap - pos,
			.dst_pc = at + pos,
			.resume_pc = last ? r->end : 0,
		};
		int n = np_host_isa->relocate(&rl);
		if (n < 0)
			return n;
		pos += (size_t)n;
	}
	return (int)pos;
}

/* --- registers ------------------------------------------------------------ */

/* gregs index for each hardware register number. */
static const int greg_of[16] = {
	REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
	REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};

void np_host_regs_from_uc(struct np_regs *regs, const void *ucv)
{
	const ucontext_t *uc = ucv;
	memset(regs, 0, sizeof(*regs));
	for (int i = 0; i < 16; i++)
		regs->gpr[i] = (uint64_t)uc->uc_mcontext.gregs[greg_of[i]];
	regs->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	regs->flags = (uint64_t)uc->uc_mcontext.gregs[REG_EFL];
}

void np_host_regs_to_uc(const struct np_regs *regs, void *ucv)
{
	ucontext_t *uc = ucv;
	for (int i = 0; i < 16; i++)
		uc->uc_mcontext.gregs[greg_of[i]] = (greg_t)regs->gpr[i];
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)regs->pc;
	uc->uc_mcontext.gregs[REG_EFL] = (greg_t)regs->flags;
}

/* At a function entry the return address is at (%rsp). */
uint64_t np_host_ret_slot(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[4];
}

uint64_t np_host_ret_trampoline(void)
{
	return (uint64_t)np_x86_ret_tramp;
}

void np_host_return_now(struct np_ctx *ctx, uint64_t value)
{
	uint64_t sp = ctx->regs.gpr[4];
	ctx->regs.gpr[0] = value;
	ctx->regs.pc = *(const uint64_t *)sp;
	ctx->regs.gpr[4] = sp + 8;
	ctx->redirect = 1;
}

static int32_t tls_displacement(void)
{
	uint64_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (int32_t)((int64_t)(uintptr_t)&np_tls_redirect - (int64_t)tp);
}

/* Copy the redirect routine once, with this library's TLS displacement. */
int np_host_init(void)
{
	size_t len = (size_t)(np_x86_redirect_end - np_x86_redirect_begin);
	uint8_t code[256];
	int32_t disp = tls_displacement();

	if (len > sizeof(code))
		return -ENOSPC;
	memcpy(code, np_x86_redirect_begin, len);
	memcpy(code + (np_x86_redirect_tls_a - np_x86_redirect_begin), &disp, 4);
	memcpy(code + (np_x86_redirect_tls_b - np_x86_redirect_begin), &disp, 4);
	uint64_t at = np_codemem_alloc(0, len, 0);
	if (!at)
		return -ENOMEM;
	int err = np_code_write(at, code, len);
	if (err)
		return err;
	np_x86_redirect_ptr = at;
	np_x86_redirect_nf_ptr = at + (uint64_t)(np_x86_redirect_noflags - np_x86_redirect_begin);
	return 0;
}

/* The return address is on the stack at a function entry. */
bool np_host_ret_in_memory(void)
{
	return true;
}

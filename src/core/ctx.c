/* SPDX-License-Identifier: MIT */
/* What a handler can read and change through struct np_ctx. */
#include "core/nolibc.h"
#include "core/thread.h"
#include "host/host.h"
#include "host/layout.h"

#include <errno.h>
#include <string.h>

#ifdef NP_ASAN
#include <sanitizer/asan_interface.h>

static size_t shadow_scale, shadow_offset;

__attribute__((constructor)) static void shadow_mapping(void)
{
	__asan_get_shadow_mapping(&shadow_scale, &shadow_offset);
}

/* ASan's own unpoisoning calls libc's memset, which may be probed (a hit
 * inside a hit, before its guard): the shadow is cleared here, byte by
 * byte, with nothing called. */
__attribute__((no_sanitize("address"))) void np_ctx_claim(struct np_ctx *ctx)
{
	uintptr_t lo = (uintptr_t)ctx, hi = lo + sizeof(*ctx) + ((uintptr_t)1 << shadow_scale) - 1;
	volatile uint8_t *s = (volatile uint8_t *)((lo >> shadow_scale) + shadow_offset);
	volatile uint8_t *end = (volatile uint8_t *)((hi >> shadow_scale) + shadow_offset);
	while (shadow_offset && s < end)
		*s++ = 0;
}
#endif

/* Stack arguments are read from the probed program's stack, which a
 * sanitizer would take for the engine's own (and a handler may ask for more
 * arguments than the function has, as BPF programs may); on x86-64 above
 * the return address. Kept out of np_ctx_arg, so that its register case,
 * which every script hit reading an argument takes, saves no register. */
__attribute__((no_sanitize("address"), noinline, cold)) static uint64_t
stack_arg(const struct np_ctx *ctx, unsigned i)
{
	const struct np_isa *isa = np_host_isa;
	uint64_t sp = ctx->regs.gpr[isa->sp_reg];
	if (NP_CTX_KIND(ctx) == NP_CTX_ENTRY && ctx->site && ctx->site->func_entry)
		sp += np_host_ret_in_memory() ? 8 : 0;
	return *(const uint64_t *)(sp + 8 * (uint64_t)(i - isa->nargs_reg));
}

NP_API uint64_t np_ctx_arg(const struct np_ctx *ctx, unsigned i)
{
	const struct np_isa *isa = np_host_isa;
	if (__builtin_expect(i < isa->nargs_reg, 1))
		return ctx->regs.gpr[isa->arg_regs[i]];
	return stack_arg(ctx, i);
}

NP_API uint64_t np_ctx_retval(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[np_host_isa->ret_reg];
}

NP_API uint64_t np_ctx_pc(const struct np_ctx *ctx)
{
	return ctx->regs.pc;
}

NP_API uint64_t np_ctx_sp(const struct np_ctx *ctx)
{
	return ctx->regs.gpr[np_host_isa->sp_reg];
}

NP_API uint64_t np_ctx_func(const struct np_ctx *ctx)
{
	return ctx->site ? ctx->site->addr - ctx->site->pad_len : 0; /* before a landing pad */
}

NP_API bool np_ctx_is_return(const struct np_ctx *ctx)
{
	return NP_CTX_KIND(ctx) == NP_CTX_RETURN;
}

NP_API int np_reg_lookup(const char *name)
{
	if (!name)
		return -1;
	if (*name == '%')
		name++;
	for (int i = 0; i < NP_NGPR; i++)
		if (np_host_isa->reg_names[i] && strcmp(np_host_isa->reg_names[i], name) == 0)
			return i;
	if (strcmp(name, "pc") == 0 || strcmp(name, "ip") == 0 || strcmp(name, "rip") == 0)
		return NP_NGPR;
	return -1;
}

NP_API const char *np_reg_name(int reg)
{
	if (reg == NP_NGPR)
		return "pc";
	return reg >= 0 && reg < NP_NGPR ? np_host_isa->reg_names[reg] : NULL;
}

NP_API uint64_t np_ctx_reg(const struct np_ctx *ctx, int reg)
{
	if (reg == NP_NGPR)
		return ctx->regs.pc;
	if (reg < 0 || reg >= NP_NGPR || !np_host_reg_captured(ctx->kind, reg))
		return 0;
	return ctx->regs.gpr[reg];
}

static int fail(int err)
{
	*np_errno() = err; /* a handler may call this: no libc */
	return -1;
}

NP_API int np_ctx_set_reg(struct np_ctx *ctx, int reg, uint64_t value)
{
	if (reg == NP_NGPR) {
		/* moving pc mid-function is the handler's own business */
		ctx->regs.pc = value;
		ctx->redirect = 1;
		np_thread_drop_call_data(ctx);
		return 0;
	}
	if (reg < 0 || reg >= NP_NGPR || !np_host_isa->reg_names[reg] ||
	    reg == np_host_isa->sp_reg || !np_host_reg_captured(ctx->kind, reg))
		return fail(EINVAL);
	ctx->regs.gpr[reg] = value;
	return 0;
}

NP_API int np_ctx_set_retval(struct np_ctx *ctx, uint64_t value)
{
	if (NP_CTX_KIND(ctx) != NP_CTX_RETURN)
		return fail(EINVAL);
	ctx->regs.gpr[np_host_isa->ret_reg] = value;
	return 0;
}

NP_API int np_ctx_override_return(struct np_ctx *ctx, uint64_t value)
{
	if (NP_CTX_KIND(ctx) != NP_CTX_ENTRY || !ctx->site || !ctx->site->func_entry)
		return fail(EINVAL);
	np_host_return_now(ctx, value);
	np_thread_drop_call_data(ctx);
	return 0;
}

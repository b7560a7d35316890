/* SPDX-License-Identifier: MIT */
#include "plan_test.h"

#include <errno.h>

static int read_code(void *cookie, uint64_t addr, void *dst, size_t len)
{
	const struct fake_host *h = cookie;
	if (addr < h->base || addr - h->base > h->len || len > h->len - (addr - h->base))
		return -EFAULT;
	memcpy(dst, h->code + (addr - h->base), len);
	return 0;
}

static bool region(void *cookie, uint64_t start, uint64_t end, struct np_plan_region *out)
{
	const struct fake_host *h = cookie;
	const struct np_plan_region *best = NULL;
	for (unsigned i = 0; i < h->nregions; i++) {
		const struct np_plan_region *r = &h->regions[i];
		if (r->start < end && r->end + r->pun > start && (!best || r->start < best->start))
			best = r;
	}
	if (best)
		*out = *best;
	return best != NULL;
}

static void neighbors(void *cookie, uint64_t lo, uint64_t hi, void (*add)(void *, uint64_t),
		      void *to)
{
	const struct fake_host *h = cookie;
	for (unsigned i = 0; i < h->ntargets; i++)
		if (h->targets[i] > lo && h->targets[i] < hi)
			add(to, h->targets[i]);
}

static bool held(void *cookie, uint64_t lo, uint64_t hi, void (*add)(void *, uint64_t), void *to)
{
	const struct fake_host *h = cookie;
	for (unsigned i = 0; i < h->nheld; i++)
		if (h->held[i] > lo && h->held[i] < hi)
			add(to, h->held[i]);
	return h->held_known;
}

static bool module(void *cookie, uint64_t start, bool called, struct np_freereg_env *env)
{
	struct fake_host *h = cookie;
	(void)start, (void)called;
	h->module_asks++;
	if (h->have_env)
		*env = h->env;
	return h->have_env;
}

void fake_host_init(struct fake_host *h, uint64_t base, const uint8_t *code, size_t len)
{
	memset(h, 0, sizeof(*h));
	h->base = base;
	h->code = code;
	h->len = len;
	h->host = (struct np_plan_host){
		.read = read_code,
		.region = region,
		.neighbor_targets = neighbors,
		.held_targets = held,
		.module = module,
		.cookie = h,
	};
}

void fake_view(struct np_fn_view *v, const struct np_isa *isa, struct fake_host *h, uint64_t end,
	       uint64_t limit, bool called, uint64_t addr, unsigned flags)
{
	struct np_func_bounds fb = {h->base, end, limit, true, called};
	CHECK_EQ(np_fn_view_load(v, isa, &h->host, &fb, addr, flags), 0);
}

int fake_site(struct np_fn_view *v, uint64_t pc, const struct np_plan_places *pl,
	      struct np_site_plan *s)
{
	struct np_plan_realise model = np_plan_model(pl);
	return np_plan_site(v, pc, NP_WANT_AUTO, &model, s);
}

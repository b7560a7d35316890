/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "test.h"
#include "unit/fake_mem.h"

static int fake_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	struct fake_mem *m = cookie;

	if (addr < m->base || addr - m->base > sizeof(m->buf) ||
	    len > sizeof(m->buf) - (addr - m->base))
		return -EFAULT;
	memcpy(dst, m->buf + (addr - m->base), len);
	return 0;
}

static int fake_write(void *cookie, uint64_t addr, const void *src, size_t len)
{
	struct fake_mem *m = cookie;

	if (addr < m->base || addr - m->base > sizeof(m->buf) ||
	    len > sizeof(m->buf) - (addr - m->base))
		return -EFAULT;
	memcpy(m->buf + (addr - m->base), src, len);
	return 0;
}

void fake_mem_init(struct fake_mem *m, uint64_t base)
{
	memset(m, 0, sizeof(*m));
	m->base = base;
}

struct np_mem fake_mem_ops(struct fake_mem *m)
{
	return (struct np_mem){fake_read, fake_write, m};
}

void fake_put64(struct fake_mem *m, uint64_t addr, uint64_t v)
{
	CHECK(fake_write(m, addr, &v, 8) == 0);
}

void fake_put32(struct fake_mem *m, uint64_t addr, uint32_t v)
{
	CHECK(fake_write(m, addr, &v, 4) == 0);
}

uint64_t fake_get64(const struct fake_mem *m, uint64_t addr)
{
	uint64_t v = 0;

	CHECK(fake_read((void *)m, addr, &v, 8) == 0);
	return v;
}

/* SPDX-License-Identifier: MIT */
/*
 * The unwind tables of the modules mapped in this process: the
 * .eh_frame_hdr search table (the sorted start of every FDE, with the
 * FDE) and the address range each FDE covers.
 *
 * Every function with unwind info has an FDE, named or not, stripped or
 * not: neighbors.c decodes them all, and symbols.c takes one's range for
 * the bounds of a function no symbol names (an ifunc's implementation in a
 * stripped library).
 *
 * Only the common encodings are read: the table as GNU ld and lld write
 * it, CIEs as GCC and gas write them ("zR", "zPLR", ...). Anything else
 * reads as no table or no range, which only costs knowledge.
 */

#include <link.h>
#include <stddef.h>
#include <string.h>

#include "core/modules.h"

#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_aligned 0x50

struct hdr_lookup {
	uint64_t addr;
	uint64_t hdr; /* runtime address of .eh_frame_hdr, 0 if none */
	unsigned long long subs; /* modules unloaded so far */
};

static int find_hdr(struct dl_phdr_info *info, size_t size, void *cookie)
{
	struct hdr_lookup *l = cookie;
	bool mine = false;
	uint64_t hdr = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && l->addr >= lo && l->addr < lo + ph->p_memsz)
			mine = true;
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = lo;
	}
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		l->subs = info->dlpi_subs;
	if (mine)
		l->hdr = hdr;
	return mine;
}

bool np_fde_table(uint64_t addr, struct np_fde_table *t)
{
	struct hdr_lookup l = {addr, 0, 0};
	dl_iterate_phdr(find_hdr, &l);
	memset(t, 0, sizeof(*t));
	t->subs = l.subs;
	if (!l.hdr)
		return false;
	const uint8_t *h = (const uint8_t *)(uintptr_t)l.hdr;
	if (!np_eh_frame_hdr_known(h)) /* the table np_eh_frame_hdr_starts reads */
		return false;
	memcpy(&t->n, h + 8, sizeof(t->n));
	t->e = (const int32_t *)(h + 12);
	t->base = l.hdr;
	return true;
}

uint64_t np_fde_table_start(const struct np_fde_table *t, uint32_t i)
{
	return t->base + (uint64_t)(int64_t)t->e[2 * i];
}

/* --- one FDE's range ------------------------------------------------------ */

/* Bytes of a value in encoding enc (its low four bits); 0 if not read here. */
static unsigned enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8; /* every ISA here is 64-bit */
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0;
	}
}

/* Reads within [p, end); ok turns false on the first read past end. */
struct cursor {
	const uint8_t *p, *end;
	bool ok;
};

static void skip(struct cursor *c, size_t n)
{
	if (!c->ok || n > (size_t)(c->end - c->p))
		c->ok = false;
	else
		c->p += n;
}

static uint8_t get_u8(struct cursor *c)
{
	uint8_t b = c->ok && c->p < c->end ? *c->p : 0;
	skip(c, 1);
	return b;
}

/* A LEB128 number, signed or not: only its length matters here. */
static void skip_leb(struct cursor *c)
{
	while (c->ok && (get_u8(c) & 0x80))
		;
}

/* 4-byte length of a CIE or FDE at p; 0 for the 64-bit form and the
 * terminator, which are not read here. */
static uint32_t entry_len(const uint8_t *p)
{
	uint32_t len;
	memcpy(&len, p, sizeof(len));
	return len == 0xffffffff ? 0 : len;
}

/* The encoding of its FDEs' addresses that the CIE at cie gives ('R' in
 * its augmentation, absptr without), or -1. */
static int cie_fde_encoding(const uint8_t *cie)
{
	uint32_t len = entry_len(cie), id;
	memcpy(&id, cie + 4, sizeof(id));
	if (len < 8 || id != 0)
		return -1;
	struct cursor c = {cie + 8, cie + 4 + len, true};
	uint8_t version = get_u8(&c);
	const char *aug = (const char *)c.p;
	skip(&c, strnlen(aug, (size_t)(c.end - c.p)) + 1); /* ok only if terminated */
	if (!c.ok || (version != 1 && version != 3))
		return -1;
	skip_leb(&c); /* code alignment */
	skip_leb(&c); /* data alignment */
	if (version == 1)
		get_u8(&c); /* return address column */
	else
		skip_leb(&c);
	if (aug[0] != 'z')
		return c.ok && aug[0] == '\0' ? DW_EH_PE_absptr : -1;
	skip_leb(&c); /* augmentation data length */
	for (const char *a = aug + 1; *a && c.ok; a++) {
		uint8_t enc;
		switch (*a) {
		case 'R':
			enc = get_u8(&c);
			return c.ok ? enc : -1;
		case 'L': /* LSDA encoding */
			get_u8(&c);
			break;
		case 'P': /* personality: encoding, then the pointer */
			enc = get_u8(&c);
			if ((enc & 0x70) == DW_EH_PE_aligned || !enc_size(enc))
				return -1;
			skip(&c, enc_size(enc));
			break;
		case 'S': /* signal frame */
		case 'B': /* arm64's B key */
			break;
		default:
			return -1;
		}
	}
	return c.ok ? DW_EH_PE_absptr : -1;
}

/* pc_range of the FDE at fde: it follows pc_begin, both in the CIE's
 * encoding (the range's size only: it is a length, never relative). */
static bool fde_pc_range(const uint8_t *fde, uint64_t *range)
{
	uint32_t len = entry_len(fde), cie_ptr;
	memcpy(&cie_ptr, fde + 4, sizeof(cie_ptr));
	if (len < 8 || cie_ptr == 0) /* 0: a CIE, not an FDE */
		return false;
	int enc = cie_fde_encoding(fde + 4 - cie_ptr);
	unsigned size = enc < 0 ? 0 : enc_size((uint8_t)enc);
	if (!size || 2 * size > len - 4)
		return false;
	uint64_t v = 0;
	memcpy(&v, fde + 8 + size, size); /* little-endian: every ISA here */
	*range = v;
	return true;
}

uint64_t np_fde_table_end(const struct np_fde_table *t, uint32_t i)
{
	const uint8_t *fde = (const uint8_t *)(uintptr_t)(t->base +
							  (uint64_t)(int64_t)t->e[2 * i + 1]);
	uint64_t range;
	return fde_pc_range(fde, &range) ? np_fde_table_start(t, i) + range : 0;
}

bool np_fde_around(uint64_t addr, struct np_fde_range *out)
{
	struct np_fde_table t;
	if (!np_fde_table(addr, &t))
		return false;
	uint32_t lo = 0, hi = t.n; /* the first FDE starting after addr */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (np_fde_table_start(&t, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	const uint8_t *fde = (const uint8_t *)(uintptr_t)(t.base +
							  (uint64_t)(int64_t)t.e[2 * (lo - 1) + 1]);
	uint64_t range;
	if (!fde_pc_range(fde, &range))
		return false;
	out->start = np_fde_table_start(&t, lo - 1);
	out->end = out->start + range;
	out->next = lo < t.n ? np_fde_table_start(&t, lo) : 0;
	return addr < out->end;
}

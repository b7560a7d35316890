/* SPDX-License-Identifier: MIT */
/*
 * The host's trampolines, byte for byte: np_host_build_tramp and
 * np_host_tramp_size for a set of regions that covers every kind of site
 * block the host builds (mid-function and entry saves, args-only, vector
 * state, entry handlers, bare counters, return arming, several probes at
 * one site, several sites in one region) and the relocations around them
 * (pc-relative data, branches, a call last, the far jump back, a TRAP
 * region's out-of-line copy), compared with a golden dump in
 * tramp_bytes_<isa>.txt, recorded from the code as it was before the
 * hosts shared one layout routine (src/host/tramp.c). A change of layout
 * (a piece moved, left out, or a slot filled differently) shows as a diff.
 *
 * What depends on the process rather than on the layout is written as a
 * name, so the dump is the same in every run and build: the site objects
 * and the library's entries (8-byte words equal to their addresses), the
 * thread pointer's offset (x86-64 %fs:disp32, arm64 add/ldr immediates),
 * and, on x86-64, the vector-state pieces (XSAVEC, XSAVE or FXSAVE as the
 * CPU has them: written as {vsave} and {vrestore}).
 *
 * NP_TRAMP_GOLDEN=FILE writes the dump to FILE instead (the rebase mode,
 * for an intended change, explained in its commit).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/layout.h"
#include "test.h"

int np_engine_init(void);

#ifndef GOLDEN_DIR
#error "GOLDEN_DIR: the folder of the golden dumps"
#endif

/* --- what a case is --------------------------------------------------------- */

struct probe_spec {
	bool entry;     /* an entry handler (else a bare counter) */
	bool ret;       /* a return handler */
	uint32_t slot;
};

struct site_spec {
	unsigned insn;  /* the displaced instruction it sits on */
	bool func_entry, args_only, fpu;
	unsigned nprobes;
	struct probe_spec p[3];
};

struct tcase {
	const char *name;
	uint8_t code[32];
	uint8_t lens[8];     /* instruction lengths, 0 ends */
	bool trap;           /* a TRAP region: its out-of-line copy */
	int64_t at;          /* the trampoline's address, from the code's */
	uint64_t scratch, resume; /* np_reloc_scratch */
	unsigned nsites;
	struct site_spec s[3];
};

#define CODE_AT 0x10000000ull
#define NEAR 0x10000
#define E(...) {__VA_ARGS__}

/* --- the cases of each host -------------------------------------------------- */

#if defined(__x86_64__)
#define ISA "x86_64"
static const struct tcase cases[] = {
	{"mid_one_handler", {0x48, 0x89, 0xf8, 0x48, 0x83, 0xc0, 0x01}, {3, 4}, false, NEAR, 0, 0,
	 1, {{0, false, false, false, 1, {{true, false, 1}}}}},
	{"entry_full_handler", {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10}, {1, 3, 4}, false,
	 NEAR, 0, 0, 1, {{0, true, false, false, 1, {{true, false, 2}}}}},
	{"entry_args_only", {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10}, {1, 3, 4}, false,
	 NEAR, 0, 0, 1, {{0, true, true, false, 1, {{true, false, 3}}}}},
	{"entry_counter_and_return", {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10}, {1, 3, 4},
	 false, NEAR, 0, 0, 1, {{0, true, false, false, 2, {{false, false, 4}, {false, true, 5}}}}},
	{"entry_return_fpu_three", {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10}, {1, 3, 4},
	 false, NEAR, 0, 0, 1,
	 {{0, true, false, true, 3, {{true, true, 6}, {false, false, 7}, {true, false, 8}}}}},
	{"mid_fpu_two", {0x48, 0x89, 0xf8, 0x48, 0x83, 0xc0, 0x01}, {3, 4}, false, NEAR, 0, 0, 1,
	 {{0, false, false, true, 2, {{true, false, 9}, {false, false, 10}}}}},
	/* mov 0x1000(%rip),%eax; lea 0x20(%rip),%rcx: a site on each */
	{"two_sites_riprel", {0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, 0x48, 0x8d, 0x0d, 0x20, 0x00, 0x00,
			      0x00},
	 {6, 7}, false, NEAR, 0, 0, 2,
	 {{0, false, false, false, 1, {{true, false, 11}}},
	  {1, false, false, false, 1, {{false, false, 12}}}}},
	/* test %eax,%eax; je +0x10; call +0x100 (last) */
	{"jcc_call_last", {0x85, 0xc0, 0x74, 0x10, 0xe8, 0x00, 0x01, 0x00, 0x00}, {2, 2, 5}, false,
	 NEAR, 0, 0, 1, {{1, false, false, false, 1, {{true, false, 13}}}}},
	/* mov 0x1000(%rip),%rax */
	{"trap_riprel", {0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00}, {7}, true, NEAR, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 14}}}}},
};
#elif defined(__aarch64__)
#define ISA "arm64"
#define W(w) (w) & 0xff, ((w) >> 8) & 0xff, ((w) >> 16) & 0xff, (uint8_t)((w) >> 24)
#define X16 (1ull << 16)
#define FAR (256ll << 20)
static const struct tcase cases[] = {
	/* mov x0, x1 */
	{"mid_one_handler", {W(0xaa0103e0)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 1}}}}},
	/* the pool's alignment: the block at 4 mod 8 */
	{"mid_one_handler_at4", {W(0xaa0103e0)}, {4}, false, NEAR + 4, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 1}}}}},
	/* stp x29, x30, [sp, #-16]! */
	{"entry_full_handler", {W(0xa9bf7bfd)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, true, false, false, 1, {{true, false, 2}}}}},
	{"entry_args_only", {W(0xa9bf7bfd)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, true, true, false, 1, {{true, false, 3}}}}},
	{"entry_counter_and_return", {W(0xa9bf7bfd)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, true, false, false, 2, {{false, false, 4}, {false, true, 5}}}}},
	{"entry_return_fpu_three", {W(0xa9bf7bfd)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, true, false, true, 3, {{true, true, 6}, {false, false, 7}, {true, false, 8}}}}},
	{"entry_args_fpu", {W(0xa9bf7bfd)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, true, true, true, 1, {{true, false, 9}}}}},
	/* adrp x0, +0x1000; ldr x1, +0x100; b.eq +0x40: the long form's three
	 * words, a site on the first and the last, the way back far */
	{"three_words_far_back", {W(0xb0000000), W(0x58000801), W(0x54000200)}, {4, 4, 4}, false,
	 FAR, X16, X16, 2,
	 {{0, false, false, false, 1, {{true, false, 10}}},
	  {2, false, false, true, 1, {{false, false, 11}}}}},
	/* bl +0x1000, last */
	{"call_last", {W(0x94000400)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 12}}}}},
	/* adr x0, +0x20 */
	{"trap_adr", {W(0x10000100)}, {4}, true, NEAR, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 13}}}}},
};
#elif defined(__riscv) && __riscv_xlen == 64
#define ISA "riscv64"
#define W(w) (w) & 0xff, ((w) >> 8) & 0xff, ((w) >> 16) & 0xff, (uint8_t)((w) >> 24)
#define H(h) (h) & 0xff, (uint8_t)((h) >> 8)
#define T1 (1ull << 6)
#define FAR (16ll << 20)
static const struct tcase cases[] = {
	/* addi a0, a0, 1 */
	{"mid_one_handler", {W(0x00150513)}, {4}, false, NEAR, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 1}}}}},
	/* the block's alignment to 8: c.nop padding */
	{"mid_at2", {W(0x00150513)}, {4}, false, NEAR + 2, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 1}}}}},
	{"mid_at4", {W(0x00150513)}, {4}, false, NEAR + 4, 0, 0, 1,
	 {{0, false, false, false, 1, {{true, false, 1}}}}},
	{"mid_at6_fpu", {W(0x00150513)}, {4}, false, NEAR + 6, 0, 0, 1,
	 {{0, false, false, true, 1, {{true, false, 1}}}}},
	/* c.addi a0, 1; auipc a0, 0x1: a site on each */
	{"compressed_and_auipc", {H(0x0505), W(0x00001517)}, {2, 4}, false, NEAR, 0, 0, 2,
	 {{0, true, false, false, 2, {{true, true, 2}, {false, false, 3}}},
	  {1, false, false, false, 1, {{true, false, 4}}}}},
	/* beq a0, a1, +0x40; jal ra, +0x100 (last); the way back far */
	{"branch_call_far_back", {W(0x04b50063), W(0x100000ef)}, {4, 4}, false, FAR, T1, T1, 1,
	 {{0, false, false, false, 1, {{true, false, 5}}}}},
	/* auipc a0, 0x1 */
	{"trap_auipc", {W(0x00001517)}, {4}, true, NEAR, T1, T1, 1,
	 {{0, false, false, false, 1, {{true, false, 6}}}}},
};
#else
#error "no trampoline cases for this host"
#endif

/* --- building a case's region ----------------------------------------------- */

static struct np_site sites[3];
static struct np_probe probes[3][3];
static struct np_region region;

#define HANDLER(i) ((np_handler_fn)(uintptr_t)(0x4e11000000000000ull + (i)))
#define RHANDLER(i) ((np_handler_fn)(uintptr_t)(0x4e22000000000000ull + (i)))
#define DATA(i) ((void *)(uintptr_t)(0xda7a000000000000ull + (i)))

static void make_region(const struct tcase *c)
{
	memset(&region, 0, sizeof region);
	memset(sites, 0, sizeof sites);
	memset(probes, 0, sizeof probes);
	struct np_region *r = &region;
	uint64_t pc = CODE_AT;
	for (unsigned i = 0; i < 8 && c->lens[i]; i++) {
		r->insn[i].pc = pc;
		r->insn[i].len = c->lens[i];
		pc += c->lens[i];
		r->ninsn = i + 1;
	}
	r->start = CODE_AT;
	r->end = pc;
	memcpy(r->orig, c->code, pc - CODE_AT);
	r->strategy = c->trap ? NP_STRATEGY_TRAP : NP_STRATEGY_JUMP;
	r->scratch = (struct np_reloc_scratch){c->scratch, c->resume};
	for (unsigned k = 0; k < c->nsites; k++) {
		const struct site_spec *ss = &c->s[k];
		struct np_site *s = &sites[k];
		s->version = 7 + k;
		s->addr = r->insn[ss->insn].pc;
		s->region = r;
		s->func_entry = ss->func_entry;
		s->args_only = ss->args_only;
		s->fpu = ss->fpu ? NP_FPU_FULL : NP_FPU_NONE;
		s->live = true;
		for (unsigned j = ss->nprobes; j-- > 0;) {
			struct np_probe *p = &probes[k][j];
			p->addr = s->addr;
			p->site = s;
			p->slot = ss->p[j].slot;
			p->on_entry = ss->p[j].entry ? HANDLER(ss->p[j].slot) : NULL;
			p->on_return = ss->p[j].ret ? RHANDLER(ss->p[j].slot) : NULL;
			p->data = DATA(ss->p[j].slot);
			p->next_in_site = s->probes;
			s->probes = p;
		}
		r->sites[ss->insn] = s;
	}
}

/* --- the dump: bytes, with what depends on the process named -------------- */

struct name {
	uint64_t value;
	const char *name;
};

#if defined(__x86_64__)
extern uint64_t np_x86_redirect_ptr, np_x86_redirect_nf_ptr;
extern const uint8_t np_x86_xsavec_begin[], np_x86_xsavec_end[], np_x86_xsavec_size[];
extern const uint8_t np_x86_xsavec_mask[], np_x86_xsave_begin[], np_x86_xsave_end[];
extern const uint8_t np_x86_xsave_size[], np_x86_xsave_mask[];
extern const uint8_t np_x86_fxsave_begin[], np_x86_fxsave_end[];
extern const uint8_t np_x86_xrstor_begin[], np_x86_xrstor_end[], np_x86_xrstor_mask[];
extern const uint8_t np_x86_fxrstor_begin[], np_x86_fxrstor_end[];

/* A vector-state piece: its template's bytes but for its 4-byte slots
 * (the CPU's XSAVE size and mask). */
struct vpiece {
	const uint8_t *begin, *end, *slot[2];
	const char *name;
};

static bool in_slot(const struct vpiece *v, const uint8_t *t)
{
	for (int i = 0; i < 2; i++)
		if (v->slot[i] && t >= v->slot[i] && t < v->slot[i] + 4)
			return true;
	return false;
}

static size_t vpiece_at(const uint8_t *buf, size_t len, size_t pos, const char **name)
{
	const struct vpiece v[] = {
		{np_x86_xsavec_begin, np_x86_xsavec_end, {np_x86_xsavec_size, np_x86_xsavec_mask},
		 "{vsave}"},
		{np_x86_xsave_begin, np_x86_xsave_end, {np_x86_xsave_size, np_x86_xsave_mask},
		 "{vsave}"},
		{np_x86_fxsave_begin, np_x86_fxsave_end, {NULL, NULL}, "{vsave}"},
		{np_x86_xrstor_begin, np_x86_xrstor_end, {np_x86_xrstor_mask, NULL}, "{vrestore}"},
		{np_x86_fxrstor_begin, np_x86_fxrstor_end, {NULL, NULL}, "{vrestore}"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		size_t n = (size_t)(v[i].end - v[i].begin);
		bool same = pos + n <= len;
		for (size_t k = 0; k < n && same; k++)
			same = in_slot(&v[i], v[i].begin + k) || buf[pos + k] == v[i].begin[k];
		if (same) {
			*name = v[i].name;
			return n;
		}
	}
	return 0;
}
#endif

static int names(struct name *n)
{
	int k = 0;
	for (int i = 0; i < 3; i++) {
		static const char *sn[] = {"{site0}", "{site1}", "{site2}"};
		n[k++] = (struct name){(uint64_t)(uintptr_t)&sites[i], sn[i]};
	}
	n[k++] = (struct name){(uint64_t)(uintptr_t)&np__dispatch, "{np__dispatch}"};
	n[k++] = (struct name){(uint64_t)(uintptr_t)&np__ret_dispatch, "{np__ret_dispatch}"};
	n[k++] = (struct name){(uint64_t)(uintptr_t)&np__shadow_arm, "{np__shadow_arm}"};
#if defined(__x86_64__)
	n[k++] = (struct name){np_x86_redirect_ptr, "{redirect}"};
	n[k++] = (struct name){np_x86_redirect_nf_ptr, "{redirect_noflags}"};
#elif defined(__aarch64__)
	extern const uint8_t np_a64_redirect_fp[], np_a64_redirect[], np_a64_redirect_args_fp[],
		np_a64_redirect_args[];
	n[k++] = (struct name){(uint64_t)(uintptr_t)np_a64_redirect_fp, "{redirect_fp}"};
	n[k++] = (struct name){(uint64_t)(uintptr_t)np_a64_redirect, "{redirect}"};
	n[k++] = (struct name){(uint64_t)(uintptr_t)np_a64_redirect_args_fp, "{redirect_args_fp}"};
	n[k++] = (struct name){(uint64_t)(uintptr_t)np_a64_redirect_args, "{redirect_args}"};
#elif defined(__riscv)
	extern const uint8_t np_rv_site_rest[], np_rv_site_rest_nofp[];
	n[k++] = (struct name){(uint64_t)(uintptr_t)np_rv_site_rest, "{site_rest}"};
	n[k++] = (struct name){(uint64_t)(uintptr_t)np_rv_site_rest_nofp, "{site_rest_nofp}"};
#endif
	return k;
}

#if !defined(__riscv) /* its blocks read no TLS: np__dispatch does */
/* The thread block pointer's offset from the thread pointer. */
static int64_t tls_offset(void)
{
	uint64_t tp;
#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
	return (int64_t)(uintptr_t)np_thread_tls_slot() - (int64_t)tp;
}
#endif

#if defined(__aarch64__)
/* add xd, xn, #hi, lsl #12; ldr xt, [xd, #lo]: the TLS slot, its
 * immediates cleared. */
static void clear_tls(uint8_t *buf, size_t len)
{
	uint64_t off = (uint64_t)tls_offset();
	for (size_t i = 0; i + 8 <= len; i += 4) {
		uint32_t add, ldr;
		memcpy(&add, buf + i, 4);
		memcpy(&ldr, buf + i + 4, 4);
		if ((add & 0xffc00000u) == 0x91400000u && ((add >> 10) & 0xfff) == off >> 12 &&
		    (ldr & 0xffc00000u) == 0xf9400000u && ((ldr >> 10) & 0xfff) == (off & 0xfff) / 8) {
			add &= ~(0xfffu << 10);
			ldr &= ~(0xfffu << 10);
			memcpy(buf + i, &add, 4);
			memcpy(buf + i + 4, &ldr, 4);
		}
	}
}
#endif

static void dump(FILE *f, const struct tcase *c, const uint8_t *buf, int n, size_t size)
{
	struct name nm[16];
	int nn = names(nm);
	fprintf(f, "case %s\n", c->name);
	fprintf(f, "  size %zu, built %d, blocks at", size, n);
	for (unsigned i = 0; i < region.ninsn; i++)
		fprintf(f, " %u", region.tramp_off[i]);
	fprintf(f, "\n");
	if (n < 0)
		return;
#if defined(__x86_64__)
	int32_t disp = (int32_t)tls_offset();
#endif
	int col = 0;
	for (size_t pos = 0; pos < (size_t)n;) {
		const char *tok = NULL;
		size_t step = 1;
		char hex[4];
		for (int k = 0; k < nn && !tok; k++)
			if (pos + 8 <= (size_t)n && !memcmp(buf + pos, &nm[k].value, 8))
				tok = nm[k].name, step = 8;
#if defined(__x86_64__)
		if (!tok && pos >= 1 && buf[pos - 1] == 0x25 && pos + 4 <= (size_t)n &&
		    !memcmp(buf + pos, &disp, 4))
			tok = "{tls}", step = 4;
		if (!tok && (step = vpiece_at(buf, (size_t)n, pos, &tok)) == 0)
			step = 1;
#endif
		if (!tok) {
			snprintf(hex, sizeof hex, "%02x", buf[pos]);
			tok = hex;
		}
		if (col == 0)
			fprintf(f, "  %04zx:", pos);
		fprintf(f, " %s", tok);
		pos += step;
		col += (int)step;
		if (col >= 16 || pos >= (size_t)n) {
			fprintf(f, "\n");
			col = 0;
		}
	}
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *s = NULL;
	size_t cap = 0;
	*len = 0;
	for (size_t r = 1; r > 0; *len += r) {
		if (*len + 4096 > cap && !(s = realloc(s, cap = 2 * cap + 8192)))
			return NULL;
		r = fread(s + *len, 1, cap - *len - 1, f);
	}
	fclose(f);
	s[*len] = 0;
	return s;
}

static void dump_all(FILE *f)
{
	static uint8_t buf[8192];
	fprintf(f, "# np_host_build_tramp on %s: tests/unit/host/tramp_bytes_test.c\n", ISA);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		make_region(&cases[i]);
		size_t size = np_host_tramp_size(&region);
		CHECK(size <= sizeof buf);
		memset(buf, 0xee, sizeof buf);
		int n = np_host_build_tramp(&region, buf, size, CODE_AT + (uint64_t)cases[i].at);
		CHECK(n > 0 && (size_t)n <= size);
#if defined(__aarch64__)
		if (n > 0)
			clear_tls(buf, (size_t)n);
#endif
		dump(f, &cases[i], buf, n, size);
	}
}

TEST(every_trampoline_is_the_golden_one)
{
	CHECK_EQ(np_engine_init(), 0);
	const char *rebase = getenv("NP_TRAMP_GOLDEN");
	if (rebase) {
		FILE *f = fopen(rebase, "w");
		CHECK(f != NULL);
		if (f) {
			dump_all(f);
			fclose(f);
		}
		return;
	}
	char *got = NULL;
	size_t got_len = 0;
	FILE *f = open_memstream(&got, &got_len);
	dump_all(f);
	fclose(f);
	size_t want_len;
	char *want = read_all(GOLDEN_DIR "/tramp_bytes_" ISA ".txt", &want_len);
	CHECK(want != NULL);
	if (want && (want_len != got_len || memcmp(want, got, got_len))) {
		fprintf(stderr, "the trampolines differ from tramp_bytes_" ISA ".txt; now:\n%s",
			got);
		np_test_failed = 1;
	}
	free(want);
	free(got);
}

TEST_MAIN()

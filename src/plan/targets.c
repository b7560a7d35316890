/* SPDX-License-Identifier: MIT */
/*
 * Branches from the functions of a module into each other.
 *
 * A plan decodes the probed function for its branch targets, but
 * hand-written code also jumps into the middle of its neighbours: glibc's
 * __mempcpy_avx512_unaligned_erms ends with a jump to the second
 * instruction of __memmove_avx512_unaligned_erms. A patch displacing that
 * instruction would send the jump into the middle of our jmp. So every
 * function of the module is decoded once, and what it branches to outside
 * itself is kept, sorted, for the plans of its neighbours (np_plan_host's
 * neighbor_targets). The functions are those of the module's
 * .eh_frame_hdr search table: every function with unwind info, named or
 * not, stripped or not; the engine reads the table of a loaded module
 * (src/core/fde.c), the command the file's (np_eh_frame_hdr_starts).
 * Addresses a function forms in another (lea, adr) are kept with them,
 * tagged, and the code pointers the module's data holds in a set of
 * their own (np_targets_add_held): where an indirect jump through a
 * pointer loaded from memory may land (docs/design.md, "Indirect
 * jumps").
 */
#include "plan/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNCTION 65536 /* bytes decoded of one function at most */
#define LAST_FUNCTION 64   /* of the last, whose end the table does not say */

static bool push(struct np_targets *t, uint64_t x)
{
	if (t->n == t->cap) {
		size_t c = t->cap ? t->cap * 2 : 256;
		uint64_t *nv = realloc(t->v, c * sizeof(*nv));
		if (!nv)
			return false;
		t->v = nv;
		t->cap = c;
	}
	t->v[t->n++] = x;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* v[0, sorted) is sorted; sort v[sorted, n) and merge the two runs. */
static void sort_tail(uint64_t *v, size_t n, size_t sorted)
{
	if (n == sorted) /* nothing new (v may be NULL: no arithmetic on it) */
		return;
	np_qsort(v + sorted, n - sorted, sizeof(*v), cmp_u64);
	uint64_t *tmp = sorted ? malloc(n * sizeof(*v)) : NULL;
	if (!tmp) {
		if (sorted)
			np_qsort(v, n, sizeof(*v), cmp_u64);
		return;
	}
	size_t a = 0, b = sorted, k = 0;
	while (a < sorted || b < n)
		tmp[k++] = b >= n || (a < sorted && v[a] <= v[b]) ? v[a++] : v[b++];
	memcpy(v, tmp, n * sizeof(*v));
	free(tmp);
}

/* Sorted v without repeats (most targets are functions called from many
 * places); the new length. */
static size_t dedupe(uint64_t *v, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

static size_t lower_bound(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct scan {
	struct np_targets *t;
	uint64_t lo, hi; /* the function being decoded */
	int err;         /* the first failure: what t holds is not all */
};

static void keep_outside(void *cookie, uint64_t from, uint64_t target)
{
	struct scan *s = cookie;
	(void)from;
	if ((target < s->lo || target >= s->hi) && !push(s->t, target))
		s->err = s->err ? s->err : -ENOMEM;
}

/* An address formed in another function's code: a .cold part's computed
 * goto label, a pointer to an instruction a program keeps to probe it.
 * Kept tagged (NP_TARGET_FORMED) in the same set: only the planner's rule
 * for loaded pointers takes them (np_targets_each_formed), the branches'
 * users do not. Data addresses (most of what lea forms) are left out. */
static void keep_formed(void *cookie, uint64_t from, uint64_t addr)
{
	struct scan *s = cookie;
	(void)from;
	if (addr >= s->t->code_lo && addr < s->t->code_hi && (addr < s->lo || addr >= s->hi) &&
	    !push(s->t, addr | NP_TARGET_FORMED))
		s->err = s->err ? s->err : -ENOMEM;
}

/* Read the longest readable prefix of [start, start + *len) into code.
 * A function's end is a guess for the last one (LAST_FUNCTION), and a
 * function may end where its segment does: past the end of what can be
 * read there is no code, so the prefix is the whole function. 0 with *len
 * shortened, or the read's -errno when not even a byte can be read. */
static int read_prefix(const struct np_mem *mem, uint64_t start, uint8_t *code, size_t *len)
{
	int err = mem->read(mem->cookie, start, code, *len);
	if (!err)
		return 0;
	size_t good = 0, bad = *len; /* a bisection: good reads, bad does not */
	while (bad - good > 1) {
		size_t mid = good + (bad - good) / 2;
		if (mem->read(mem->cookie, start, code, mid))
			bad = mid;
		else
			good = mid;
	}
	if (!good)
		return err;
	*len = good;
	return mem->read(mem->cookie, start, code, good);
}

/* Decode [start, end); its outward branches join s->t. */
static void scan(struct scan *s, const struct np_isa *isa, const struct np_mem *mem,
		 uint64_t start, uint64_t end)
{
	size_t len = end - start < MAX_FUNCTION ? end - start : MAX_FUNCTION;
	uint8_t *code = malloc(len);
	int err = code ? read_prefix(mem, start, code, &len) : -ENOMEM;
	s->lo = start;
	s->hi = start + len;
	struct np_branch_sink sink = {keep_outside, keep_formed, NULL, s};
	if (!err)
		isa->branch_targets(code, len, start, mem, &sink);
	else if (!s->err)
		s->err = err;
	free(code);
}

void np_targets_code_range(struct np_targets *t, const uint64_t *starts, size_t n)
{
	t->code_lo = n ? starts[0] : 0;
	t->code_hi = n ? np_targets_function_end(starts, n, n - 1) : 0;
}

uint64_t np_targets_function_end(const uint64_t *starts, size_t n, size_t i)
{
	return i + 1 < n ? starts[i + 1] : starts[i] + LAST_FUNCTION;
}

int np_targets_add_function(struct np_targets *t, const struct np_isa *isa,
			    const struct np_mem *mem, uint64_t start, uint64_t end)
{
	struct scan s = {t, 0, 0, 0};
	if (end > start)
		scan(&s, isa, mem, start, end);
	return s.err;
}

void np_targets_sort(struct np_targets *t, size_t sorted)
{
	sort_tail(t->v, t->n, sorted);
	t->n = dedupe(t->v, t->n);
}

int np_targets_add_module(struct np_targets *t, const struct np_isa *isa,
			  const struct np_mem *mem, const uint64_t *starts, size_t n)
{
	size_t before = t->n;
	int err = 0;
	np_targets_code_range(t, starts, n);
	for (size_t i = 0; i < n; i++) {
		int e = np_targets_add_function(t, isa, mem, starts[i],
						np_targets_function_end(starts, n, i));
		err = err ? err : e;
	}
	np_targets_sort(t, before);
	return err;
}

int np_targets_merge(struct np_targets *t, const uint64_t *v, size_t n)
{
	size_t before = t->n;
	for (size_t i = 0; i < n; i++)
		if (!push(t, v[i])) {
			t->n = before;
			return -ENOMEM;
		}
	np_targets_sort(t, before);
	return 0;
}

/*
 * The code pointers a module holds: every aligned 8-byte word of [lo, hi)
 * (read through mem, 64 KiB at a time) whose value lies in [code_lo,
 * code_hi). In memory those are the relocated pointers of its data and
 * whatever it stored since; in a file, the link-time values of a
 * position-dependent executable, of RELR-packed and of in-place
 * relocations (a RELA file's addends come from its relocations, added
 * by the host). A word that only looks like one (a size, two ints) is
 * one more target: a plan refused, never a wrong one.
 */
#define HELD_CHUNK 65536

int np_targets_add_held(struct np_targets *t, const struct np_mem *mem, uint64_t lo, uint64_t hi,
			uint64_t code_lo, uint64_t code_hi)
{
	size_t before = t->n;
	uint64_t *w = malloc(HELD_CHUNK);
	int err = w ? 0 : -ENOMEM;
	lo = (lo + 7) & ~7ull;
	for (uint64_t at = lo; !err && at + 8 <= hi; at += HELD_CHUNK) {
		size_t len = hi - at < HELD_CHUNK ? (size_t)(hi - at) & ~(size_t)7 : HELD_CHUNK;
		err = mem->read(mem->cookie, at, w, len);
		for (size_t i = 0; !err && i < len / 8; i++)
			if (w[i] >= code_lo && w[i] < code_hi && !push(t, w[i]))
				err = -ENOMEM;
	}
	free(w);
	sort_tail(t->v, t->n, before);
	t->n = dedupe(t->v, t->n);
	return err;
}

/* Each of v[n] in [code_lo, code_hi) joins t (a file's RELA addends). */
int np_targets_add_values(struct np_targets *t, const uint64_t *v, size_t n, uint64_t code_lo,
			  uint64_t code_hi)
{
	size_t before = t->n;
	int err = 0;
	for (size_t i = 0; !err && i < n; i++)
		if (v[i] >= code_lo && v[i] < code_hi && !push(t, v[i]))
			err = -ENOMEM;
	sort_tail(t->v, t->n, before);
	t->n = dedupe(t->v, t->n);
	return err;
}

void np_targets_each(const struct np_targets *t, uint64_t lo, uint64_t hi,
		     void (*add)(void *to, uint64_t target), void *to)
{
	for (size_t k = lower_bound(t->v, t->n, lo + 1); k < t->n && t->v[k] < hi; k++)
		add(to, t->v[k]);
}

void np_targets_each_formed(const struct np_targets *t, uint64_t lo, uint64_t hi,
			    void (*add)(void *to, uint64_t target), void *to)
{
	for (size_t k = lower_bound(t->v, t->n, (lo | NP_TARGET_FORMED) + 1);
	     k < t->n && t->v[k] < (hi | NP_TARGET_FORMED); k++)
		add(to, t->v[k] & ~NP_TARGET_FORMED);
}

void np_targets_free(struct np_targets *t)
{
	free(t->v);
	*t = (struct np_targets){0};
}

/* DWARF pointer encodings of the search table (LSB, "Exception Frames"). */
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30

bool np_eh_frame_hdr_known(const uint8_t h[4])
{
	return h[0] == 1 && h[1] == (DW_EH_PE_pcrel | DW_EH_PE_sdata4) &&
	       h[2] == DW_EH_PE_udata4 && h[3] == (DW_EH_PE_datarel | DW_EH_PE_sdata4);
}

#define MAX_FDES (1u << 24)

/* version, eh_frame_ptr_enc, fde_count_enc, table_enc; eh_frame_ptr;
 * fde_count; then fde_count pairs (initial location, FDE), each relative
 * to the table's start. */
int np_eh_frame_hdr_starts(const struct np_mem *mem, uint64_t hdr, uint64_t **starts, size_t *n)
{
	uint8_t h[12];
	uint32_t count;
	*starts = NULL;
	*n = 0;
	int err = mem->read(mem->cookie, hdr, h, sizeof(h));
	if (err)
		return err;
	if (!np_eh_frame_hdr_known(h))
		return -ENOEXEC;
	memcpy(&count, h + 8, sizeof(count));
	if (count > MAX_FDES)
		return -E2BIG;
	if (!count)
		return 0;
	int32_t *e = malloc((size_t)count * 2 * sizeof(*e));
	uint64_t *v = malloc((size_t)count * sizeof(*v));
	err = e && v ? mem->read(mem->cookie, hdr + 12, e, (size_t)count * 2 * sizeof(*e)) : -ENOMEM;
	for (uint32_t i = 0; !err && i < count; i++)
		v[i] = hdr + (uint64_t)(int64_t)e[2 * i];
	free(e);
	if (err) {
		free(v);
		return err;
	}
	*starts = v;
	*n = count;
	return 0;
}

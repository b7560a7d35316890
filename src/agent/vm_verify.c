/* SPDX-License-Identifier: MIT */
/*
 * The bytecode checker: what makes np_vm_run safe on any blob it lets
 * through, whoever wrote it. Runs once per session on the agent's control
 * thread (and in the command's tests), never on the hit path.
 *
 * It proves, from each instruction alone:
 *   - termination: every jump goes forward to an instruction start, and
 *     the code ends with VM_EXIT, so a block runs each instruction at most
 *     once;
 *   - memory: every scratch, constant, key and value range lies inside the
 *     area it names, every map id exists and has the kind its operation
 *     needs, every map's table and per-thread entries fit their areas;
 *   - records: a payload is at most max_record bytes.
 * Values computed at run time index nothing but hist and lhist buckets,
 * which vm.c clamps.
 */
#include "agent/vm_run.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MAPS 4096
#define MAX_BLOCKS 65536
#define MAX_SLOTS (1u << 20)
#define MAX_RECORD (64u << 10)
#define MAX_AREA (1ull << 36)

static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool within(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static int check_map(const struct np_vm_prog *p, const struct np_vm_map *m, uint32_t id, char *why,
		     size_t len)
{
	uint64_t value = m->kind == VM_MAP_VALUE ? m->value_size : 0;
	if (m->kind != VM_MAP_VALUE && m->kind != VM_MAP_AGG)
		return refuse(why, len, "map %u: unknown kind %u", id, m->kind);
	if (m->key_size % 8 || m->key_size > p->scratch_bytes || !m->nslots ||
	    m->nslots > MAX_SLOTS || (m->nslots & (m->nslots - 1)) || !m->max_keys)
		return refuse(why, len, "map %u: bad key size or slot count", id);
	if (m->kind == VM_MAP_VALUE &&
	    !(m->agg == VM_VAL_INT ? m->value_size == 8
				   : m->agg == VM_VAL_BLOB && m->value_size && !(m->value_size % 8) &&
					     m->value_size <= p->scratch_bytes))
		return refuse(why, len, "map %u: bad value", id);
	if (m->slot_size != sizeof(struct np_vm_slot) + m->key_size + value || m->shared_off % 8 ||
	    !within(m->shared_off,
		    sizeof(struct np_vm_map_header) + (uint64_t)m->nslots * m->slot_size,
		    p->shared_bytes))
		return refuse(why, len, "map %u: its table does not fit the shared area", id);
	if (m->kind == VM_MAP_VALUE)
		return 0;
	if (m->agg < VM_AGG_COUNT || m->agg > VM_AGG_LHIST)
		return refuse(why, len, "map %u: unknown aggregation %u", id, m->agg);
	if (m->agg == VM_AGG_LHIST &&
	    (m->lstep <= 0 || m->lmax <= m->lmin || m->lmin < -(1ll << 48) ||
	     m->lmax > (1ll << 48) || (m->lmax - m->lmin) / m->lstep > NP_VM_LHIST_MAX ||
	     (m->lmax - m->lmin) / m->lstep < 1))
		return refuse(why, len, "map %u: bad lhist bounds", id);
	if (m->entry_size != 8u + 8u * np_vm_agg_words(m) || m->thread_off % 8 ||
	    m->thread_off < p->scratch_bytes ||
	    !within(m->thread_off, (uint64_t)m->nslots * m->entry_size, p->thread_bytes))
		return refuse(why, len, "map %u: its entries do not fit the thread area", id);
	return 0;
}

static int check_header(const struct np_vm_prog *p, size_t size, char *why, size_t len)
{
	if (size < sizeof(*p) || p->magic != NP_VM_MAGIC || p->version != NP_VM_VERSION)
		return refuse(why, len, "not a program of this version");
	if (p->nmaps > MAX_MAPS || p->nblocks > MAX_BLOCKS || !p->ninsns ||
	    p->ninsns > NP_VM_MAX_INSNS || p->const_bytes > (16u << 20) ||
	    p->size != np_vm_prog_size(p->nmaps, p->nblocks, p->ninsns, p->const_bytes) ||
	    p->size > size)
		return refuse(why, len, "inconsistent sizes");
	if (p->scratch_bytes > NP_VM_MAX_SCRATCH || p->scratch_bytes % 8 ||
	    p->thread_bytes < p->scratch_bytes || p->thread_bytes > MAX_AREA ||
	    p->shared_bytes > MAX_AREA || p->max_record > MAX_RECORD)
		return refuse(why, len, "areas too large");
	return 0;
}

/* The ranges one instruction touches; 0 or the reason. */
static int check_insn(const struct np_vm_prog *p, const struct np_vm_insn *in, uint64_t x,
		      char *why, size_t len, uint32_t at)
{
	const struct np_vm_map *maps = np_vm_maps(p);
	uint32_t e0 = (uint32_t)x, e1 = (uint32_t)(x >> 32), s = p->scratch_bytes;
	int64_t imm = in->imm;
	bool b_ok = in->b < NP_VM_NREGS || (in->op == VM_STR && in->b == 0xff);
	if (in->dst >= NP_VM_NREGS && in->op != VM_JNCMPI && in->op != VM_EMIT)
		return refuse(why, len, "insn %u: bad register", at);
	if (in->a >= NP_VM_NREGS || !b_ok)
		return refuse(why, len, "insn %u: bad register", at);
	const struct np_vm_map *m = NULL;
	switch (in->op) {
	case VM_MGET: case VM_MSET: case VM_MDEL: case VM_AGG: case VM_MCLEAR: case VM_MZERO:
		if (imm < 0 || imm >= p->nmaps)
			return refuse(why, len, "insn %u: no map %lld", at, (long long)imm);
		m = &maps[imm];
		break;
	}
	switch (in->op) {
	case VM_JNCMPI:
		if (in->dst < VM_EQ || in->dst > VM_GEU)
			return refuse(why, len, "insn %u: bad comparison", at);
		return 0;
	case VM_SEXT: case VM_ZEXT: case VM_READ:
		return imm == 1 || imm == 2 || imm == 4 || imm == 8 ? 0
			: refuse(why, len, "insn %u: bad size", at);
	case VM_BUILTIN:
		return imm >= VM_B_PID && imm < VM_B_NBUILTINS ? 0
			: refuse(why, len, "insn %u: bad builtin", at);
	case VM_ARG: /* a uprobe's arg0..arg5, a USDT probe's arg0..arg11 */
		return imm >= 0 && imm < NP_USDT_ARGS ? 0
							  : refuse(why, len, "insn %u: bad argument", at);
	case VM_SARG: return imm >= 0 && imm < 1024 ? 0 : refuse(why, len, "insn %u: bad argument", at);
	case VM_LDS: case VM_STS:
		return imm >= 0 && within((uint64_t)imm, 8, s) ? 0
			: refuse(why, len, "insn %u: outside scratch", at);
	case VM_CONST:
		if (!within(e0, e1, p->const_bytes))
			return refuse(why, len, "insn %u: outside the constants", at);
		break;
	case VM_COPY: case VM_STREQ:
		if (!within(e0, e1, s))
			return refuse(why, len, "insn %u: outside scratch", at);
		break;
	case VM_BUF:
		if (e1 < 16 || e1 > 8 + 255)
			return refuse(why, len, "insn %u: bad buffer size", at);
		break;
	case VM_STR: case VM_COMM:
		if (!e1)
			return refuse(why, len, "insn %u: empty string", at);
		break;
	case VM_USTACK:
		if (e0 > NP_VM_MAX_FRAMES || imm % 8 || e1 != 8u * (e0 + 1))
			return refuse(why, len, "insn %u: bad stack", at);
		break;
	case VM_MGET: case VM_MSET:
		if (m->kind != VM_MAP_VALUE)
			return refuse(why, len, "insn %u: map %lld holds aggregations", at, (long long)imm);
		if (m->agg == VM_VAL_BLOB && (e1 % 8 || !within(e1, m->value_size, s)))
			return refuse(why, len, "insn %u: value outside scratch", at);
		/* fall through */
	case VM_MDEL:
		return e0 % 8 == 0 && within(e0, m->key_size, s) ? 0
			: refuse(why, len, "insn %u: key outside scratch", at);
	case VM_AGG:
		if (m->kind != VM_MAP_AGG)
			return refuse(why, len, "insn %u: map %lld is not an aggregation", at, (long long)imm);
		return e0 % 8 == 0 && within(e0, m->key_size, s) ? 0
			: refuse(why, len, "insn %u: key outside scratch", at);
	case VM_EMIT:
		if (in->dst < VM_REC_PRINTF || in->dst > VM_REC_ZERO || imm < 0 || imm >= (1 << 24) ||
		    e1 > p->max_record || !within(e0, e1, s))
			return refuse(why, len, "insn %u: bad record", at);
		return 0;
	default:
		return 0;
	}
	/* the ops that write scratch + imm for e1 bytes */
	return imm >= 0 && within((uint64_t)imm, e1, s) ? 0
		: refuse(why, len, "insn %u: outside scratch", at);
}

static int check_code(const struct np_vm_prog *p, char *why, size_t len)
{
	const struct np_vm_insn *code = np_vm_insns(p);
	uint32_t n = p->ninsns;
	bool *start = calloc(n + 1, sizeof(*start));
	int rc = 0;
	if (!start)
		return -ENOMEM;
	for (uint32_t at = 0; at < n;) {
		start[at] = true;
		at += 1 + (code[at].op < VM_NOPS && np_vm_op_wide(code[at].op));
	}
	for (uint32_t at = 0; at < n && !rc;) {
		const struct np_vm_insn *in = &code[at];
		uint32_t size = 1;
		uint64_t x = 0;
		if (in->op >= VM_NOPS) {
			rc = refuse(why, len, "insn %u: unknown op %u", at, in->op);
			break;
		}
		if (np_vm_op_wide(in->op)) {
			if (at + 1 >= n) {
				rc = refuse(why, len, "insn %u: cut short", at);
				break;
			}
			memcpy(&x, &code[at + 1], 8);
			size = 2;
		}
		if (in->op == VM_JMP || in->op == VM_JZ || in->op == VM_JNZ || in->op == VM_JNCMPI) {
			uint64_t to = (uint64_t)at + size + (uint64_t)(int64_t)in->imm;
			if (in->imm < 0 || to >= n || !start[to])
				rc = refuse(why, len, "insn %u: bad jump", at);
		}
		if (!rc)
			rc = check_insn(p, in, x, why, len, at);
		at += size;
	}
	if (!rc && (!start[n - 1] || code[n - 1].op != VM_EXIT))
		rc = refuse(why, len, "the code does not end with exit");
	for (uint32_t b = 0; !rc && b < p->nblocks; b++)
		if (np_vm_blocks(p)[b] >= n || !start[np_vm_blocks(p)[b]])
			rc = refuse(why, len, "block %u: bad start", b);
	free(start);
	return rc;
}

int np_vm_verify(const void *blob, size_t size, char *why, size_t len)
{
	const struct np_vm_prog *p = blob;
	if ((uintptr_t)blob % 8)
		return refuse(why, len, "misaligned program");
	int rc = check_header(p, size, why, len);
	for (uint32_t i = 0; !rc && i < p->nmaps; i++)
		rc = check_map(p, &np_vm_maps(p)[i], i, why, len);
	return rc ? rc : check_code(p, why, len);
}

/* SPDX-License-Identifier: MIT */
/*
 * The script bytecode: what `nanoprobe run` compiles a bpftrace program to
 * and what the agent runs on the probed thread (vm.c). Both sides share
 * this header, as they share proto.h.
 *
 * A program is one blob: a header, the map descriptors, the block table
 * (one entry point per probe action), the instructions and a constant
 * pool. The agent checks it once (vm_verify.c) before any probe runs it:
 * every register, scratch range, constant range, map id and record size is
 * known from the instruction alone, and every jump goes forward inside its
 * block, so a checked block ends after at most as many steps as it has
 * instructions and touches no byte outside the memory it was given.
 *
 * Memory a block may touch:
 *   - 16 registers of 64 bits (on the handler's stack);
 *   - its thread's scratch (strings, keys, printf arguments), the first
 *     scratch_bytes of the thread area;
 *   - the maps: a shared key table per map (lock-free inserts, see vm.c),
 *     with the values of value maps beside the keys, and, for aggregations
 *     (count, sum, hist...), an entry per key in each thread's own area, so
 *     that threads never write the same cache line for them. The command
 *     adds the threads' entries up when it prints.
 */
#ifndef NP_AGENT_VM_H
#define NP_AGENT_VM_H
#include <stdint.h>

#define NP_VM_MAGIC 0x6e707662u /* "npvb" */
#define NP_VM_VERSION 1
#define NP_VM_NREGS 16
#define NP_VM_STR 64            /* bpftrace's string size, NUL included */
#define NP_VM_MAX_INSNS (1u << 20)
#define NP_VM_MAX_SCRATCH (64u << 10)
#define NP_VM_MAX_FRAMES 127    /* ustack's default depth, as bpftrace */
#define NP_VM_HIST_SLOTS 65     /* (..., 0), [0], [1], [2, 4) ... [2^62, 2^63) */
#define NP_VM_LHIST_MAX 1000    /* lhist buckets between min and max */
#define NP_VM_PROBE_LIMIT 64    /* slots a lookup looks at before giving up */

/* One instruction. Wide ones (vm_op_wide) are followed by one more 8-byte
 * word, the extension: ext0 (low half) and ext1 (high half). */
struct np_vm_insn {
	uint8_t op;
	uint8_t dst, a, b; /* registers */
	int32_t imm;
};

enum np_vm_op {
	VM_EXIT = 0, /* end of the block */
	VM_MOVI,     /* dst = imm (sign-extended) */
	VM_MOVW,     /* wide: dst = ext0 | ext1 << 32 */
	VM_MOV,      /* dst = a */
	/* dst = a OP b */
	VM_ADD, VM_SUB, VM_MUL, VM_DIVU, VM_MODU, VM_DIVS, VM_MODS, /* x / 0 = 0 */
	VM_AND, VM_OR, VM_XOR, VM_SHL, VM_SHR, VM_SAR,              /* shifts mod 64 */
	VM_EQ, VM_NE, VM_LTS, VM_LES, VM_GTS, VM_GES, VM_LTU, VM_LEU, VM_GTU, VM_GEU,
	/* dst = OP a */
	VM_NEG, VM_BNOT, VM_LNOT,
	VM_SEXT,     /* dst = a sign-extended from imm bytes (1, 2, 4) */
	VM_ZEXT,     /* dst = a zero-extended from imm bytes */
	/* control: the target is the next instruction + imm, imm > 0 */
	VM_JMP, VM_JZ, VM_JNZ,
	/* wide compare-and-branch on a constant, the predicate's shape: jump
	 * unless (a OP ext) holds; OP is dst (an enum np_vm_op compare) */
	VM_JNCMPI,
	/* the hit */
	VM_BUILTIN,  /* dst = enum np_vm_builtin imm */
	VM_ARG,      /* dst = argument imm (0-based) */
	VM_SARG,     /* dst = stack argument imm (0 if unreadable) */
	VM_RETVAL,   /* dst = the return value */
	VM_READ,     /* dst = imm bytes (1, 2, 4, 8) at address a, 0 if unreadable */
	/* scratch: offsets are imm (and ext0), byte counts ext1 */
	VM_LDS,      /* dst = u64 at scratch + imm */
	VM_STS,      /* u64 at scratch + imm = a */
	VM_CONST,    /* wide: scratch + imm = const[ext0, ext0 + ext1) */
	VM_COPY,     /* wide: scratch + imm = scratch[ext0, ext0 + ext1) */
	VM_ZERO,     /* wide: scratch[imm, imm + ext1) = 0 */
	VM_STR,      /* wide: scratch + imm = the string at address a, at most
		      * ext1 bytes with its NUL and at most b bytes before it
		      * when b is not 0xff (then, register b's value); zero-padded */
	VM_BUF,      /* wide: scratch + imm = {u8 n, bytes} of the n = min(a
		      * register b's value, ext1 - 8) bytes at address a */
	VM_STREQ,    /* wide: dst = scratch + imm and scratch + ext0 hold the same
		      * string within ext1 bytes */
	VM_COMM,     /* wide: scratch + imm = the thread's name, ext1 bytes */
	VM_USTACK,   /* wide: scratch + imm = u64 count | pid << 32, then ext0 frames */
	/* maps: imm is the map, ext0 the key's scratch offset */
	VM_MGET,     /* wide: dst = value (ints); blob values: copied to scratch + ext1 */
	VM_MSET,     /* wide: value = a (ints); blob values: from scratch + ext1 */
	VM_MDEL,     /* wide: delete the key */
	VM_AGG,      /* wide: fold register a into the aggregation at the key */
	VM_MCLEAR,   /* every key of map imm goes */
	VM_MZERO,    /* every value of map imm goes back to zero */
	/* records for the command: kind dst, id imm, payload scratch[ext0, ext0 + ext1) */
	VM_EMIT,
	VM_NOPS
};

/* ops followed by an extension word */
static inline int np_vm_op_wide(unsigned op)
{
	switch (op) {
	case VM_MOVW: case VM_JNCMPI: case VM_CONST: case VM_COPY: case VM_ZERO: case VM_STR:
	case VM_BUF: case VM_STREQ: case VM_COMM: case VM_USTACK: case VM_MGET: case VM_MSET:
	case VM_MDEL: case VM_AGG: case VM_EMIT:
		return 1;
	}
	return 0;
}

/* a compare op (VM_EQ .. VM_GEU) on a and b */
static inline int np_vm_cmp(unsigned op, uint64_t a, uint64_t b)
{
	switch (op) {
	case VM_EQ: return a == b;
	case VM_NE: return a != b;
	case VM_LTS: return (int64_t)a < (int64_t)b;
	case VM_LES: return (int64_t)a <= (int64_t)b;
	case VM_GTS: return (int64_t)a > (int64_t)b;
	case VM_GES: return (int64_t)a >= (int64_t)b;
	case VM_LTU: return a < b;
	case VM_LEU: return a <= b;
	case VM_GTU: return a > b;
	case VM_GEU: return a >= b;
	}
	return 0;
}

enum np_vm_builtin {
	VM_B_PID = 1, VM_B_TID, VM_B_NSECS, VM_B_ELAPSED, VM_B_CPU, VM_B_UID, VM_B_GID,
	/* the probe, as the lowest id of the probes with its name (a USDT
	 * probe has one per site): the command names it */
	VM_B_PROBE,
	VM_B_PC,
	VM_B_FUNC, /* the probe's function, as the lowest id of a probe in it */
	VM_B_NBUILTINS
};

/* What a record asks the command to do (its np_rec.reserved: kind << 24 | id). */
enum np_vm_rec {
	VM_REC_PRINTF = 1, /* id: the format; payload: the arguments */
	VM_REC_EXIT,       /* exit() */
	VM_REC_PRINT,      /* print(@map, top, div): payload u64 top, u64 div; id: map */
	VM_REC_VALUE,      /* print(value): id says its type; payload: the value */
	VM_REC_TIME,       /* time(fmt): id: the format */
	VM_REC_CLEAR,      /* clear(@map), id: the map; done by the command, in
			    * order with print(), as bpftrace does */
	VM_REC_ZERO,       /* zero(@map) */
};

enum np_vm_map_kind {
	VM_MAP_VALUE = 1, /* @m[k] = v: shared values, the last writer wins */
	VM_MAP_AGG,       /* @m[k] = count() ...: per-thread entries */
};

/* A value map's values (its agg field). */
enum np_vm_value { VM_VAL_INT = 0, VM_VAL_BLOB };

enum np_vm_agg {
	VM_AGG_COUNT = 1, VM_AGG_SUM, VM_AGG_MIN, VM_AGG_MAX, VM_AGG_AVG, VM_AGG_STATS,
	VM_AGG_HIST, VM_AGG_LHIST,
};

/* A map. Its key table in the shared area: a header, then nslots slots of
 * slot_size bytes (struct np_vm_slot, the key, for value maps the value).
 * Aggregations: entry_size bytes per slot in each thread area at
 * thread_off: a u64 epoch, then the aggregate (u64 words). */
struct np_vm_map {
	uint32_t kind;       /* enum np_vm_map_kind */
	uint32_t agg;        /* enum np_vm_agg; a value map's enum np_vm_value */
	uint32_t key_size;   /* a multiple of 8, 0 for @x */
	uint32_t value_size; /* VALUE: a multiple of 8 (8 for an int) */
	uint32_t nslots;     /* a power of two */
	uint32_t max_keys;   /* keys at most: then updates are drops */
	uint32_t slot_size;
	uint32_t entry_size; /* AGG: per thread and slot */
	uint64_t shared_off; /* the header; slots follow it */
	uint64_t thread_off;
	int64_t lmin, lmax, lstep; /* lhist */
};

struct np_vm_map_header {
	uint64_t keys;  /* slots taken */
	uint64_t drops; /* updates lost to a full table */
	uint64_t pad[6];
};

enum np_vm_slot_state { VM_SLOT_EMPTY = 0, VM_SLOT_BUSY, VM_SLOT_READY };

struct np_vm_slot {
	uint32_t state;   /* enum np_vm_slot_state */
	uint32_t epoch;   /* bumped by delete, clear, zero: older entries are void */
	uint32_t present; /* the key is in the map (delete and clear take it out) */
	uint32_t pad;
	/* then the key, then a value map's value */
};

struct np_vm_prog {
	uint32_t magic, version;
	uint32_t size;          /* the whole blob */
	uint32_t ninsns;        /* instruction words, extensions included */
	uint32_t nblocks;
	uint32_t nmaps;
	uint32_t const_bytes;
	uint32_t scratch_bytes; /* at the start of each thread area */
	uint64_t shared_bytes;  /* maps' tables */
	uint64_t thread_bytes;  /* per thread: scratch, then aggregation entries */
	uint32_t max_record;    /* the largest payload a block emits */
	uint32_t pad;
	/* then: struct np_vm_map maps[nmaps], uint32_t blocks[nblocks] (the
	 * first instruction of each), padded to 8, struct np_vm_insn
	 * insns[ninsns], uint8_t consts[const_bytes] */
};

static inline const struct np_vm_map *np_vm_maps(const struct np_vm_prog *p)
{
	return (const struct np_vm_map *)(p + 1);
}

static inline const uint32_t *np_vm_blocks(const struct np_vm_prog *p)
{
	return (const uint32_t *)(np_vm_maps(p) + p->nmaps);
}

static inline const struct np_vm_insn *np_vm_insns(const struct np_vm_prog *p)
{
	uint64_t off = (uint64_t)((const char *)(np_vm_blocks(p) + p->nblocks) - (const char *)p);
	return (const struct np_vm_insn *)((const char *)p + ((off + 7) & ~7ull));
}

static inline const uint8_t *np_vm_consts(const struct np_vm_prog *p)
{
	return (const uint8_t *)(np_vm_insns(p) + p->ninsns);
}

/* The blob's size for these counts. */
static inline uint64_t np_vm_prog_size(uint32_t nmaps, uint32_t nblocks, uint32_t ninsns,
				       uint32_t const_bytes)
{
	uint64_t off = sizeof(struct np_vm_prog) + (uint64_t)nmaps * sizeof(struct np_vm_map) +
		       4ull * nblocks;
	return ((off + 7) & ~7ull) + 8ull * ninsns + const_bytes;
}

/* Aggregate words after the epoch. */
static inline uint32_t np_vm_agg_words(const struct np_vm_map *m)
{
	switch (m->agg) {
	case VM_AGG_COUNT: case VM_AGG_SUM: return 1;
	case VM_AGG_MIN: case VM_AGG_MAX: return 2;     /* set, value */
	case VM_AGG_AVG: return 2;                       /* count, sum */
	case VM_AGG_STATS: return 2;                     /* count, sum */
	case VM_AGG_HIST: return NP_VM_HIST_SLOTS;
	case VM_AGG_LHIST: return (uint32_t)((m->lmax - m->lmin) / m->lstep) + 2;
	}
	return 0;
}
#endif

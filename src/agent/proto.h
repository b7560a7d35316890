/* SPDX-License-Identifier: MIT */
/*
 * What the agent and the nanoprobe command share: the control messages on
 * the Unix socket, and the layout of the shared-memory area where probes
 * leave their events and counters.
 *
 * Control: a SOCK_SEQPACKET socket in the abstract namespace, one message
 * per struct. The command listens, and an agent connects for each process
 * of the traced tree (from its constructor when preloaded, from
 * nanoprobe_agent_start when injected, from a thread of its own in a forked
 * child); the command checks SO_PEERCRED. Then:
 *   agent -> command  JOIN: a fresh image, a forked child (it has its
 *                     parent's probes and memory), or one that goes untraced
 * and for a fresh image:
 *   command -> agent  HELLO (with the session's shared memory as SCM_RIGHTS
 *                     when another agent made it already), PROBE x n, GO
 *   agent -> command  ATTACHED x n (one per probe, now or when its module
 *                     appears), READY (with the shared memory it made)
 * and for every process:
 *   command -> agent  DETACH      agent -> command  DETACHED
 * A socket that closes is a DETACH: if the command dies, the agent removes
 * its probes by itself.
 *
 * Shared memory: one memfd made by the first agent, mapped by the command
 * and by every process of the tree (a forked child inherits the mapping, a
 * fresh image gets the memfd from the command). A header, a per-probe
 * table, then `nrings` rings. A thread claims a ring on its first hit and
 * is its only writer:
 * counters there are plain increments, events go into a single-producer
 * byte ring that drops (and counts) rather than waits. The command never
 * trusts this memory: every record is bounds-checked before use.
 */
#ifndef NP_AGENT_PROTO_H
#define NP_AGENT_PROTO_H
#include <stddef.h>
#include <stdint.h>

#define NP_PROTO_MAGIC 0x6e70726fu /* "npro" */
#define NP_PROTO_VERSION 5
#define NP_AGENT_START_SYM "nanoprobe_agent_start"
#define NP_AGENT_ENV_SOCK "NANOPROBE_AGENT_SOCK"
/* Set (to 1) in the environment of a program the command starts when the
 * programs it runs are traced too: a preloaded agent in a process other
 * than the one started then joins the session. */
#define NP_AGENT_ENV_FOLLOW "NANOPROBE_AGENT_FOLLOW"

#define NP_PATH_MAX 512
#define NP_ARG_NAME_MAX 32
#define NP_MAX_ARGS 16
#define NP_MAX_DEREF 4
#define NP_STRING_MAX 256 /* bytes a string fetch copies, NUL included */
#define NP_HIST_BUCKETS 64

enum np_msg_type {
	NP_MSG_HELLO = 1,
	NP_MSG_PROBE,
	NP_MSG_GO,
	NP_MSG_ATTACHED,
	NP_MSG_READY,
	NP_MSG_DETACH,
	NP_MSG_DETACHED,
	NP_MSG_SCRIPT, /* after HELLO when it has script_len: the program (vm.h) in
			* chunks of at most NP_SCRIPT_CHUNK bytes, each message a
			* uint32_t type then the bytes */
	NP_MSG_JOIN,   /* the agent's first message (struct np_msg_join) */
	NP_MSG_EXEC,   /* a process of the tree is about to exec (struct np_msg_exec) */
};

/* What a process that joins the session is. */
enum np_join_kind {
	NP_JOIN_IMAGE = 1, /* a fresh image (preloaded or injected): send it the session */
	NP_JOIN_FORK,      /* a forked child: its parent's probes and memory are its own */
	NP_JOIN_UNTRACED,  /* a process the session does not follow: it says so and goes */
	NP_JOIN_EXEC,      /* a process with no connection yet is about to exec exe (the
			    * note of NP_MSG_EXEC, on a connection of its own) */
	NP_JOIN_COPY,      /* a child made without fork's handlers (raw clone, clone3,
			    * _Fork) records under its own pid from now on, served by
			    * no agent thread: a note, on a connection of its own */
};

struct np_msg_join {
	uint32_t type, kind; /* enum np_join_kind */
	int32_t pid, ppid;
	char exe[256]; /* its program, for messages ("" if unknown) */
};

/* Sent by the process that calls execve (a vfork child on its parent's
 * connection), so that the command knows to expect the new image, or to
 * say why it did not join. */
struct np_msg_exec {
	uint32_t type;
	int32_t pid;
	char path[256]; /* as given to execve, cut */
};
#define NP_SCRIPT_CHUNK 65536

/* What a probe's handler does on a hit. */
enum np_action {
	NP_ACT_COUNT = 1,   /* counts[id]++ in the thread's ring */
	NP_ACT_EVENT,       /* a record into the thread's ring */
	NP_ACT_LATENCY,     /* entry-to-return time into the ring's histogram */
	NP_ACT_WATCH,       /* a watchpoint: a record per access (see np_msg_probe) */
	NP_ACT_SCRIPT,      /* run the session's program (vm.h) at its block */
};

enum np_fetch_base {
	NP_FB_REG = 1, /* register number (np_reg_lookup) */
	NP_FB_ARG,     /* calling-convention argument index, 0-based */
	NP_FB_RETVAL,
	NP_FB_STACK,   /* n-th word at the stack pointer */
	NP_FB_SP,      /* the stack pointer itself ($stack) */
	NP_FB_IMM,     /* an absolute address (@ADDR) */
	NP_FB_MODREL,  /* a vaddr in the probe's module (@SYMBOL, @+OFFS) */
};

enum np_fetch_type {
	NP_FT_U = 1, /* unsigned decimal */
	NP_FT_S,     /* signed decimal */
	NP_FT_X,     /* hexadecimal */
	NP_FT_STRING,
};

/* base, then each deref d reads a pointer at value + off[d]; the last one
 * reads `size` bytes (or, for a string, the string at value + off). */
struct np_fetch {
	char name[NP_ARG_NAME_MAX];
	uint8_t base;  /* enum np_fetch_base */
	uint8_t type;  /* enum np_fetch_type */
	uint8_t size;  /* 1, 2, 4, 8 */
	uint8_t nderef;
	int32_t index; /* register, argument or stack index */
	uint64_t imm;  /* NP_FB_IMM / NP_FB_MODREL address */
	int64_t off[NP_MAX_DEREF];
};

/* A USDT argument as the agent reads it on a hit (vm.c): the ISA's parse
 * of the note's text (src/arch/usdt.h, struct np_usdt_arg), with the
 * address of the symbol it names resolved by the command. The value is a
 * constant, a register, or size bytes at base + index * scale + disp. */
#define NP_USDT_ARGS 12 /* <sys/sdt.h>'s most */
#define NP_UA_NOREG (-1)

enum np_usdt_kind_wire { NP_UA_CONST = 1, NP_UA_REG, NP_UA_MEM };

enum np_usdt_loc_flag {
	NP_UA_MODREL = 1u << 0,   /* MEM: disp is a vaddr of the module: add its load bias */
	NP_UA_INMODULE = 1u << 1, /* MEM: inside a loadable segment of the module (the
				   * command checked): mapped while its code runs */
};

struct np_usdt_loc {
	uint8_t kind;      /* enum np_usdt_kind_wire */
	uint8_t size;      /* 1, 2, 4 or 8 bytes */
	uint8_t is_signed; /* sign-extended from size bytes, else zero-extended */
	uint8_t scale;     /* MEM: 1, 2, 4 or 8 */
	int8_t base;       /* REG, MEM: a register (np_regs.gpr) or NP_UA_NOREG */
	int8_t index;      /* MEM: a register or NP_UA_NOREG */
	uint8_t shift;     /* REG: the value's lowest bit (x86 %ah: 8) */
	uint8_t flags;     /* enum np_usdt_loc_flag */
	int64_t disp;      /* MEM: added to the address; CONST: the value */
};

struct np_msg_hello {
	uint32_t type, magic, version;
	uint32_t nprobes;
	uint32_t nrings;
	uint32_t ring_bytes; /* event bytes per ring, a power of two */
	uint32_t hist_unit;  /* latency buckets count in this many ns */
	uint32_t script_len; /* bytes of the program NP_MSG_SCRIPT brings, 0: none */
	/* latency: 0, or nprobes histograms per ring, one per probe, in the
	 * ring's extra area (np_ring_hists) */
	uint32_t hists;
	/* 0: the agent's clock (the counter where it can); NP_CLOCK_VDSO:
	 * the vDSO whatever the counter (NANOPROBE_CLOCK=vdso) */
	uint32_t clock;
	uint32_t flags; /* enum np_hello_flag */
};

enum np_hello_flag {
	/* the session's shared memory comes with HELLO (SCM_RIGHTS): another
	 * process of the tree made it; map it rather than make one */
	NP_HELLO_SHM_GIVEN = 1u << 0,
	/* children this process forks stay traced (each joins with a thread
	 * of its own); else they record nothing and are counted */
	NP_HELLO_FOLLOW = 1u << 1,
};

/* How the agent reads CLOCK_MONOTONIC for its time stamps (np_rec.ts,
 * latency): src/core/clock.c. The time stamps mean CLOCK_MONOTONIC either way. */
enum np_clock_source {
	NP_CLOCK_NONE = 0, /* no probe of the session reads the clock */
	NP_CLOCK_VDSO,     /* clock_gettime through the vDSO */
	NP_CLOCK_TSC,      /* the TSC, calibrated against the vDSO */
};

struct np_msg_probe {
	uint32_t type;
	uint32_t id;
	uint8_t is_return; /* handler at the function's return */
	uint8_t action;    /* enum np_action */
	uint8_t strategy;  /* enum np_strategy (AUTO unless forced) */
	uint8_t nargs;
	/* The module, by identity: path for messages, device and inode to
	 * match a mapping (the target may see another path, e.g. in a chroot). */
	char path[NP_PATH_MAX];
	uint64_t dev, ino;
	uint64_t vaddr;      /* the site, ELF vaddr */
	uint64_t func_vaddr; /* its function's bounds, 0 if unknown */
	uint64_t func_size;
	struct np_fetch args[NP_MAX_ARGS];
	/* NP_ACT_WATCH (issue 8): np_watch_attach of watch_len bytes at vaddr
	 * (an absolute address when dev and ino are 0) for watch_type (enum
	 * np_watch_type). nargs is 2 (the old and new values) or 0 (execute).
	 * Its records: pc the accessing instruction, func where the thread
	 * resumed, reserved the hit's enum np_watch_hit_flags, fault_mask 3
	 * when the values could not be read. */
	uint8_t watch_type;
	uint8_t watch_len;
	/* NP_ACT_SCRIPT: the program's block this probe runs; whether it reads
	 * registers other than the arguments (a stack walk's frame pointer) */
	uint8_t script_regs;
	uint32_t block;
	/* what the block's `probe` and `func` are: the lowest id of the probes
	 * of the same name, of the same function, so that a map keyed by them
	 * has one key per name (a USDT probe at two sites is one probe) */
	uint32_t probe_key, func_key;
	/* NP_ACT_SCRIPT at a USDT probe's nop: its block's arg0.. are the
	 * note's arguments, the first nusdt of them (what the block reads),
	 * and usdt_sema, when not 0, is the vaddr in the module of its
	 * semaphore, which the agent raises while the probe is placed */
	uint8_t usdt;
	uint8_t nusdt;
	uint64_t usdt_sema;
	struct np_usdt_loc usdt_args[NP_USDT_ARGS];
};

struct np_msg_attached {
	uint32_t type;
	uint32_t id;
	int32_t err;       /* 0 or -errno */
	uint32_t strategy; /* enum np_strategy chosen */
	uint64_t addr;     /* runtime address */
	char why[200];     /* the engine's reason on failure */
};

struct np_msg_simple { /* GO, READY, DETACH, DETACHED */
	uint32_t type;
	uint32_t pending; /* READY: probes waiting for their module */
};

/* --- shared memory ------------------------------------------------------ */

#define NP_SHM_MISS_REASONS 8 /* room for enum np_miss_reason */

struct np_shm_header {
	uint32_t magic, version;
	uint32_t nprobes, nrings;
	uint32_t ring_bytes;  /* event area of one ring */
	uint32_t ring_stride; /* bytes from one ring to the next */
	uint64_t no_ring;     /* hits of threads that found every ring taken */
	/* A script's memory: each ring's thread area (np_ring_extra), and the
	 * shared area for the maps' tables after the last ring. */
	uint64_t ring_extra;  /* bytes, a multiple of 4096 */
	uint64_t script_off;  /* from the header */
	uint64_t script_bytes;
	/* misses since the session began, by enum np_miss_reason (refreshed
	 * with missed[]); the rest of missed[]'s sum has no reason (misses of
	 * watches whose thread had no state count under NP_MISS_NO_THREAD);
	 * every agent adds to missed[] and missed_why[] what its process
	 * missed since it last did (atomically: the tree shares them) */
	uint64_t missed_why[NP_SHM_MISS_REASONS];
	/* The session's clock, set before READY by the agent that made the
	 * memory (each process reads its own): enum np_clock_source, the
	 * counter's rate (NP_CLOCK_TSC), why not the counter (NP_CLOCK_VDSO;
	 * NUL-terminated) */
	uint32_t clock;
	uint32_t clock_reserved;
	uint64_t clock_hz;
	char clock_why[96];
	uint64_t start_ns;       /* the session's start (CLOCK_MONOTONIC): elapsed */
	uint64_t untraced_forks; /* children forked while the session did not follow */
	uint64_t vfork_unrecorded; /* hits of vfork children whose parent thread had no ring */
};

enum np_ring_state { NP_RING_FREE = 0, NP_RING_CLAIMING, NP_RING_OWNED };

/* Latency aggregate of one probe in one thread: count, sum, min and max
 * in ns; the buckets in the unit HELLO asked for, as bpftrace's hist():
 * [0], [1], [2,4), [4,8)... */
struct np_hist {
	uint64_t count, sum, min, max;
	uint64_t bucket[NP_HIST_BUCKETS];
};

struct np_ring {
	_Alignas(64) uint64_t head; /* bytes written, producer */
	_Alignas(64) uint64_t tail; /* bytes consumed, command */
	_Alignas(64) uint32_t state; /* enum np_ring_state */
	int32_t tid;
	int32_t pid;                 /* the process of the thread */
	char comm[16];               /* the thread's name when it claimed */
	uint64_t drops;              /* events lost to a full ring */
	/* then: uint64_t counts[nprobes], then ring_bytes of events, then the
	 * extra area: a script's thread area, or a latency session's
	 * histograms */
};

/* An event. len covers header and arguments, a multiple of 8; a record with
 * probe == NP_REC_PAD fills the end of the ring before a wrap. */
#define NP_REC_PAD 0xffff
struct np_rec {
	uint32_t len;
	uint16_t probe;
	uint16_t cpu;
	uint32_t fault_mask; /* bit i: argument i could not be read */
	uint32_t reserved;
	uint64_t ts;       /* CLOCK_MONOTONIC ns */
	uint64_t pc;       /* entry: the site; return: where it returns to */
	uint64_t func;     /* return: the function's address */
	uint64_t entry_ts; /* return: when the call began, 0 if unknown */
	/* then per argument: a number is a uint64_t; a string is a uint16_t
	 * length, its bytes (no NUL), padded to 8. */
};

/* The layout: the header's page, missed[nprobes] (hits the engine could
 * not hand to a handler, np_probe_missed, refreshed by the agent's control
 * thread), then nrings rings of ring_stride bytes each. */
static inline uint64_t *np_shm_missed(struct np_shm_header *h)
{
	return (uint64_t *)((char *)h + 4096);
}

static inline size_t np_shm_rings_offset(uint32_t nprobes)
{
	return 4096 + ((8ull * nprobes + 4095) & ~4095ull);
}

/* Without the script area (np_shm_header.script_off is this). */
static inline size_t np_shm_size(uint32_t nprobes, uint32_t nrings, uint32_t stride)
{
	return np_shm_rings_offset(nprobes) + (size_t)nrings * stride;
}

static inline struct np_ring *np_shm_ring(struct np_shm_header *h, uint32_t nprobes,
					  uint32_t stride, uint32_t i)
{
	return (struct np_ring *)((char *)h + np_shm_rings_offset(nprobes) + (size_t)i * stride);
}

/* Bytes a string argument takes in a record at most: length, bytes, pad. */
#define NP_STRING_SLOT ((2u + NP_STRING_MAX + 7u) & ~7u)

/* The largest record a probe can write. */
static inline uint32_t np_rec_max(const struct np_msg_probe *m)
{
	uint32_t len = sizeof(struct np_rec);
	for (unsigned i = 0; i < m->nargs && i < NP_MAX_ARGS; i++)
		len += m->args[i].type == NP_FT_STRING ? NP_STRING_SLOT : 8u;
	return len;
}

static inline uint64_t *np_ring_counts(struct np_ring *r)
{
	return (uint64_t *)(r + 1);
}

static inline unsigned char *np_ring_data(struct np_ring *r, uint32_t nprobes)
{
	return (unsigned char *)(np_ring_counts(r) + nprobes);
}

/* A record of len bytes at *head in the ring's data of size bytes (a
 * power of two), a pad record first if it would cross the end: NULL and a
 * drop when the command has not caught up. The writer publishes *head. */
static inline struct np_rec *np_ring_reserve(struct np_ring *r, unsigned char *data,
					     uint32_t size, uint32_t len, uint64_t *head)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint32_t off = (uint32_t)(*head & (size - 1));
	uint32_t room = size - off;
	uint64_t need = room < len ? (uint64_t)room + len : len;
	if (*head - tail + need > size) {
		r->drops++;
		return NULL;
	}
	if (room < len) {
		struct np_rec *pad = (struct np_rec *)(data + off);
		pad->len = room;
		pad->probe = NP_REC_PAD;
		*head += room;
		off = 0;
	}
	return (struct np_rec *)(data + off);
}

/* The ring's header, counters and events, page-aligned: a script's
 * thread area follows (np_ring_extra). */
static inline uint64_t np_ring_base_size(uint32_t nprobes, uint32_t ring_bytes)
{
	uint64_t s = sizeof(struct np_ring) + 8ull * nprobes + ring_bytes;
	return (s + 4095) & ~4095ull;
}

static inline uint32_t np_ring_stride(uint32_t nprobes, uint32_t ring_bytes)
{
	return (uint32_t)np_ring_base_size(nprobes, ring_bytes);
}

/* With a thread area of `extra` bytes (a multiple of 4096) per ring. */
static inline uint64_t np_ring_stride_extra(uint32_t nprobes, uint32_t ring_bytes, uint64_t extra)
{
	return np_ring_base_size(nprobes, ring_bytes) + extra;
}

static inline unsigned char *np_ring_extra(struct np_ring *r, uint32_t nprobes, uint32_t ring_bytes)
{
	return (unsigned char *)r + np_ring_base_size(nprobes, ring_bytes);
}

/* A latency session's extra area: hists (HELLO) histograms, page-aligned. */
static inline uint64_t np_ring_hists_size(uint32_t hists)
{
	return (hists * (uint64_t)sizeof(struct np_hist) + 4095) & ~4095ull;
}

static inline struct np_hist *np_ring_hists(struct np_ring *r, uint32_t nprobes,
					    uint32_t ring_bytes)
{
	return (struct np_hist *)np_ring_extra(r, nprobes, ring_bytes);
}
#endif

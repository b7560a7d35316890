/* SPDX-License-Identifier: MIT */
/*
 * Watchpoints inside the engine: the control path (watch.c: attach,
 * detach, slot accounting, placing events on threads) and the hit path
 * (watch_hit.c: the SIGTRAP that perf sends, the accessing instruction's
 * pc, the shadow value), and what the rest of the engine calls.
 */
#ifndef NP_WATCH_H
#define NP_WATCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/layout.h"


/* Watches alive at once in one process (a few per thread can be placed;
 * the rest of the table absorbs detached ones whose late signals may
 * still be on their way). */
#define NP_WATCH_MAX 256

/* sig_data of our events: a magic in the top 16 bits, the table index
 * in the low 16, the watch's generation in between, so that a SIGTRAP
 * that arrives after its watch is gone (or reused) is recognised. */
#define NP_WATCH_MAGIC 0x6e77ull /* "nw" */
#define NP_WATCH_SIGDATA(gen, idx) \
	((NP_WATCH_MAGIC << 48) | ((uint64_t)(uint32_t)(gen) << 16) | (uint16_t)(idx))

struct np_watch {
	uint64_t addr;
	size_t len;
	enum np_watch_type type;
	np_watch_fn fn;
	void *data;
	char *name;
	uint32_t index, gen;  /* in the table; the generation of sig_data */
	uint32_t slot;        /* counter slot in every np_thread */
	uint64_t hits_base, missed_base;
	_Atomic uint64_t shadow;        /* the value the last hit left */
	/* The identity in np_thread.in_site while its handler runs (and the
	 * ctx's site, addr = the watched address): the probes' recursion
	 * guard and detach wait serve watches unchanged. */
	struct np_site token;
	int *fds;             /* one event per thread alive at attach */
	size_t nfds, capfds;
	bool detached;
};

/* The table the hit path reads, indexed by sig_data's low 16 bits. */
struct np_watch_entry {
	struct np_watch *_Atomic watch; /* published with release; NULL: none */
	_Atomic uint32_t gen;  /* of the watch last published here */
	_Atomic uint32_t slot; /* its counter slot: a nested hit counts its miss
				* there without touching a watch that may be
				* going away */
	_Atomic uint64_t missed_no_block; /* hits of this generation on a
					   * thread that got no block */
};
extern struct np_watch_entry np_watch_table[NP_WATCH_MAX];

/* si_code of a perf event's SIGTRAP (TRAP_PERF; glibc 2.36 lacks it). */
#define NP_TRAP_PERF 6

/* From the SIGTRAP handler (trap.c), for a signal with si_code
 * NP_TRAP_PERF: true when it was a watch's (handled, or a late one of a
 * watch now gone), false when some other perf event of the program's
 * sent it. */
bool np_watch_trap(siginfo_t *si, void *uc);

/* watch_hit.c, control path, engine lock held: keep the table of code
 * modules the hit path finds function starts in (.eh_frame_hdr) up to
 * date with the loaded modules. */
void np_watch_modules_refresh(void);
/* The value at addr (len bytes, zero-extended): 0 or -EFAULT. */
int np_watch_read_value(uint64_t addr, size_t len, uint64_t *out);

/* Can the hardware of this host watch [addr, addr + len) for type? 0, or
 * -EINVAL with the reason in why (shape only: nothing is read). The
 * command checks specs with it before it starts anything. */
int np_watch_check_shape(uint64_t addr, size_t len, enum np_watch_type type, char *why,
			 size_t cap);

/* np_maintain: the module table, when watches exist. */
void np_watch_maintain(void);

#endif /* NP_WATCH_H */

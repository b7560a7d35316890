/* SPDX-License-Identifier: MIT */
/* A script's session as the command sees it: the compiled program, the
 * probes it was resolved to, and the memory the agent shares. */
#ifndef NP_SCRIPT_RUNTIME_H
#define NP_SCRIPT_RUNTIME_H
#include <stdbool.h>
#include <stdio.h>

#include "agent/vm_run.h"
#include "compile.h"
#include "symbols/resolve.h"
#include "symbols/symbolize.h"

struct script_rt {
	struct program *prog;
	struct compiled *comp;
	const struct probe_set *set;
	/* by probe id: the resolved probes, then one per program probe that
	 * the command runs itself (BEGIN, END, interval) */
	char **probe_names;
	char **func_names;
	size_t nids;
	/* the session's memory, NULL before it and after */
	struct np_shm_header *shm;
	uint32_t nprobes, nrings, ring_bytes, stride;
	uint8_t *shared;
	size_t shared_bytes;
	/* the command's own thread area: its BEGIN, END and interval blocks,
	 * and the entries of threads that exited, folded in */
	uint8_t *fold;
	struct symbolizer *sym;  /* the first process's mappings */
	/* every process that joined (scripts with stacks): its own */
	struct pid_sym {
		pid_t pid;
		struct symbolizer *sym;
	} *syms;
	size_t nsyms;
	FILE *out;
	bool json;
};

/* maps.c: the rows of a map now, every thread's entries added up. */
struct row {
	const uint8_t *key;
	const uint64_t *words; /* a value map's value, or the aggregate */
	int64_t sortv;         /* what bpftrace sorts the rows by */
};
/* Rows in bpftrace's order; *buf holds them (free it). Returns the count. */
size_t map_rows(const struct script_rt *rt, int map, struct row **rows, void **buf);
/* The thread area of a thread that is gone, into the fold area. */
void map_fold_area(struct script_rt *rt, const uint8_t *area);
/* Every ring's thread area (and the fold area) in turn. */
void map_each_area(const struct script_rt *rt, void (*fn)(const uint8_t *area, void *c), void *c);

/* print.c */
void print_map(struct script_rt *rt, int map, uint64_t top, uint64_t div);
void print_maps(struct script_rt *rt); /* at the end: every map, by name */
/* A record's payload as bpftrace prints each kind. */
void print_record(struct script_rt *rt, unsigned kind, uint32_t id, uint32_t probe,
		  const uint8_t *payload, uint32_t len);
/* A value of type t at p, as text (symbols, stacks, probe names). */
char *value_text(struct script_rt *rt, const struct type *t, const uint8_t *p, int indent);
#endif

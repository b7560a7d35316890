/* SPDX-License-Identifier: MIT */
/*
 * The kernel's uprobes, for `nanoprobe bench` to measure nanoprobe against
 * in the same run: perf_event_open on the uprobe PMU (path + file offset),
 * each event running one counting BPF program, as bpftrace's
 * `uprobe:...{ @c = count(); }` does.
 */
#ifndef NP_CLI_BENCH_KERNEL_H
#define NP_CLI_BENCH_KERNEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct kcount {
	int map_fd, prog_fd; /* the per-CPU counter and the program bumping it */
	int *ev_fds;         /* one perf event per attached (site, task) */
	size_t n_ev, cap;
	int pmu_type, retprobe_bit;
	int multi_prog_fd;   /* the same program for uprobe_multi links; 0: not yet */
	/* a counter per probe (kcount_attach_each): a per-CPU array indexed by
	 * the cookie of each probe of a uprobe_multi link; 0: none */
	int each_map_fd, each_prog_fd;
	unsigned each_n;
	uint64_t missed_base; /* the programs' recursion misses at the last reset */
};

/* Load the counting program. 0, or -errno with why the kernel rows cannot
 * run ("not root", "no uprobe PMU", the verifier's refusal) in why. */
int kcount_open(struct kcount *k, char *why, size_t len);
/* A uprobe (or uretprobe) at `offset` in the file at `path`, counted for
 * the process of task `pid` only (the kernel filters by mm: every thread
 * of it; the event survives exec), so that no other program on the machine
 * pays for it or adds to the count. 0 or -errno with the reason in why. */
int kcount_attach(struct kcount *k, const char *path, uint64_t offset, bool ret, pid_t pid,
		  char *why, size_t len);
/* n uprobes in one file through one BPF uprobe_multi link (pid: a process,
 * 0 for all), the kernel's cheapest way to place and remove many. */
int kcount_attach_multi(struct kcount *k, const char *path, const uint64_t *offsets,
			unsigned n, bool ret, pid_t pid, char *why, size_t len);
/* The same, each probe counted apart: offsets[i]'s hits go to counter
 * slots[i] of nslots (the same nslots for every call until
 * kcount_detach_all), read by kcount_read_each. */
int kcount_attach_each(struct kcount *k, const char *path, const uint64_t *offsets,
		       const uint64_t *slots, unsigned n, bool ret, pid_t pid, unsigned nslots,
		       char *why, size_t len);
/* The nslots counters of kcount_attach_each, over every CPU. 0 or -errno. */
int kcount_read_each(const struct kcount *k, uint64_t *counts);
/* Hits counted so far by every attached event, over every CPU. */
uint64_t kcount_read(const struct kcount *k);
/* Hits the kernel did not run the program for, since the last reset: a
 * BPF program does not run on a CPU where one is already running (the
 * kernel's per-CPU recursion guard), and a uprobe's program can be
 * preempted by another task's hit on the same CPU. */
uint64_t kcount_missed(const struct kcount *k);
/* Remove every probe (close the events), keep the program; counts reset,
 * the per-probe counters of kcount_attach_each gone. */
void kcount_detach_all(struct kcount *k);
void kcount_close(struct kcount *k);

/* The file offset of vaddr in the ELF file at path (program headers). */
int elf_vaddr_to_offset(const char *path, uint64_t vaddr, uint64_t *off);
/* The file and file offset of an address mapped in this process. */
int self_addr_to_file(const void *addr, char *path, size_t len, uint64_t *off);
#endif

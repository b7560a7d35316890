/* SPDX-License-Identifier: MIT */
/*
 * The kernel side of `nanoprobe bench`: a uprobe as the kernel places it
 * for bpftrace or libbpf's bpf_program__attach_uprobe, counted by BPF.
 *
 * The uprobe PMU (/sys/bus/event_source/devices/uprobe) takes the file in
 * config1 and the file offset in config2; the retprobe bit of config makes
 * it a uretprobe. Each event runs one BPF program, written here as eleven
 * raw instructions so that no BPF compiler is needed: look up slot 0 of a
 * per-CPU array and add 1 to it (slot N, N the probe's cookie, when each
 * probe is counted apart: kcount_attach_each). The add is atomic because a uprobe's BPF
 * program runs with migration, not preemption, disabled: two tasks on one
 * CPU could otherwise lose an increment, and the count must equal the calls.
 */
#include "bench_kernel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PMU_DIR "/sys/bus/event_source/devices/uprobe"

static int why_errno(char *why, size_t len, int err, const char *what)
{
	snprintf(why, len, "%s: %s", what, strerror(err));
	return -err;
}

/* "8\n" from type, "config:0\n" from format/retprobe. */
static int read_pmu_number(const char *file, const char *prefix, int *out)
{
	char buf[64] = {0};
	FILE *f = fopen(file, "r");
	if (!f)
		return -errno;
	bool ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	size_t pl = strlen(prefix);
	if (!ok || strncmp(buf, prefix, pl) || sscanf(buf + pl, "%d", out) != 1)
		return -EINVAL;
	return 0;
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), \
					       .off = (o), .imm = (i)})

/* each: the key is the probe's cookie (kcount_attach_each), not 0 */
static int load_counter_prog(int map_fd, unsigned attach_type, bool each, char *why, size_t len)
{
	const struct bpf_insn key0[] = {
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0), /* key = 0 */
	}, key_cookie[] = {
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_attach_cookie), /* r1: ctx */
		INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_0, -4, 0), /* key = it */
	}, count[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4), /* r2 = &key */
		INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
		INSN(0, 0, 0, 0, 0), /* upper half of the 64-bit immediate */
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0), /* NULL: skip */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	struct bpf_insn insns[sizeof(key_cookie) / sizeof(*key_cookie) + sizeof(count) / sizeof(*count)];
	size_t nkey = each ? sizeof(key_cookie) : sizeof(key0);
	memcpy(insns, each ? key_cookie : key0, nkey);
	memcpy((char *)insns + nkey, count, sizeof(count));
	char log[4096] = "";
	LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = log, .log_size = sizeof(log), .log_level = 1,
		    .expected_attach_type = (enum bpf_attach_type)attach_type);
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "np_bench_count", "GPL", insns,
			       (nkey + sizeof(count)) / sizeof(*insns), &o);
	if (fd < 0) {
		char *nl = strchr(log, '\n');
		if (nl)
			*nl = 0;
		snprintf(why, len, "BPF program refused: %s%s%s", strerror(errno), *log ? ": " : "",
			 log);
		return -errno;
	}
	return fd;
}

int kcount_open(struct kcount *k, char *why, size_t len)
{
	*k = (struct kcount){.map_fd = -1, .prog_fd = -1};
	if (geteuid() != 0)
		return why_errno(why, len, EPERM, "kernel uprobes with BPF need root");
	int rc = read_pmu_number(PMU_DIR "/type", "", &k->pmu_type);
	if (!rc)
		rc = read_pmu_number(PMU_DIR "/format/retprobe", "config:", &k->retprobe_bit);
	if (rc)
		return why_errno(why, len, -rc, "no uprobe PMU (" PMU_DIR ")");
	k->map_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "np_bench_hits", 4, 8, 1, NULL);
	if (k->map_fd < 0)
		return why_errno(why, len, errno, "cannot create a BPF map");
	k->prog_fd = load_counter_prog(k->map_fd, 0, false, why, len);
	if (k->prog_fd < 0) {
		rc = k->prog_fd;
		kcount_close(k);
		return rc;
	}
	return 0;
}

static int push_fd(struct kcount *k, int fd)
{
	if (k->n_ev == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		int *p = realloc(k->ev_fds, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->ev_fds = p, k->cap = cap;
	}
	k->ev_fds[k->n_ev++] = fd;
	return 0;
}

int kcount_attach(struct kcount *k, const char *path, uint64_t offset, bool ret, pid_t pid,
		  char *why, size_t len)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = (uint32_t)k->pmu_type,
		.config = ret ? 1ull << k->retprobe_bit : 0,
		.config1 = (uint64_t)(uintptr_t)path, /* uprobe_path */
		.config2 = offset,                    /* probe_offset */
		/* no inherit: with the BPF program set, a probed task's clone()
		 * then fails with EFAULT (seen on 6.18: redis-server could not
		 * start its threads). Only the task itself is counted. */
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return why_errno(why, len, errno, "perf_event_open(uprobe)");
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, k->prog_fd) || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		int err = errno;
		close(fd);
		return why_errno(why, len, err, "attaching the BPF program to the uprobe");
	}
	if (push_fd(k, fd)) {
		close(fd);
		return why_errno(why, len, ENOMEM, "kernel uprobes");
	}
	return 0;
}

uint64_t kcount_read(const struct kcount *k)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0 || k->map_fd < 0)
		return 0;
	uint64_t *v = calloc((size_t)ncpu, sizeof(*v)), sum = 0;
	uint32_t key = 0;
	if (v && !bpf_map_lookup_elem(k->map_fd, &key, v))
		for (int i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

static uint64_t prog_misses(int fd)
{
	struct bpf_prog_info info = {0};
	uint32_t len = sizeof(info);
	return fd > 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.recursion_misses : 0;
}

static uint64_t all_misses(const struct kcount *k)
{
	return prog_misses(k->prog_fd) + prog_misses(k->multi_prog_fd) +
	       prog_misses(k->each_prog_fd);
}

uint64_t kcount_missed(const struct kcount *k)
{
	return all_misses(k) - k->missed_base;
}

void kcount_detach_all(struct kcount *k)
{
	for (size_t i = 0; i < k->n_ev; i++)
		close(k->ev_fds[i]);
	k->n_ev = 0;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *zero = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*zero)) : NULL;
	uint32_t key = 0;
	if (zero && k->map_fd >= 0)
		bpf_map_update_elem(k->map_fd, &key, zero, BPF_ANY);
	free(zero);
	if (k->each_prog_fd > 0)
		close(k->each_prog_fd);
	if (k->each_map_fd > 0)
		close(k->each_map_fd);
	k->each_prog_fd = k->each_map_fd = 0;
	k->each_n = 0;
	k->missed_base = all_misses(k);
}

void kcount_close(struct kcount *k)
{
	kcount_detach_all(k);
	free(k->ev_fds);
	if (k->prog_fd >= 0)
		close(k->prog_fd);
	if (k->multi_prog_fd > 0)
		close(k->multi_prog_fd);
	if (k->map_fd >= 0)
		close(k->map_fd);
	*k = (struct kcount){.map_fd = -1, .prog_fd = -1};
}

/*
 * Many uprobes in one file, as libbpf's bpf_program__attach_uprobe_multi
 * places them (Linux 6.6+): one BPF link, one syscall. The headers of an
 * older distribution may lack the interface, so its numbers and the layout
 * of its part of union bpf_attr are spelled out here from the kernel's
 * include/uapi/linux/bpf.h.
 */
#define NP_BPF_TRACE_UPROBE_MULTI 48
#define NP_BPF_F_UPROBE_MULTI_RETURN 1u

struct uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, link_flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, flags, pid;
};

static int multi_link(struct kcount *k, struct uprobe_multi_attr *a, char *why, size_t len)
{
	int fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, a, sizeof(*a));
	if (fd < 0)
		return why_errno(why, len, errno, "BPF uprobe_multi link (Linux 6.6+)");
	if (push_fd(k, fd)) {
		close(fd);
		return why_errno(why, len, ENOMEM, "kernel uprobes");
	}
	return 0;
}

int kcount_attach_multi(struct kcount *k, const char *path, const uint64_t *offsets,
			unsigned n, bool ret, pid_t pid, char *why, size_t len)
{
	if (k->multi_prog_fd <= 0) {
		int fd = load_counter_prog(k->map_fd, NP_BPF_TRACE_UPROBE_MULTI, false, why, len);
		if (fd < 0)
			return fd;
		k->multi_prog_fd = fd;
	}
	struct uprobe_multi_attr a = {
		.prog_fd = (uint32_t)k->multi_prog_fd, .attach_type = NP_BPF_TRACE_UPROBE_MULTI,
		.path = (uint64_t)(uintptr_t)path, .offsets = (uint64_t)(uintptr_t)offsets,
		.cnt = n, .flags = ret ? NP_BPF_F_UPROBE_MULTI_RETURN : 0, .pid = (uint32_t)pid,
	};
	return multi_link(k, &a, why, len);
}

int kcount_attach_each(struct kcount *k, const char *path, const uint64_t *offsets,
		       const uint64_t *slots, unsigned n, bool ret, pid_t pid, unsigned nslots,
		       char *why, size_t len)
{
	if (k->each_n != nslots) {
		kcount_detach_all(k);
		k->each_map_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "np_bench_each", 4, 8,
						nslots, NULL);
		if (k->each_map_fd < 0)
			return k->each_map_fd = 0, why_errno(why, len, errno, "cannot create a BPF map");
		int fd = load_counter_prog(k->each_map_fd, NP_BPF_TRACE_UPROBE_MULTI, true, why, len);
		if (fd < 0)
			return fd;
		k->each_prog_fd = fd;
		k->each_n = nslots;
	}
	struct uprobe_multi_attr a = {
		.prog_fd = (uint32_t)k->each_prog_fd, .attach_type = NP_BPF_TRACE_UPROBE_MULTI,
		.path = (uint64_t)(uintptr_t)path, .offsets = (uint64_t)(uintptr_t)offsets,
		.cookies = (uint64_t)(uintptr_t)slots, .cnt = n,
		.flags = ret ? NP_BPF_F_UPROBE_MULTI_RETURN : 0, .pid = (uint32_t)pid,
	};
	return multi_link(k, &a, why, len);
}

int kcount_read_each(const struct kcount *k, uint64_t *counts)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;
	int rc = v ? 0 : -ENOMEM;
	for (uint32_t key = 0; !rc && key < k->each_n; key++) {
		counts[key] = 0;
		if (bpf_map_lookup_elem(k->each_map_fd, &key, v))
			rc = -errno;
		for (int i = 0; !rc && i < ncpu; i++)
			counts[key] += v[i];
	}
	free(v);
	return rc;
}

int elf_vaddr_to_offset(const char *path, uint64_t vaddr, uint64_t *off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -ERANGE;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n = 0;
	if (!e || elf_getphdrnum(e, &n))
		rc = -ENOEXEC;
	for (size_t i = 0; rc == -ERANGE && i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			rc = 0;
		}
	}
	elf_end(e);
	close(fd);
	return rc;
}

int self_addr_to_file(const void *addr, char *path, size_t len, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096 + 128];
	uintptr_t a = (uintptr_t)addr;
	int rc = -ENOENT;
	while (f && rc && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		unsigned long long foff;
		int name_at = 0;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %llx %*s %*s %n", &lo, &hi, &foff,
			   &name_at) < 3 || a < lo || a >= hi || !name_at || line[name_at] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(path, len, "%s", line + name_at);
		*off = a - lo + foff;
		rc = 0;
	}
	if (f)
		fclose(f);
	return rc;
}

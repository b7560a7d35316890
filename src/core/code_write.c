/* SPDX-License-Identifier: MIT */
/*
 * Writing code, the program's or ours, and making every core see it.
 *
 * Code pages are never writable through their own mapping (W^X): every
 * write goes through /proc/self/mem, which the kernel lets a process use
 * on its own read-only pages (the write breaks copy-on-write like a
 * debugger's poke). Where /proc/self/mem is not writable
 * (proc_mem.force_override=never), or where the host writes code in
 * place (np_host_patch_in_place), the page is made writable for a moment
 * and the bytes go in with aligned stores. Either way the host's cache
 * maintenance follows (np_host_code_written).
 *
 * A write is seen by other cores only once they serialise:
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) makes every core
 * running one of our threads execute a core-serialising instruction
 * before the call returns. Without it (old kernels) an mprotect() of a
 * page we own forces the TLB-shootdown IPI that has the same effect on the
 * cores that run our threads. The protocols that decide what is written
 * when (region_write.c, word_write.c, batch.c) call these steps in order;
 * this file knows nothing of regions or threads.
 */
#include "core/code_write.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/maps.h"
#include "host/host.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool have_sync_core, have_expedited;
static void *ipi_page;
static int mem_fd = -1;

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* --- serialising ----------------------------------------------------------- */

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

/* Touch-then-mprotect: the TLB shootdown interrupts every core that runs
 * this mm, and interrupt return serialises. */
static void ipi_fallback(void)
{
	*(volatile char *)ipi_page = 1;
	mprotect(ipi_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ);
	mprotect(ipi_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
}

void np_sync_cores(void)
{
	if (!have_sync_core || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		ipi_fallback();
}

void np_barrier_threads(void)
{
	if (!have_expedited || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		ipi_fallback();
}

/*
 * The expedited membarriers are registered for once per process. That is
 * cheap while the process has one thread; with more, the kernel waits for
 * an RCU grace period per command before it returns (synchronize_rcu in
 * sync_runqueues_membarrier_state): 10 to 16 ms each on a busy 2-vCPU VM,
 * most of what a traced process waited for at its start once its scan came
 * from the cache (bench/membarrier_register.c). So the preloaded agent's
 * constructor registers while the program's thread is still the only one,
 * before it starts its own (np_engine_preinit), and np_code_write_init
 * finds it done. It runs on the program's thread: raw system calls, no
 * allocation, errno kept. Once.
 */
void np_code_write_register(void)
{
	static int done;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	int saved = errno;
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);
	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		have_sync_core =
			membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		have_expedited = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
	errno = saved;
}

int np_code_write_init(void)
{
	ipi_page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ipi_page == MAP_FAILED)
		return -errno;
	np_code_write_register();
	if (!have_sync_core)
		np_logf(NP_LOG_INFO, "membarrier SYNC_CORE unavailable: using mprotect IPIs");
	return 0;
}

/* --- the write ---------------------------------------------------------------- */

/* The descriptor names the process that opened it: a forked child that
 * used its parent's would patch (or restore) its parent's code. The child
 * gets its own under the same number, which an operation of the forking
 * thread going on in the child may hold (fork.c); else a new one when it
 * next writes. */
void np_code_after_fork(void)
{
	if (mem_fd < 0)
		return;
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd >= 0 && dup3(fd, mem_fd, O_CLOEXEC) == mem_fd) {
		close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	close(mem_fd);
	mem_fd = -1;
}

static int open_mem(void)
{
	if (mem_fd < 0)
		mem_fd = np_fd_move_high(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
	return mem_fd;
}

/* Whole aligned words go in one store each: a `b` or `brk` replacing a
 * word while other threads run must be single-copy atomic (docs/arm64.md);
 * so must riscv64's 16-bit c.ebreak and its parcels (docs/riscv64.md). */
static void store_code(uint64_t addr, const void *src, size_t len)
{
	const uint8_t *s = src;
	for (size_t i = 0; i < len;) {
		uint64_t at = addr + i;
		if (at % 4 == 0 && len - i >= 4) {
			uint32_t w;
			memcpy(&w, s + i, sizeof(w));
			__atomic_store_n((uint32_t *)at, w, __ATOMIC_RELAXED);
			i += 4;
		} else if (at % 2 == 0 && len - i >= 2) {
			uint16_t h;
			memcpy(&h, s + i, sizeof(h));
			__atomic_store_n((uint16_t *)at, h, __ATOMIC_RELAXED);
			i += 2;
		} else {
			*(volatile uint8_t *)at = s[i];
			i++;
		}
	}
}

static int write_mprotect(uint64_t addr, const void *src, size_t len)
{
	struct np_map m;
	uint64_t pg = page_size(), lo = addr & ~(pg - 1), hi = (addr + len + pg - 1) & ~(pg - 1);
	int err = np_maps_lookup(addr, &m);
	if (err)
		return err;
	int prot = (m.r ? PROT_READ : 0) | (m.w ? PROT_WRITE : 0) | (m.x ? PROT_EXEC : 0);
	prot |= m.x ? np_host_code_prot(addr) : 0; /* a guarded page stays guarded */
	if (mprotect((void *)lo, hi - lo, prot | PROT_WRITE))
		return -errno;
	store_code(addr, src, len);
	if (mprotect((void *)lo, hi - lo, prot))
		return -errno;
	return 0;
}

int np_code_write_now(uint64_t addr, const void *src, size_t len)
{
	int fd = np_host_patch_in_place() ? -1 : open_mem();
	int err = 0;
	if (fd < 0 || pwrite(fd, src, len, (off_t)addr) != (ssize_t)len)
		err = write_mprotect(addr, src, len);
	if (!err)
		np_host_code_written(addr, len);
	return err;
}

/* Readable code is copied directly, fault-safe (uread.c): no system call.
 * Execute-only pages are read through /proc/self/mem. */
int np_code_read(uint64_t addr, void *dst, size_t len)
{
	int saved = errno;
	if (np_read_user(dst, addr, len) == 0)
		return 0;
	errno = saved;
	int fd = open_mem();
	if (fd >= 0 && pread(fd, dst, len, (off_t)addr) == (ssize_t)len)
		return 0;
	return -EFAULT;
}

/* SPDX-License-Identifier: MIT */
/*
 * Loading the agent into a process that never heard of us: making it call
 * dlopen(agent) and then agent_start(arg), as gdb's `call`, linux-inject
 * and Frida's injector do.
 *
 * We seize the main thread (PTRACE_SEIZE then PTRACE_INTERRUPT: unlike
 * PTRACE_ATTACH this sends no SIGSTOP that could leak into the program) and
 * save its registers: the general ones and the whole XSAVE area, since
 * dlopen's memcpy and strlen use the vector registers. Other threads keep
 * running; to them the main thread looks busy for a moment.
 *
 * A remote call points the thread's pc at the function and its argument
 * registers at strings we copy below its stack pointer, beyond the red zone
 * the interrupted code may still use. The return address is 0, so the call
 * ends in a SIGSEGV at pc 0 that only we, the tracer, see. We write no code
 * into the process and change no page's protection.
 *
 * The thread may have been stopped inside a system call (nanosleep, read).
 * The kernel then keeps the call's restart state in the registers (x86:
 * rax = -ERESTARTSYS, orig_rax = the syscall number). Our calls run with
 * orig_rax = -1 so that the kernel does not "restart" a syscall at our pc;
 * at the end every register is put back as it was, and when the thread
 * resumes the kernel restarts its syscall as if it had never stopped.
 * Two things the restart does not undo are undone here (see "The
 * interrupted system call" below): a sleep writes its remaining time at
 * the interruption, and a few waits (epoll_wait, sigtimedwait) fail with
 * EINTR instead of restarting.
 *
 * Signals that arrive while we hold the thread are held back and given back
 * at detach. Faults raised by the code we call go to the program's own
 * handler if it has one (nanoprobe's int3 probes raise SIGTRAP); without
 * one they end the call as a crash, and the process goes on unharmed.
 *
 * dlopen lives in libc (glibc >= 2.34, musl), in libdl (older glibc), or as
 * __libc_dlopen_mode in older libc: we read the .dynsym of the mapped file
 * and add the load bias found in /proc/PID/maps. A statically linked
 * program has no dynamic loader and cannot be injected this way.
 *
 * Limits: a call cannot finish if it needs a lock the process holds and
 * keeps (the loader's, or malloc's when the thread was stopped inside
 * malloc). After a few seconds we stop the call where it is, put the
 * registers back and detach, but what the abandoned call had done, such as
 * a lock it took, stays behind.
 */
#include "inject.h"
#include "masks.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "isa.h" /* after the system headers its parts use */

#define N_EXT           (sizeof(isa_ext_regsets) / sizeof(isa_ext_regsets[0]))
#define EXT_MAX         (64 * 1024) /* XSAVE with AMX is ~11 KiB */
#define STOP_TIMEOUT_MS 5000
#define CALL_TIMEOUT_MS 5000
#define MAX_DEFERRED    32
#define STATUS_MAX      8192
/* ptrace() is variadic and reads addr and data as pointers: widen integers. */
#define PT_ARG(x) ((void *)(uintptr_t)(x))

struct blocked_call {
	long nr;
	uint64_t arg[6];
};

struct target {
	pid_t pid;
	char *err;
	size_t errlen;
	bool failed;         /* err holds the first failure */
	bool attached, gone; /* seized; exited or killed */
	bool regs_saved, in_call;
	bool at_signal_stop; /* a signal-delivery-stop: detach can deliver one signal */
	bool mask_changed;   /* faults unblocked for our calls; sigmask to put back */
	uint64_t sigmask;
	uint64_t call_top;   /* the stack top of the call under way */
	isa_regs saved;
	struct iovec ext[N_EXT]; /* saved; iov_len 0 if the kernel lacks the set */
	siginfo_t deferred[MAX_DEFERRED];
	int ndeferred;
	/* the system call we interrupted (nr < 0: none), and the bytes a
	 * sleep wrote its remaining time over (rem_at 0: none) */
	struct blocked_call call;
	uint64_t rem_at;
	uint8_t rem[16];
};

/* The addresses in the target of the loader's entry points. */
struct dl_funcs {
	uint64_t dlopen, dlerror;
};

/* One file mapping of /proc/PID/maps. */
struct rmap {
	uint64_t start, end, off, ino;
	unsigned maj, min;
	char path[PATH_MAX];
};

/* A mapped ELF file and its load bias (runtime address - ELF vaddr). */
struct module {
	int fd;
	Elf *elf;
	uint64_t bias;
};

enum stop_kind { STOP_EVENT, STOP_RETURN, STOP_FAULT, STOP_SIGNAL };

/* Records the first failure only: later ones are its consequences. */
__attribute__((format(printf, 3, 4))) static int fail(struct target *t, int err, const char *fmt,
						      ...)
{
	va_list ap;

	if (t->failed)
		return err;
	t->failed = true;
	if (t->err && t->errlen) {
		va_start(ap, fmt);
		vsnprintf(t->err, t->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- /proc ------------------------------------------------------------ */

static int read_status(pid_t pid, char *buf, size_t len)
{
	char p[64];
	ssize_t n;
	int fd, e;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return 0;
}

/* The value of the line "key:\tvalue" of a status text, or NULL. */
static const char *status_field(const char *st, const char *key)
{
	size_t n = strlen(key);

	for (const char *l = st; *l; l++) {
		if (!strncmp(l, key, n) && l[n] == ':')
			return l + n + 1 + strspn(l + n + 1, " \t");
		l = strchr(l, '\n');
		if (!l)
			break;
	}
	return NULL;
}

static long status_long(const char *st, const char *key)
{
	const char *v = status_field(st, key);

	return v ? strtol(v, NULL, 10) : -1;
}

/* Whether the process has a handler for sig (SigCgt is shared by its threads). */
static bool catches(pid_t pid, int sig)
{
	char st[STATUS_MAX];
	const char *v;

	if (read_status(pid, st, sizeof(st)) || !(v = status_field(st, "SigCgt")))
		return false;
	return strtoull(v, NULL, 16) >> (sig - 1) & 1;
}

static int check_process(struct target *t)
{
	char st[STATUS_MAX];
	const char *state;
	int r = read_status(t->pid, st, sizeof(st));

	if (r == -ENOENT || r == -ESRCH)
		return fail(t, -ESRCH, "process %d not found", t->pid);
	if (r)
		return fail(t, r, "cannot read /proc/%d/status: %s", t->pid, strerror(-r));
	state = status_field(st, "State");
	if (state && (*state == 'Z' || *state == 'X') && status_long(st, "Threads") > 1)
		return fail(t, -ESRCH, "the main thread of process %d has exited", t->pid);
	if (state && (*state == 'Z' || *state == 'X'))
		return fail(t, -ESRCH, "process %d is a zombie", t->pid);
	return 0;
}

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Why PTRACE_SEIZE failed with EPERM, as far as /proc can tell. */
static void eperm_reason(pid_t pid, char *buf, size_t len)
{
	static const char *const scope[] = {
		[1] = "ptrace_scope is 1: only a parent may attach; run as root or set "
		      "/proc/sys/kernel/yama/ptrace_scope to 0",
		[2] = "ptrace_scope is 2: only root (CAP_SYS_PTRACE) may attach",
		[3] = "ptrace_scope is 3: attaching is disabled until reboot",
	};
	char st[STATUS_MAX] = "";
	unsigned uid[3] = {0, 0, 0};
	const char *u;
	int sc = yama_scope();

	read_status(pid, st, sizeof(st));
	u = status_field(st, "Uid");
	if (u)
		sscanf(u, "%u %u %u", &uid[0], &uid[1], &uid[2]);
	if (status_long(st, "TracerPid") > 0)
		snprintf(buf, len, "already traced by process %ld", status_long(st, "TracerPid"));
	else if (sc == 3 || (sc == 2 && geteuid() != 0))
		snprintf(buf, len, "%s", scope[sc]);
	else if (u && geteuid() != 0 && (uid[0] != geteuid() || uid[1] != geteuid() ||
					 uid[2] != geteuid()))
		snprintf(buf, len, "it belongs to uid %u, you are uid %u", uid[1], geteuid());
	else if (sc == 1 && geteuid() != 0)
		snprintf(buf, len, "%s", scope[1]);
	else
		snprintf(buf, len, "it may be non-dumpable: setuid, or prctl(PR_SET_DUMPABLE, 0)");
}

/* The next file mapping of a maps file (anonymous ones skipped): 1, or 0 at the end. */
static int next_map(FILE *f, struct rmap *m)
{
	char line[PATH_MAX + 128];
	int pos;

	while (fgets(line, sizeof(line), f)) {
		pos = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &m->start, &m->end, &m->off, &m->maj, &m->min, &m->ino, &pos) < 6 ||
		    line[pos] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(m->path, sizeof(m->path), "%s", line + pos);
		return 1;
	}
	return 0;
}

static FILE *open_maps(struct target *t)
{
	char p[64];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", t->pid);
	f = fopen(p, "re");
	if (!f)
		fail(t, -errno, "cannot read %s: %s", p, strerror(errno));
	return f;
}

/* ---- ELF files as the target maps them ---------------------------------- */

/*
 * The file behind a mapping, as the target sees it: map_files also opens
 * deleted files but wants CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE;
 * /proc/PID/root/PATH resolves PATH in the target's mount namespace.
 */
static int open_mapped(pid_t pid, const struct rmap *m)
{
	char p[PATH_MAX + 64];
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, m->path);
	return open(p, O_RDONLY | O_CLOEXEC);
}

/* The page of the first PT_LOAD: the mapping at file offset 0 starts there. */
static int first_load_page(Elf *e, uint64_t *vaddr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & ~(page - 1);
			return 0;
		}
	}
	return -ENOEXEC;
}

/* m is the file's mapping at offset 0. */
static int module_open(pid_t pid, const struct rmap *m, struct module *mod)
{
	uint64_t vaddr;

	mod->fd = open_mapped(pid, m);
	if (mod->fd < 0)
		return -errno;
	mod->elf = elf_begin(mod->fd, ELF_C_READ_MMAP, NULL);
	if (!mod->elf || elf_kind(mod->elf) != ELF_K_ELF || first_load_page(mod->elf, &vaddr)) {
		elf_end(mod->elf);
		close(mod->fd);
		return -ENOEXEC;
	}
	mod->bias = m->start - vaddr;
	return 0;
}

static void module_close(struct module *mod)
{
	elf_end(mod->elf);
	close(mod->fd);
}

/* The runtime address of the function `name` that the module exports, or 0. */
static uint64_t module_sym(struct module *mod, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym s;

	while ((scn = elf_nextscn(mod->elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !d || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *nm;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			nm = elf_strptr(mod->elf, sh.sh_link, s.st_name);
			if (nm && !strcmp(nm, name))
				return mod->bias + s.st_value;
		}
	}
	return 0;
}

/* ---- Stopping, waiting, resuming --------------------------------------- */

static int stopped_or_gone(struct target *t, int status, const char *what)
{
	if (WIFSTOPPED(status)) {
		t->at_signal_stop = status >> 16 == 0;
		return 0;
	}
	t->gone = true;
	if (WIFEXITED(status))
		return fail(t, -ESRCH, "process %d exited with status %d during %s", t->pid,
			    WEXITSTATUS(status), what);
	return fail(t, -ESRCH, "process %d was killed by signal %d (%s) during %s", t->pid,
		    WTERMSIG(status), strsignal(WTERMSIG(status)), what);
}

/*
 * The next stop (or death) of the thread, -ETIMEDOUT at the deadline.
 * waitpid cannot time out, and a signal or a helper thread to interrupt it
 * would disturb the program that embeds us; so we poll, backing off from
 * 50 us to 5 ms: a stop is seen within 5 ms, a long wait costs 200 wakeups/s.
 */
static int wait_stop(struct target *t, int64_t deadline, int *status, const char *what)
{
	struct timespec pause = {0, 50 * 1000};

	for (;;) {
		pid_t r = waitpid(t->pid, status, __WALL | WNOHANG);

		if (r == t->pid)
			return stopped_or_gone(t, *status, what);
		if (r < 0 && errno != EINTR)
			return fail(t, -errno, "cannot wait for process %d: %s", t->pid,
				    strerror(errno));
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 5 * 1000 * 1000)
			pause.tv_nsec *= 2;
	}
}

static int get_regs(struct target *t, isa_regs *r)
{
	struct iovec io = {r, sizeof(*r)};

	if (ptrace(PTRACE_GETREGSET, t->pid, PT_ARG(NT_PRSTATUS), &io) == 0)
		return 0;
	return fail(t, -errno, "cannot read the registers of process %d: %s", t->pid,
		    strerror(errno));
}

static int set_regs(struct target *t, const isa_regs *r)
{
	struct iovec io = {(void *)r, sizeof(*r)};

	if (ptrace(PTRACE_SETREGSET, t->pid, PT_ARG(NT_PRSTATUS), &io) == 0)
		return 0;
	return fail(t, -errno, "cannot set the registers of process %d: %s", t->pid,
		    strerror(errno));
}

static int resume(struct target *t, int sig)
{
	if (ptrace(PTRACE_CONT, t->pid, NULL, PT_ARG(sig)) == 0)
		return 0;
	return fail(t, -errno, "cannot resume process %d: %s", t->pid, strerror(errno));
}

static bool is_fault(const siginfo_t *si)
{
	switch (si->si_signo) {
	case SIGSEGV:
	case SIGBUS:
	case SIGILL:
	case SIGFPE:
	case SIGTRAP:
		return si->si_code > 0; /* raised by the CPU, not sent by kill or tgkill */
	}
	return false;
}

/* A call is over when its `ret` to 0 faults, the stack back at the frame top. */
static int classify(struct target *t, int status, siginfo_t *si)
{
	isa_regs r;

	if (status >> 16 == PTRACE_EVENT_STOP)
		return STOP_EVENT;
	if (ptrace(PTRACE_GETSIGINFO, t->pid, NULL, si))
		return fail(t, -errno, "cannot read the signal of process %d: %s", t->pid,
			    strerror(errno));
	if (t->in_call && si->si_signo == SIGSEGV && get_regs(t, &r) == 0 && isa_pc(&r) == 0 &&
	    isa_sp(&r) == t->call_top)
		return STOP_RETURN;
	return is_fault(si) ? STOP_FAULT : STOP_SIGNAL;
}

/*
 * The engine's request to a thread to say where it is (src/core/stop.c),
 * sent by the agent's own threads while we hold the thread: the engine an
 * earlier session loaded, placing or removing code. It is dropped, never
 * delivered. Delivered inside our call, its handler's sigreturn would
 * clear the kernel's restart state of the sleep we interrupted (the
 * restarted nanosleep then fails with EINTR); held back to the detach, it
 * would meet that sleep's restart and the kernel would turn it into EINTR
 * for a handler (signal(7)). The engine needs no answer from this thread:
 * one that does not answer is judged from /proc once it waits in a system
 * call (stop.c, left_since), as it does in our calls or once resumed.
 */
static bool engine_stop(const struct target *t, const siginfo_t *si)
{
	return si->si_code == SI_TKILL && si->si_pid == t->pid &&
	       si->si_signo == np_masks_engine_signal();
}

/* Held back until detach, so that no handler of the program runs inside our call. */
static void defer(struct target *t, const siginfo_t *si)
{
	if (t->ndeferred < MAX_DEFERRED)
		t->deferred[t->ndeferred++] = *si;
}

static int crashed(struct target *t, const siginfo_t *si, const char *what)
{
	isa_regs r = {0};

	get_regs(t, &r);
	return fail(t, -EFAULT,
		    "%s crashed in process %d: %s at address %p (pc 0x%" PRIx64
		    "); call abandoned, process left running",
		    what, t->pid, strsignal(si->si_signo), si->si_addr, (uint64_t)isa_pc(&r));
}

/*
 * The next stop the caller must see: an event stop, the end of a call, or a
 * signal now held back. A fault is passed on to the program's own handler
 * (STOP_FAULT, the thread running again); outside a call also when there is
 * none, since the program would die of it anyway; inside one it is a crash.
 */
static int next_stop(struct target *t, int64_t deadline, const char *what)
{
	siginfo_t si;
	int status, kind, r;

	r = wait_stop(t, deadline, &status, what);
	if (r)
		return r;
	kind = classify(t, status, &si);
	if (kind == STOP_SIGNAL && engine_stop(t, &si)) {
		r = resume(t, 0);
		return r ? r : STOP_FAULT;
	}
	if (kind == STOP_SIGNAL)
		defer(t, &si);
	if (kind != STOP_FAULT)
		return kind;
	if (t->in_call && !catches(t->pid, si.si_signo))
		return crashed(t, &si, what);
	r = resume(t, si.si_signo);
	return r ? r : STOP_FAULT;
}

/*
 * Stop the running thread where it is. Any stop consumes the interrupt, so
 * after passing on a fault we ask again.
 */
static int stop_now(struct target *t, const char *what)
{
	int64_t deadline = now_ms() + STOP_TIMEOUT_MS;
	int kind = STOP_FAULT;

	while (kind == STOP_FAULT) {
		if (ptrace(PTRACE_INTERRUPT, t->pid, NULL, NULL))
			return fail(t, -errno, "cannot interrupt process %d: %s", t->pid,
				    strerror(errno));
		kind = next_stop(t, deadline, what);
	}
	if (kind == -ETIMEDOUT)
		return fail(t, -ETIMEDOUT, "process %d did not stop within %d s during %s", t->pid,
			    STOP_TIMEOUT_MS / 1000, what);
	return kind;
}

/* ---- The interrupted system call ----------------------------------------- */

/*
 * Stopping a thread that waits in a system call interrupts the call. When
 * the thread resumes with its registers as they were, the kernel restarts
 * most calls as if nothing had happened (read, poll, futex, select, pause,
 * and a sleep through restart_syscall), but not everything:
 * - nanosleep and a relative clock_nanosleep write the time left into
 *   their `rem` argument at the interruption (the kernel's do_nanosleep),
 *   though the call goes on and returns 0: those bytes are read before
 *   the thread is stopped and written back before it resumes;
 * - epoll_wait, epoll_pwait(2), sigtimedwait, semtimedop and
 *   io_(p)getevents return EINTR after any stop, with or without a handler
 *   (signal(7)), and none of them has done anything then: the call is
 *   issued again with its arguments (a timeout starts over).
 * A thread that enters its sleep between our look and the stop is not
 * seen: its `rem` is written.
 */

/* The call the thread is in, blocked or stopped at its end, with its
 * original arguments ("nr a1..a6 sp pc" in /proc), else nr -1. */
static struct blocked_call current_call(pid_t pid)
{
	char p[64], line[256], *got;
	struct blocked_call c = {.nr = -1};
	uint64_t v[9];
	int n = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/syscall", (int)pid, (int)pid);
	f = fopen(p, "re");
	if (!f)
		return c;
	got = fgets(line, sizeof(line), f);
	fclose(f);
	for (char *at = got, *next; at && n < 9; at = next, n++) {
		v[n] = n ? strtoull(at, &next, 16) : (uint64_t)strtoll(at, &next, 10);
		if (next == at)
			break;
	}
	if (n == 9) {
		c.nr = (long)v[0];
		memcpy(c.arg, v + 1, sizeof(c.arg));
	}
	return c;
}

static bool user_pointer(uint64_t a)
{
	return a >= 4096;
}

/* Where the call will write the time left when interrupted, or 0. A
 * restart_syscall is a sleep the kernel restarted after an earlier stop
 * (a debugger, an earlier session): its registers are still the first
 * call's, told apart by their shape (a clock id and flags, or two
 * pointers; poll's and futex's restarts have neither). */
static uint64_t rem_of(const struct blocked_call *c)
{
	bool clock = c->arg[0] < 64 && c->arg[1] <= TIMER_ABSTIME && user_pointer(c->arg[2]);
	bool plain = user_pointer(c->arg[0]) && user_pointer(c->arg[1]);

	if (c->nr == SYS_restart_syscall)
		return clock ? (c->arg[1] & TIMER_ABSTIME ? 0 : c->arg[3]) : plain ? c->arg[1] : 0;
	if (c->nr == SYS_nanosleep)
		return c->arg[1];
	if (c->nr == SYS_clock_nanosleep)
		return c->arg[1] & TIMER_ABSTIME ? 0 : c->arg[3];
	return 0;
}

/* Calls that fail with EINTR after a stop, having done nothing. */
static bool fails_on_stop(long nr)
{
	static const long nrs[] = {
#ifdef SYS_epoll_wait
		SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait2
		SYS_epoll_pwait2,
#endif
#ifdef SYS_semop
		SYS_semop,
#endif
#ifdef SYS_io_pgetevents
		SYS_io_pgetevents,
#endif
		SYS_epoll_pwait, SYS_rt_sigtimedwait, SYS_semtimedop, SYS_io_getevents,
	};

	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		if (nr == nrs[i])
			return true;
	return false;
}

/* Before the stop: the bytes the sleep the thread is in would overwrite. */
static void keep_rem(struct target *t, const struct blocked_call *before)
{
	uint64_t at = rem_of(before);
	struct iovec local = {t->rem, sizeof(t->rem)}, remote = {(void *)at, sizeof(t->rem)};

	t->rem_at = 0;
	if (at && process_vm_readv(t->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(t->rem))
		t->rem_at = at;
}

/* Stopped: the call we interrupted, if it is the one seen before. */
static void note_call(struct target *t, const struct blocked_call *before)
{
	t->call = current_call(t->pid);
	if (t->call.nr != before->nr || memcmp(t->call.arg, before->arg, sizeof(t->call.arg)))
		t->rem_at = 0;
}

/* The registers to resume with: a call that failed because we stopped it
 * issued again. */
static void undo_eintr(struct target *t)
{
	if (t->call.nr >= 0 && fails_on_stop(t->call.nr) &&
	    (int64_t)isa_result(&t->saved) == -EINTR)
		isa_reissue(&t->saved, t->call.nr, t->call.arg[0]);
}

/* After the registers: the sleep's remaining time as it was. */
static void give_back_rem(struct target *t)
{
	struct iovec local = {t->rem, sizeof(t->rem)}, remote = {(void *)t->rem_at, sizeof(t->rem)};

	if (t->rem_at && process_vm_writev(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(t->rem))
		fail(t, -EFAULT, "cannot put back the time left of the sleep of process %d",
		     t->pid);
}

/* ---- Attach and detach -------------------------------------------------- */

static int save_ext(struct target *t)
{
	for (size_t i = 0; i < N_EXT; i++) {
		struct iovec io = {malloc(EXT_MAX), EXT_MAX};
		long r;

		t->ext[i].iov_base = io.iov_base; /* iov_len stays 0 until saved */
		if (!io.iov_base)
			return fail(t, -ENOMEM, "out of memory");
		r = ptrace(PTRACE_GETREGSET, t->pid, PT_ARG(isa_ext_regsets[i]), &io);
		if (r && (errno == EINVAL || errno == ENODEV))
			continue; /* this CPU or kernel has no such set */
		if (r || io.iov_len == EXT_MAX)
			return fail(t, -EIO, "cannot save register set %#x of process %d",
				    isa_ext_regsets[i], t->pid);
		t->ext[i].iov_len = io.iov_len;
	}
	return 0;
}

/* A 32-bit process gives a shorter NT_PRSTATUS: that is how we tell. */
static int save_regs(struct target *t)
{
	struct iovec io = {&t->saved, sizeof(t->saved)};

	if (ptrace(PTRACE_GETREGSET, t->pid, PT_ARG(NT_PRSTATUS), &io))
		return fail(t, -errno, "cannot read the registers of process %d: %s", t->pid,
			    strerror(errno));
	if (io.iov_len != sizeof(t->saved))
		return fail(t, -ENOEXEC,
			    "process %d is not a 64-bit %s process (%zu bytes of registers, not "
			    "%zu)",
			    t->pid, ISA_NAME, io.iov_len, sizeof(t->saved));
	t->regs_saved = true;
	return save_ext(t);
}

/*
 * The thread's faults unblocked while it runs our calls. A fault in a
 * thread that blocks its signal is forced on by the kernel, which first
 * resets the signal's handler to SIG_DFL for the whole process: a
 * breakpoint of a live nanoprobe session met in dlopen (the thread may be
 * anywhere, inside a signal handler with a full mask too) would cost the
 * program its SIGTRAP handler, and its life at the next breakpoint. The
 * mask is put back at detach.
 */
#define FAULT_SIGS                                                                                 \
	(1ull << (SIGTRAP - 1) | 1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1) |                   \
	 1ull << (SIGILL - 1) | 1ull << (SIGFPE - 1))

static int unmask_faults(struct target *t)
{
	uint64_t open;

	if (ptrace(PTRACE_GETSIGMASK, t->pid, PT_ARG(sizeof(t->sigmask)), &t->sigmask))
		return fail(t, -errno, "cannot read the signal mask of process %d: %s", t->pid,
			    strerror(errno));
	if (!(t->sigmask & FAULT_SIGS))
		return 0;
	open = t->sigmask & ~FAULT_SIGS;
	if (ptrace(PTRACE_SETSIGMASK, t->pid, PT_ARG(sizeof(open)), &open))
		return fail(t, -errno, "cannot set the signal mask of process %d: %s", t->pid,
			    strerror(errno));
	t->mask_changed = true;
	return 0;
}

static int restore_mask(struct target *t)
{
	if (!t->mask_changed ||
	    !ptrace(PTRACE_SETSIGMASK, t->pid, PT_ARG(sizeof(t->sigmask)), &t->sigmask))
		return 0;
	return fail(t, -errno, "cannot restore the signal mask of process %d: %s", t->pid,
		    strerror(errno));
}

static int attach(struct target *t)
{
	char why[256];
	int e, r;

	if (ptrace(PTRACE_SEIZE, t->pid, NULL, NULL) == 0) {
		struct blocked_call before = current_call(t->pid);

		t->attached = true;
		keep_rem(t, &before);
		r = stop_now(t, "the attach");
		if (r >= 0)
			note_call(t, &before);
		if (r >= 0)
			r = save_regs(t);
		return r < 0 ? r : unmask_faults(t);
	}
	e = errno;
	if (e == ESRCH)
		return fail(t, -ESRCH, "process %d not found", t->pid);
	if (e != EPERM)
		return fail(t, -e, "cannot attach to process %d: %s", t->pid, strerror(e));
	eperm_reason(t->pid, why, sizeof(why));
	return fail(t, -EPERM, "cannot attach to process %d: %s (%s)", t->pid, strerror(e), why);
}

static int restore_regs(struct target *t)
{
	for (size_t i = 0; i < N_EXT; i++) {
		if (t->ext[i].iov_len &&
		    ptrace(PTRACE_SETREGSET, t->pid, PT_ARG(isa_ext_regsets[i]), &t->ext[i]))
			return fail(t, -errno, "cannot restore register set %#x of process %d: %s",
				    isa_ext_regsets[i], t->pid, strerror(errno));
	}
	return set_regs(t, &t->saved);
}

/*
 * Signals held back: at a signal-delivery-stop the detach itself delivers
 * the first with its original siginfo; the others are sent again, which
 * keeps the signal but not who sent it.
 */
static int give_back_signals(struct target *t)
{
	int sig = 0;

	for (int i = 0; i < t->ndeferred; i++) {
		const siginfo_t *si = &t->deferred[i];

		if (i == 0 && t->at_signal_stop &&
		    ptrace(PTRACE_SETSIGINFO, t->pid, NULL, (void *)si) == 0)
			sig = si->si_signo;
		else
			tgkill(t->pid, t->pid, si->si_signo);
	}
	return sig;
}

/* Put every register back, give back held signals, let the thread go. */
static int detach(struct target *t)
{
	int r = 0, sig;

	if (!t->attached || t->gone)
		return 0;
	if (t->regs_saved) {
		undo_eintr(t);
		r = restore_regs(t);
		give_back_rem(t);
	}
	if (restore_mask(t) && !r)
		r = -EIO;
	sig = give_back_signals(t);
	if (ptrace(PTRACE_DETACH, t->pid, NULL, PT_ARG(sig)) && errno != ESRCH)
		r = fail(t, -errno, "cannot detach from process %d: %s", t->pid, strerror(errno));
	return r;
}

/* ---- Remote calls ------------------------------------------------------- */

static int remote_write(struct target *t, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = {(void *)buf, len}, remote = {(void *)addr, len};

	if (process_vm_writev(t->pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
		return 0;
	return fail(t, -EFAULT, "cannot write to the stack of process %d at 0x%" PRIx64 ": %s",
		    t->pid, addr, strerror(errno));
}

/* The C string at addr; reads stop at page ends, where the string may end too. */
static void remote_string(struct target *t, uint64_t addr, char *buf, size_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t got = 0;

	buf[0] = 0;
	while (got + 1 < len && strlen(buf) == got) {
		uint64_t at = addr + got;
		size_t want = page - at % page < len - 1 - got ? page - at % page : len - 1 - got;
		struct iovec local = {buf + got, want}, remote = {(void *)at, want};
		ssize_t n = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = 0;
	}
}

/* Stop the call where it is; it may return just then, and be done after all. */
static int call_timed_out(struct target *t, const char *what)
{
	int kind = stop_now(t, what);

	if (kind < 0 || kind == STOP_RETURN)
		return kind < 0 ? kind : 0;
	return fail(t, -ETIMEDOUT,
		    "%s did not return within %d s in process %d (does it wait for a lock the "
		    "process holds, the loader's or malloc's?); call abandoned, registers restored",
		    what, CALL_TIMEOUT_MS / 1000, t->pid);
}

/* Wait for the call to return, holding back or passing on what else happens. */
static int await_return(struct target *t, const char *what)
{
	int64_t deadline = now_ms() + CALL_TIMEOUT_MS;
	int kind, r;

	for (;;) {
		kind = next_stop(t, deadline, what);
		if (kind == -ETIMEDOUT)
			return call_timed_out(t, what);
		if (kind < 0)
			return kind;
		if (kind == STOP_RETURN)
			return 0;
		if (kind != STOP_FAULT && (r = resume(t, 0)))
			return r;
	}
}

/*
 * fn(args) in the stopped thread with its stack top at `top`. Every call
 * starts from the saved registers, so nothing of one leaks into the next.
 */
static int remote_call(struct target *t, const char *what, uint64_t fn, const uint64_t *args,
		       int n, uint64_t top, uint64_t *ret)
{
	isa_regs r = t->saved;
	uint64_t zero = 0;
	int err;

	isa_set_call(&r, fn, args, n, top);
	err = remote_write(t, top - 8, &zero, sizeof(zero));
	if (!err)
		err = set_regs(t, &r);
	if (err)
		return err;
	t->in_call = true;
	t->call_top = top;
	err = resume(t, 0);
	if (!err)
		err = await_return(t, what);
	t->in_call = false;
	if (!err)
		err = get_regs(t, &r);
	if (!err)
		*ret = isa_result(&r);
	return err;
}

/*
 * fn(s, a1), fn(s) or fn() for n = 2, 1, 0: s is copied below the red zone
 * and the call's frame goes below it.
 */
static int call_str(struct target *t, const char *what, uint64_t fn, const char *s, uint64_t a1,
		    int n, uint64_t *ret)
{
	uint64_t sp = isa_sp(&t->saved) - ISA_RED_ZONE, args[2] = {0, a1};
	int err;

	if (n > 0 && s) {
		sp -= strlen(s) + 1;
		err = remote_write(t, sp, s, strlen(s) + 1);
		if (err)
			return err;
		args[0] = sp;
	}
	return remote_call(t, what, fn, args, n, sp & ~15ull, ret);
}

/* ---- Finding dlopen and the agent --------------------------------------- */

/* The files that may hold dlopen: glibc's libc and libdl, musl's libc. */
static bool may_hold_dlopen(const char *path)
{
	const char *b = strrchr(path, '/') + 1;

	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "libdl", 5) ||
	       !strncmp(b, "ld-musl", 7);
}

/* Dynamic programs name their loader in PT_INTERP; static ones, static-pie too, do not. */
static bool is_static(pid_t pid)
{
	char p[64];
	size_t n = 0;
	bool interp = false;
	GElf_Phdr ph;
	Elf *e;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_getphdrnum(e, &n) == 0)
		for (size_t i = 0; i < n; i++)
			interp |= gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP;
	elf_end(e);
	close(fd);
	return n > 0 && !interp;
}

/* dlopen (or __libc_dlopen_mode if none has dlopen) and dlerror. */
static void scan_dl(pid_t pid, FILE *maps, struct dl_funcs *dl)
{
	struct rmap m;
	struct module mod;
	uint64_t fallback = 0;

	while (!dl->dlopen && next_map(maps, &m)) {
		if (m.off != 0 || !may_hold_dlopen(m.path) || module_open(pid, &m, &mod))
			continue;
		dl->dlopen = module_sym(&mod, "dlopen");
		if (!fallback)
			fallback = module_sym(&mod, "__libc_dlopen_mode");
		if (!dl->dlerror)
			dl->dlerror = module_sym(&mod, "dlerror");
		module_close(&mod);
	}
	if (!dl->dlopen)
		dl->dlopen = fallback;
}

static int find_dl(struct target *t, struct dl_funcs *dl)
{
	FILE *maps = open_maps(t);

	if (!maps)
		return -errno;
	scan_dl(t->pid, maps, dl);
	fclose(maps);
	if (dl->dlopen)
		return 0;
	if (is_static(t->pid))
		return fail(t, -EOPNOTSUPP,
			    "process %d is statically linked: it has no dlopen to load the agent",
			    t->pid);
	return fail(t, -EOPNOTSUPP, "no dlopen in process %d: neither libc nor libdl is mapped",
		    t->pid);
}

static int load_agent(struct target *t, const struct dl_funcs *dl, const char *path)
{
	char msg[512] = "no dlerror in the process to say why";
	uint64_t h, s = 0;
	int r = call_str(t, "dlopen", dl->dlopen, path, RTLD_NOW, 2, &h);

	if (r || h)
		return r;
	if (dl->dlerror) {
		r = call_str(t, "dlerror", dl->dlerror, NULL, 0, 0, &s);
		if (r)
			return r;
		if (s)
			remote_string(t, s, msg, sizeof(msg));
	}
	return fail(t, -ELIBACC, "dlopen failed in process %d: %s", t->pid, msg);
}

/*
 * The agent's mapping at offset 0: the path we gave dlopen, or the same
 * device and inode when maps names it differently (symlinks, bind mounts).
 */
static int find_agent(struct target *t, const char *path, struct rmap *m)
{
	struct stat st;
	bool have_st = stat(path, &st) == 0;
	FILE *maps = open_maps(t);
	int found = 0;

	if (!maps)
		return -errno;
	while (!found && next_map(maps, m))
		found = m->off == 0 &&
			(!strcmp(m->path, path) || (have_st && m->ino == st.st_ino &&
						    makedev(m->maj, m->min) == st.st_dev));
	fclose(maps);
	if (!found)
		return fail(t, -ENOENT, "agent %s is not mapped in process %d after dlopen", path,
			    t->pid);
	return 0;
}

static int start_agent(struct target *t, const char *path, const char *sym, const char *arg,
		       int *start_ret)
{
	struct rmap m;
	struct module mod;
	uint64_t fn, ret;
	int r = find_agent(t, path, &m);

	if (r)
		return r;
	if (module_open(t->pid, &m, &mod))
		return fail(t, -ENOEXEC, "cannot read the ELF file of agent %s", path);
	fn = module_sym(&mod, sym);
	module_close(&mod);
	if (!fn)
		return fail(t, -ENOENT, "agent %s exports no function %s", path, sym);
	r = call_str(t, sym, fn, arg, 0, 1, &ret);
	if (!r && start_ret)
		*start_ret = (int)(uint32_t)ret;
	return r;
}

/*
 * The target resolves a relative path from its own working directory: give
 * it ours made absolute. A name that is no file here goes as it is, for
 * dlopen to search or to explain.
 */
static int agent_path(struct target *t, const char *in, char *out)
{
	if (realpath(in, out))
		return 0;
	if (strlen(in) >= PATH_MAX)
		return fail(t, -ENAMETOOLONG, "agent path too long: %.64s...", in);
	strcpy(out, in);
	return 0;
}

/* Is pc in a mapping of the file at path? */
static bool in_file(struct target *t, const char *path, uint64_t pc)
{
	struct stat st;
	bool have_st = stat(path, &st) == 0, in = false;
	FILE *maps = open_maps(t);
	struct rmap m;

	while (maps && !in && next_map(maps, &m))
		in = pc >= m.start && pc < m.end &&
		     (!strcmp(m.path, path) ||
		      (have_st && m.ino == st.st_ino && makedev(m.maj, m.min) == st.st_dev));
	if (maps)
		fclose(maps);
	return in;
}

static void forget_thread(struct target *t)
{
	for (size_t i = 0; i < N_EXT; i++) {
		free(t->ext[i].iov_base);
		t->ext[i] = (struct iovec){NULL, 0};
	}
	t->attached = t->regs_saved = t->at_signal_stop = t->mask_changed = false;
	t->ndeferred = 0;
	t->call.nr = -1;
	t->rem_at = 0;
}

/*
 * Stopped where it runs the program's code, not the agent's. A thread in
 * the agent is doing nanoprobe's work: a probe's handler, or waiting in
 * the engine's signal handler while another session rewrites code the
 * thread may run (src/core/stop.c). Made to call dlopen there, it would
 * run that code half-written. It is let go and stopped again a moment
 * later; the wait is bounded, as the engine's is.
 */
#define OUTSIDE_TRIES   200
#define OUTSIDE_WAIT_MS 10

static int attach_outside(struct target *t, const char *agent)
{
	for (int i = 0;; i++) {
		int r = attach(t);

		if (r || !in_file(t, agent, isa_pc(&t->saved)))
			return r;
		if ((r = detach(t)))
			return r;
		forget_thread(t);
		if (i == OUTSIDE_TRIES)
			return fail(t, -EBUSY,
				    "process %d stays inside nanoprobe's agent (another session "
				    "patching it?)",
				    t->pid);
		nanosleep(&(struct timespec){0, OUTSIDE_WAIT_MS * 1000000L}, NULL);
	}
}

int np_inject_check_pid(pid_t pid, char *err, size_t errlen)
{
	struct target t = {.pid = pid, .err = err, .errlen = errlen};
	return check_process(&t);
}

int np_inject_agent(pid_t pid, const char *agent_path_in, const char *start_sym, const char *arg,
		    int *start_ret, char *err, size_t errlen)
{
	struct target t = {.pid = pid, .err = err, .errlen = errlen};
	struct dl_funcs dl = {0, 0};
	char path[PATH_MAX];
	int r, d;

	if (err && errlen)
		err[0] = 0;
	if (pid <= 0 || !agent_path_in || !start_sym)
		return fail(&t, -EINVAL, "invalid arguments to np_inject_agent");
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail(&t, -ENOSYS, "libelf is too old");
	r = agent_path(&t, agent_path_in, path);
	if (!r)
		r = check_process(&t);
	if (!r)
		r = attach_outside(&t, path);
	if (!r)
		r = find_dl(&t, &dl);
	if (!r)
		r = load_agent(&t, &dl, path);
	if (!r)
		r = start_agent(&t, path, start_sym, arg, start_ret);
	d = detach(&t);
	for (size_t i = 0; i < N_EXT; i++)
		free(t.ext[i].iov_base);
	return r ? r : d;
}

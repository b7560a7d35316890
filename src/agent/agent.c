/* SPDX-License-Identifier: MIT */
/*
 * The agent: a session with the nanoprobe command, inside the traced
 * program.
 *
 * Started two ways. Preloaded (`nanoprobe ... -- CMD`), its constructor
 * finds the command's socket in the environment and sets the probes up
 * before returning, so they are in place before main. Injected
 * (`nanoprobe -p PID`), the command calls nanoprobe_agent_start, which
 * starts a thread for the session and returns at once, so the thread the
 * command borrowed goes back to the program without delay.
 *
 * A session ends when the command says DETACH or its socket closes (the
 * command died): every probe is removed and the shared memory unmapped,
 * and the program carries on with its own code. The agent stays loaded,
 * idle, ready for the next session.
 */
#include "agent/agent.h"
#include "agent/script.h"
#include "arch/arch.h"
#include "core/clock.h"
#include "core/embed.h"
#include "core/fork.h"
#include "host/host.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

struct agent np_agent = {.sock = -1, .shm_fd = -1, .wake_fd = -1, .gen_word = &np_agent.gen,
			 .lock = PTHREAD_MUTEX_INITIALIZER};
volatile int np_agent_live = 1;

/* The one session: none, one with a command, or one being taken down (its
 * command said DETACH or went away; its probes are being removed). A new
 * command is refused while one is live, and told to try again while one
 * ends: that takes a bounded time, and leaves the process as it was. */
enum { SESSION_IDLE, SESSION_LIVE, SESSION_ENDING };
static int session_state;
static bool injected; /* by nanoprobe_agent_start, not preloaded */

static void set_state(int state)
{
	__atomic_store_n(&session_state, state, __ATOMIC_RELEASE);
}

/* The reason an attach failed: the most severe message since it began
 * (a refusal is INFO when the engine can fall back, and the last word
 * when the strategy was forced). */
static void capture_log(enum np_log_level level, const char *msg, void *user)
{
	if (level > NP_LOG_INFO || (np_agent.why[0] && (int)level > np_agent.why_level))
		return;
	np_agent.why_level = (int)level;
	snprintf(np_agent.why, sizeof(np_agent.why), "%s", msg);
}

/* Anyone may bind an abstract socket name: only a command run by our own
 * user (or root) may tell us what to probe and read. */
static bool peer_trusted(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
	       (cred.uid == geteuid() || cred.uid == 0);
}

int np_agent_connect(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strnlen(name, sizeof(a.sun_path) - 1);
	int fd = np_fd_move_high(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return -errno;
	memcpy(a.sun_path + 1, name, n); /* abstract namespace */
	int err = 0;
	if (connect(fd, (struct sockaddr *)&a, (socklen_t)(sizeof(sa_family_t) + 1 + n)))
		err = -errno;
	else if (!peer_trusted(fd))
		err = -EPERM;
	if (err)
		close(fd);
	return err ? err : fd;
}

static bool fetch_valid(const struct np_fetch *f)
{
	return f->base >= NP_FB_REG && f->base <= NP_FB_MODREL && f->type >= NP_FT_U &&
	       f->type <= NP_FT_STRING && (f->size == 1 || f->size == 2 || f->size == 4 ||
					  f->size == 8) && f->nderef <= NP_MAX_DEREF;
}

/* What the hit path evaluates without another check (vm.c, usdt_arg). */
static bool usdt_arg_valid(const struct np_usdt_loc *a)
{
	bool reg_ok = a->base >= NP_UA_NOREG && a->base < NP_NGPR && a->index >= NP_UA_NOREG &&
		      a->index < NP_NGPR;
	bool size_ok = a->size == 1 || a->size == 2 || a->size == 4 || a->size == 8;
	bool scale_ok = a->scale == 1 || a->scale == 2 || a->scale == 4 || a->scale == 8;
	unsigned known = NP_UA_MODREL | NP_UA_INMODULE;
	return reg_ok && size_ok && (a->kind == NP_UA_CONST || a->kind == NP_UA_MEM ||
				     (a->kind == NP_UA_REG && a->base >= 0 && a->shift < 64)) &&
	       (a->kind != NP_UA_MEM || scale_ok) && !(a->flags & ~known) &&
	       (!(a->flags & NP_UA_INMODULE) || (a->flags & NP_UA_MODREL));
}

static bool usdt_valid(const struct np_msg_probe *m)
{
	if (!m->usdt)
		return !m->nusdt && !m->usdt_sema;
	if (m->action != NP_ACT_SCRIPT || m->is_return || m->nusdt > NP_USDT_ARGS ||
	    (m->usdt_sema & 1))
		return false;
	for (unsigned i = 0; i < m->nusdt; i++)
		if (!usdt_arg_valid(&m->usdt_args[i]))
			return false;
	return true;
}

static bool probe_valid(const struct np_msg_probe *m, uint32_t want_id)
{
	if (!usdt_valid(m))
		return false;
	if (m->id != want_id || m->nargs > NP_MAX_ARGS || m->action < NP_ACT_COUNT ||
	    m->action > NP_ACT_SCRIPT || m->strategy > NP_STRATEGY_TRAP)
		return false;
	if (m->action == NP_ACT_SCRIPT && (m->nargs || !np_agent_script_probe_ok(m)))
		return false;
	if (m->action == NP_ACT_WATCH && (m->nargs > 2 || m->watch_len > 8))
		return false;
	for (unsigned i = 0; i < m->nargs; i++)
		if (!fetch_valid(&m->args[i]))
			return false;
	return true;
}

static bool hello_valid(const struct np_msg_hello *h)
{
	return h->type == NP_MSG_HELLO && h->magic == NP_PROTO_MAGIC &&
	       h->version == NP_PROTO_VERSION && h->nprobes < NP_REC_PAD && h->nrings &&
	       h->nrings <= 65536 && h->ring_bytes >= 4096 && h->ring_bytes <= (64u << 20) &&
	       !(h->ring_bytes & (h->ring_bytes - 1)) && h->hist_unit &&
	       (!h->hists || (h->hists == h->nprobes && !h->script_len)) &&
	       (h->clock == NP_CLOCK_NONE || h->clock == NP_CLOCK_VDSO) &&
	       !(h->flags & ~(NP_HELLO_SHM_GIVEN | NP_HELLO_FOLLOW));
}

/* A message and the descriptor that may come with it (-1: none). */
static ssize_t recv_fd(int fd, void *buf, size_t len, int *got)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			     .msg_controllen = sizeof(c.buf)};
	ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	*got = -1;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(got, CMSG_DATA(cm), sizeof(int));
	return n;
}

static bool reads_memory(const struct np_msg_probe *m)
{
	for (unsigned i = 0; i < m->nargs; i++)
		if (m->args[i].nderef || m->args[i].type == NP_FT_STRING ||
		    m->args[i].base == NP_FB_STACK)
			return true;
	return false;
}

/* HELLO (the shared memory with it, in *shm_fd, when given), then PROBE x
 * nprobes, then GO. */
static int receive_probes(int fd, struct np_msg_hello *h, int *shm_fd)
{
	if (recv_fd(fd, h, sizeof(*h), shm_fd) != sizeof(*h) || !hello_valid(h) ||
	    (h->flags & NP_HELLO_SHM_GIVEN) != (*shm_fd >= 0 ? NP_HELLO_SHM_GIVEN : 0))
		return -EPROTO;
	*shm_fd = np_fd_move_high(*shm_fd);
	np_agent.follow = h->flags & NP_HELLO_FOLLOW;
	if (h->script_len) {
		int err = np_agent_script_receive(fd, h->script_len, h->nprobes);
		if (err)
			return err;
	}
	np_agent.probes = calloc(h->nprobes ? h->nprobes : 1, sizeof(*np_agent.probes));
	if (!np_agent.probes)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nprobes; i++) {
		struct np_msg_probe *m = &np_agent.probes[i].m;
		if (recv(fd, m, sizeof(*m), 0) != sizeof(*m) || m->type != NP_MSG_PROBE ||
		    !probe_valid(m, i))
			return -EPROTO;
		m->path[NP_PATH_MAX - 1] = 0;
		np_agent.probes[i].reads_memory = reads_memory(m);
		np_agent.probes[i].max_record = np_rec_max(m); /* not per hit */
	}
	np_agent.nprobes = h->nprobes;
	np_agent.hist_unit = h->hist_unit;
	struct np_msg_simple go;
	if (recv(fd, &go, sizeof(go), 0) != sizeof(go) || go.type != NP_MSG_GO)
		return -EPROTO;
	return 0;
}

/* The given memory is what this session's HELLO describes: the header the
 * first agent wrote, sizes that fit the file. */
static bool shm_fits(const struct np_shm_header *hdr, const struct np_msg_hello *h,
		     uint32_t stride, size_t size, const struct stat *st)
{
	return (uint64_t)st->st_size >= size && hdr->magic == NP_PROTO_MAGIC &&
	       hdr->version == NP_PROTO_VERSION && hdr->nprobes == h->nprobes &&
	       hdr->nrings == h->nrings && hdr->ring_bytes == h->ring_bytes &&
	       hdr->ring_stride == stride &&
	       (!np_agent_script.prog ||
		(hdr->ring_extra == np_agent_script.ring_extra &&
		 hdr->script_off == np_shm_size(h->nprobes, h->nrings, stride) &&
		 hdr->script_bytes == np_agent_script.shared_bytes));
}

/* The session's shared memory: made here (the tree's first agent), or the
 * one another agent made, given with HELLO (given_fd >= 0). */
static int shm_setup(const struct np_msg_hello *h, int given_fd)
{
	uint64_t extra = h->hists ? np_ring_hists_size(h->hists) : np_agent_script.ring_extra;
	uint64_t wide = np_ring_stride_extra(h->nprobes, h->ring_bytes, extra);
	if (wide > UINT32_MAX)
		return -E2BIG;
	uint32_t stride = (uint32_t)wide;
	size_t size = np_shm_size(h->nprobes, h->nrings, stride) + np_agent_script.shared_bytes;
	int fd = given_fd >= 0 ? given_fd : np_fd_move_high(memfd_create("nanoprobe-rings",
									 MFD_CLOEXEC));
	struct stat st;
	if (fd < 0)
		return -errno;
	void *p = MAP_FAILED;
	if (given_fd >= 0 ? fstat(fd, &st) == 0 && (uint64_t)st.st_size >= size
			  : ftruncate(fd, (off_t)size) == 0)
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int err = given_fd >= 0 ? -EPROTO : -errno;
		close(fd);
		return err;
	}
	struct np_shm_header *hdr = p;
	if (given_fd >= 0 && !shm_fits(hdr, h, stride, size, &st)) {
		munmap(p, size);
		close(fd);
		return -EPROTO;
	}
	if (given_fd < 0)
		*hdr = (struct np_shm_header){.magic = NP_PROTO_MAGIC, .version = NP_PROTO_VERSION,
					      .nprobes = h->nprobes, .nrings = h->nrings,
					      .ring_bytes = h->ring_bytes, .ring_stride = stride,
					      .ring_extra = h->hists ? extra : 0,
					      .start_ns = np_clock_ns()};
	/* where each ring's histograms are, for the hit path (0: none) */
	np_agent.hist_off = h->hists ? np_ring_base_size(h->nprobes, h->ring_bytes) : 0;
	np_agent_script_bind(hdr);
	np_agent.shm_fd = fd;
	np_agent.shm_size = size;
	np_agent_missed_baseline();
	__atomic_store_n(&np_agent.shm, hdr, __ATOMIC_RELEASE);
	return 0;
}

/* READY, with the shared memory when this agent made it. */
static int send_ready(int fd, int pending, bool made)
{
	struct np_msg_simple m = {.type = NP_MSG_READY, .pending = (uint32_t)pending};
	struct iovec iov = {&m, sizeof(m)};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c = {0};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			     .msg_controllen = made ? sizeof(c.buf) : 0};
	if (!made)
		return sendmsg(fd, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &np_agent.shm_fd, sizeof(int));
	return sendmsg(fd, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static void session_end(void)
{
	set_state(SESSION_ENDING);
	np_agent_unhook_exec();
	np_agent_unhook_dlopen();
	pthread_mutex_lock(&np_agent.lock);
	np_agent_detach_all(); /* no handler runs after this */
	pthread_mutex_unlock(&np_agent.lock);
	np_agent_unguard_masks();
	if (np_agent.timed)
		np_clock_end(); /* its line is steered no more: the vDSO until the next */
	np_agent.timed = false;
	struct np_msg_simple m = {.type = NP_MSG_DETACHED};
	send(np_agent.sock, &m, sizeof(m), MSG_NOSIGNAL);
	struct np_shm_header *shm = np_agent.shm;
	__atomic_store_n(&np_agent.shm, NULL, __ATOMIC_RELEASE);
	if (shm)
		munmap(shm, np_agent.shm_size);
	if (np_agent.shm_fd >= 0)
		close(np_agent.shm_fd);
	/* read what the command said and we did not (a DETACH that ended the
	 * placing of probes): a Unix socket closed with unread data resets
	 * the connection, and the command would get ECONNRESET instead of
	 * the DETACHED just sent */
	for (struct np_msg_simple rest;
	     recv(np_agent.sock, &rest, sizeof(rest), MSG_DONTWAIT) > 0;)
		;
	close(np_agent.sock);
	if (np_agent.wake_fd >= 0)
		close(np_agent.wake_fd);
	free(np_agent.probes);
	np_agent.probes = NULL;
	np_agent_script_end();
	np_agent.nprobes = 0;
	np_agent.sock = np_agent.shm_fd = np_agent.wake_fd = -1;
	np_set_log_fn(NULL, NULL);
	set_state(SESSION_IDLE);
}

/* Has the command gone, or asked for the end (anything but the GO that
 * lets a preloaded program run)? No wait, nothing read. */
static bool command_done(int fd)
{
	struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
	struct np_msg_simple m;
	if (fd < 0 || poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))
		return true;
	return recv(fd, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT) != sizeof(m) ||
	       m.type != NP_MSG_GO;
}

bool np_agent_cancelled(void)
{
	return command_done(__atomic_load_n(&np_agent.sock, __ATOMIC_ACQUIRE));
}

/* Does a probe of the session read the clock? Counting does not. */
static bool session_timed(void)
{
	for (uint32_t i = 0; i < np_agent.nprobes; i++)
		if (np_agent.probes[i].m.action != NP_ACT_COUNT)
			return true;
	return false;
}

/* The clock's first line, and what it is for the command's header. The
 * calibration began before the probes were placed: placing them counts
 * towards its baseline. */
static void clock_settle(struct np_shm_header *hdr)
{
	struct np_clock_info c;
	np_clock_settle();
	np_clock_describe(&c);
	hdr->clock = c.counter ? NP_CLOCK_TSC : NP_CLOCK_VDSO;
	hdr->clock_hz = c.hz;
	snprintf(hdr->clock_why, sizeof(hdr->clock_why), "%s", c.why);
}

/* Say who joins, receive the probes, place those whose modules are
 * mapped, say READY. A command that goes away meanwhile ends the placing
 * early (modules.c): the session is then over, and its probes come out
 * again. */
static int session_setup(int fd)
{
	struct np_msg_hello h;
	struct np_msg_join j = {NP_MSG_JOIN, NP_JOIN_IMAGE, (int32_t)getpid(), (int32_t)getppid(),
				""};
	int given = -1;
	np_agent_exe(j.exe, sizeof(j.exe));
	__atomic_store_n(&np_agent.sock, fd, __ATOMIC_RELEASE);
	np_set_log_fn(capture_log, NULL);
	int err = send(fd, &j, sizeof(j), MSG_NOSIGNAL) == sizeof(j) ? 0 : -EPIPE;
	if (!err)
		err = receive_probes(fd, &h, &given);
	if (!err)
		err = shm_setup(&h, given);
	else if (given >= 0)
		close(given);
	if (err)
		return err;
	np_agent.wake_fd = np_fd_move_high(eventfd(0, EFD_CLOEXEC));
	if (np_agent.wake_fd < 0)
		return -errno;
	np_agent.pid = getpid();
	np_agent.copy = false;
	np_agent.timed = session_timed();
	if (np_agent.timed)
		np_clock_begin(h.clock != NP_CLOCK_VDSO);
	np_agent_new_gen();
	pthread_mutex_lock(&np_agent.lock);
	int pending = np_agent_attach_pending();
	pthread_mutex_unlock(&np_agent.lock);
	if (np_agent_cancelled())
		return -ECANCELED;
	if (np_agent.timed && given < 0) /* the header is the tree's: its maker's clock */
		clock_settle(np_agent.shm);
	else if (np_agent.timed)
		np_clock_settle();
	np_agent_hook_dlopen(); /* without it, later modules are just missed */
	np_agent_hook_exec();   /* without it, an untraced exec'd program goes unsaid */
	return send_ready(fd, pending, given < 0);
}

/* A preloaded program waits in the constructor until the command has seen
 * the probes placed: GO lets it run, anything else ends the session first. */
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t run_cond = PTHREAD_COND_INITIALIZER;
static int run_state; /* 0 undecided, 1 run, -1 session over */

static void decide_run(int state)
{
	pthread_mutex_lock(&run_lock);
	if (!run_state)
		run_state = state;
	pthread_cond_broadcast(&run_cond);
	pthread_mutex_unlock(&run_lock);
}

/* One message from the command; false when the session is over. */
static bool serve_socket(void)
{
	struct np_msg_simple m;
	ssize_t n = recv(np_agent.sock, &m, sizeof(m), 0);
	if (n < 0 && errno == EINTR)
		return true;
	if (n == sizeof(m) && m.type == NP_MSG_GO) {
		decide_run(1);
		return true;
	}
	return false; /* DETACH, EOF, or something we do not understand */
}

/* Every tick: per-thread state for new threads, the missed counts out,
 * the clock steered onto CLOCK_MONOTONIC. */
#define TICK_MS 10

static void housekeeping(void)
{
	np_maintain();
	if (np_agent.timed)
		np_clock_tick();
	pthread_mutex_lock(&np_agent.lock);
	np_agent_publish_new_misses();
	pthread_mutex_unlock(&np_agent.lock);
}

/* Until DETACH or the command goes away (or never came: a forked child's
 * connection that failed): serve dlopen handlers too. */
void np_agent_serve(void)
{
	struct pollfd fds[2] = {{np_agent.sock, POLLIN, 0}, {np_agent.wake_fd, POLLIN, 0}};
	while (np_agent.sock >= 0) {
		int n = poll(fds, 2, TICK_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		housekeeping();
		if (fds[1].revents & POLLIN)
			np_agent_serve_dlopen();
		if (fds[0].revents && !serve_socket())
			break;
	}
	session_end();
	decide_run(-1);
}

/* The program's thread that nanoprobe_agent_start ran on (injected). */
static pid_t borrowed_tid;

/* First bytes of /proc/self/task/TID/FILE, "" when it cannot be read. */
static void read_task_file(pid_t tid, const char *file, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
}

/*
 * Until the thread the injector borrowed is the program's again: no
 * longer traced, then (for up to 50 ms) waiting in its system call again
 * if it was in one. The mask guards are the session's first patch, and a
 * patch asks each running thread where it is with the engine's signal;
 * the borrowed thread reads as running from the end of the injected call
 * until the kernel restarts the call it was interrupted in, and a handler
 * that runs then turns the restart into EINTR (for a sleep whatever
 * SA_RESTART says, signal(7)): the program's nanosleep failed. Waiting
 * in its call, it is judged from /proc and sent nothing. At most 2 s in
 * all: a thread that never comes back is asked as before.
 */
static void await_borrowed_thread(void)
{
	char buf[1024];
	int traced_ms = 0, running_ms = 0;
	while (traced_ms < 2000 && running_ms < 50) {
		read_task_file(borrowed_tid, "status", buf, sizeof(buf));
		const char *tracer = strstr(buf, "\nTracerPid:");
		if (!tracer)
			return; /* gone */
		if (strtol(tracer + 11, NULL, 10) != 0) {
			traced_ms++;
		} else {
			read_task_file(borrowed_tid, "syscall", buf, sizeof(buf));
			if (strncmp(buf, "running", 7) != 0)
				return;
			running_ms++;
		}
		usleep(1000);
	}
}
/* The socket's name, for the control thread to connect to. Static, not a
 * copy on the heap: that copy would be allocated on the program's thread
 * and freed on ours, and a free puts the block into the freeing thread's
 * cache (glibc's tcache), where our own allocations reuse it and our work
 * decides when it goes back to the program's arena. The program's heap
 * history then depends on what the agent does: under qemu-aarch64, grep
 * with every entry of itself and libc counted twice consolidated libc's
 * fast bins once more under AUTO than under TRAP (docs/reliability.md).
 * One session at a time (claim_session), and its thread reads the name
 * before the session can end, so one buffer serves every session. */
char np_agent_session_name[108];

void np_agent_thread_setup(void)
{
	/* The program's signals are for its own threads. Not blocked: the one
	 * the engine moves threads out of patched bytes with, and the faults:
	 * this thread may run a function while a breakpoint is on it, and a
	 * blocked SIGTRAP there would kill the process. */
	static const int keep[] = {SIGTRAP, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, SIGRTMAX - 3);
	for (size_t i = 0; i < sizeof(keep) / sizeof(*keep); i++)
		sigdelset(&all, keep[i]);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	np_agent_busy = 1; /* for its whole life */
}

/* Around fork, the agent's lock is the forking thread's: a child gets the
 * probes' states between two changes, never in the middle of one (an
 * attach that placed a probe but had not noted it). Taken before the
 * engine's lock, as the control thread takes them. */
static void before_fork(void)
{
	pthread_mutex_lock(&np_agent.lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&np_agent.lock);
}

static void after_fork_child(void)
{
	pthread_mutex_unlock(&np_agent.lock);
	np_agent_forked();
}

/* After the engine's (np_engine_init registers them): the handlers that
 * prepare a fork run in the reverse order, so the agent's lock is taken
 * before the engine's, the order the control thread takes them in. */
static void watch_forks(void)
{
	np_engine_init();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	uint32_t *word = np_fork_wiped_word(); /* before any probe: copy.c */
	if (word) {
		*word = np_agent.gen;
		np_agent.gen_word = word;
	}
}

bool np_agent_session_live(void)
{
	return __atomic_load_n(&session_state, __ATOMIC_ACQUIRE) == SESSION_LIVE;
}

static void *session_thread(void *arg)
{
	/* here, not on the program's thread a preload or an injection runs
	 * on: the engine's set-up allocates, and a block the program's thread
	 * allocated and ours frees would go into our cache (e2e-agent-heap) */
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, watch_forks);
	np_agent_thread_setup();
	const char *name = arg;
	/* Injected: the guard on the mask calls before the command sees us
	 * connect, and unblocks the engine's signals in the threads that
	 * block them: a thread made in between would keep them blocked
	 * (maskguard.c, tools/nanoprobe/inject/masks.c). */
	if (name && injected) {
		await_borrowed_thread();
		np_agent_guard_masks();
	}
	if (name) {
		int fd = np_agent_connect(name);
		if (fd < 0 || session_setup(fd)) {
			if (fd >= 0) {
				session_end();
			} else {
				np_agent_unguard_masks();
				set_state(SESSION_IDLE);
			}
			decide_run(-1);
			return NULL;
		}
	}
	np_agent_serve();
	return NULL;
}

/* A detached thread of the agent's running fn(np_agent_session_name). */
int np_agent_start_thread(void *(*fn)(void *))
{
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int err = pthread_create(&t, &a, fn, np_agent_session_name);
	pthread_attr_destroy(&a);
	return -err;
}

/* The session's thread, connecting to name (copied: the caller's may go). */
static int start_thread(const char *name)
{
	snprintf(np_agent_session_name, sizeof(np_agent_session_name), "%s", name);
	return np_agent_start_thread(session_thread);
}

bool np_agent_in_session_process(void)
{
	return np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0) ==
	       __atomic_load_n(&np_agent.pid, __ATOMIC_RELAXED);
}

bool np_agent_served(void)
{
	return np_agent_in_session_process() && !__atomic_load_n(&np_agent.copy, __ATOMIC_RELAXED);
}


static bool claim_session(void)
{
	int idle = SESSION_IDLE;
	return np_agent_live &&
	       __atomic_compare_exchange_n(&session_state, &idle, SESSION_LIVE, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Taken: by a live command (-EBUSY); or by a session being taken down,
 * one whose command has gone and that will notice soon, or one still
 * connecting, whose command may be gone already (-EAGAIN: ask again). */
static int why_taken(void)
{
	if (__atomic_load_n(&session_state, __ATOMIC_ACQUIRE) != SESSION_LIVE ||
	    __atomic_load_n(&np_agent.sock, __ATOMIC_ACQUIRE) < 0 || np_agent_cancelled())
		return -EAGAIN;
	return -EBUSY;
}

/* Injected: connect and set up on a thread of our own. 0 or -errno. */
EXPORT int nanoprobe_agent_start(const char *sockname)
{
	np_agent_busy++; /* a borrowed thread: what we call here is ours */
	injected = true;
	borrowed_tid = (pid_t)syscall(SYS_gettid);
	int err = claim_session() ? start_thread(sockname) : why_taken();
	if (err && err != -EBUSY && err != -EAGAIN)
		set_state(SESSION_IDLE);
	np_agent_busy--;
	return err;
}

/* Our own entry in LD_PRELOAD would load us into every program a child
 * starts: take it out. */
static void unpreload_self(void)
{
	Dl_info info;
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !dladdr((void *)unpreload_self, &info) || !info.dli_fname)
		return;
	char *copy = strdup(pre), *out = calloc(1, strlen(pre) + 1), *save = NULL;
	for (char *tok = copy ? strtok_r(copy, ": ", &save) : NULL; tok && out;
	     tok = strtok_r(NULL, ": ", &save)) {
		if (strcmp(tok, info.dli_fname) == 0)
			continue;
		if (*out)
			strcat(out, ":");
		strcat(out, tok);
	}
	if (out && *out)
		setenv("LD_PRELOAD", out, 1);
	else if (out)
		unsetenv("LD_PRELOAD");
	free(copy);
	free(out);
}

int np_agent_fd_high(int fd)
{
	return np_fd_move_high(fd);
}

void np_agent_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
}

/* A process the session does not follow says so before it goes its way,
 * so that the command can tell the user; nothing waits for an answer. */
static void tell_untraced(const char *name)
{
	struct np_msg_join j = {NP_MSG_JOIN, NP_JOIN_UNTRACED, (int32_t)getpid(),
				(int32_t)getppid(), ""};
	np_agent_exe(j.exe, sizeof(j.exe));
	int fd = np_agent_connect(name);
	if (fd >= 0) {
		send(fd, &j, sizeof(j), MSG_NOSIGNAL);
		close(fd);
	}
}

/* NANOPROBE_AGENT_SOCK is "NAME@PID": the socket, and the one process the
 * command started. That process keeps the variables, so that when it execs
 * (a shell script's interpreter, a wrapper) its new image connects again.
 * Any other process (one the traced program started) joins the session
 * too while NANOPROBE_AGENT_FOLLOW is set, and keeps the variables for its
 * own children; without it, it says so, forgets them and stays untraced. */
static bool preload_target(char *name, size_t len)
{
	const char *env = getenv(NP_AGENT_ENV_SOCK);
	const char *at = env ? strrchr(env, '@') : NULL;
	if (!at || (size_t)(at - env) >= len)
		return false;
	memcpy(name, env, (size_t)(at - env));
	name[at - env] = 0;
	if (atol(at + 1) != (long)getpid() && !getenv(NP_AGENT_ENV_FOLLOW)) {
		tell_untraced(name);
		unsetenv(NP_AGENT_ENV_SOCK);
		unpreload_self();
		return false;
	}
	return true;
}

static void wait_for_run(void)
{
	pthread_mutex_lock(&run_lock);
	while (!run_state)
		pthread_cond_wait(&run_cond, &run_lock);
	pthread_mutex_unlock(&run_lock);
}

/* Preloaded: the probes are placed before the program's main runs. */
__attribute__((constructor)) static void agent_preloaded(void)
{
	char name[108];
	if (!preload_target(name, sizeof(name)) || !claim_session())
		return;
	np_agent_busy++; /* until the program's own code runs */
	/* Registered for membarrier, and the descriptor table grown, while
	 * the program's thread is the only one: with two, each waits for an
	 * RCU grace period, 15-30 ms (core/embed.h). */
	np_engine_preinit();
	/* The control thread is created before any probe is placed, and it
	 * places them: pthread_create runs clone3 with every signal blocked,
	 * and a breakpoint hit there would kill the process. */
	if (start_thread(name)) {
		set_state(SESSION_IDLE);
	} else {
		wait_for_run();
	}
	np_agent_busy--;
}

/* At a normal exit, the last missed counts (the control thread publishes
 * them every tick, and may not get another). This runs on the program's
 * exiting thread: its calls are ours, not the program's. Whether the lock
 * is free depends on where the control thread's tick is, so counting them
 * would make the program's counts vary from run to run. */
__attribute__((destructor)) static void agent_exiting(void)
{
	np_agent_busy++;
	if (np_agent.shm && pthread_mutex_trylock(&np_agent.lock) == 0) {
		np_agent_publish_missed();
		pthread_mutex_unlock(&np_agent.lock);
	}
	np_agent_busy--;
}

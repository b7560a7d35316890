/* SPDX-License-Identifier: MIT */
/*
 * Running a session (see session.h). The order matters for "bad input
 * changes nothing": every spec is resolved before the program is started or
 * touched, and a program started with `--` waits in the agent's constructor
 * until the command has seen the probes placed and says run; if none could
 * be placed, it is killed before its main ever runs.
 */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "consume.h"
#include "agent/vm.h"
#include <nanoprobe/nanoprobe.h>
#include "inject.h"
#include "launch.h"
#include "output.h"

#define CONNECT_TIMEOUT_MS 15000
#define READY_TIMEOUT_MS 60000
#define DETACH_TIMEOUT_MS 10000
#define POLL_MS 10
#define REAP_EVERY_MS 500
/* Threads that can record at once (a ring each; rings of threads that exit
 * are reused). Memory is touched only as threads use it. */
#define RINGS_EVENTS 1024
#define RINGS_COUNTING 4096

static volatile sig_atomic_t stop_requested;
static bool stopped_by_us; /* -d or a signal ended the session */
static bool released = true; /* no probe of ours is left in the target */
static pid_t target_pid;

static void on_stop_signal(int sig)
{
	stop_requested = sig;
}

static void catch_stop_signals(void)
{
	/* SA_RESTART: a signal arriving in the middle of printing an event must
	 * not cut the line (stdio drops what an interrupted write() left); the
	 * loops see stop_requested within one poll interval anyway */
	struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void session_request_stop(void)
{
	stop_requested = SIGTERM;
}

pid_t session_pid(void)
{
	return target_pid;
}

/* --- the control socket --------------------------------------------------- */

static int listen_abstract(char *name, size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* fixed width: the name goes into the traced program's environment,
	 * whose size moves its stack and the heap copies it makes (a
	 * differential run saw strlen's alignment paths vary with it) */
	snprintf(name, len, "nanoprobe.%010d.%09ld", (int)getpid(), (long)ts.tv_nsec);
	size_t n = strlen(name);
	memcpy(a.sun_path + 1, name, n);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, (socklen_t)(sizeof(sa_family_t) + 1 + n)) ||
	    listen(fd, 1)) {
		int err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

/* Only the target itself may talk to us: the process we injected or
 * started, run by our user. Root traces any user's process (and a program
 * it starts may change user before it execs, as setpriv and runuser do):
 * for root the process is the target whoever runs it. */
static bool peer_is_target(int fd, pid_t pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	return cred.pid == pid && (cred.uid == geteuid() || geteuid() == 0);
}

/* The target's agent connecting; within timeout_ms, or with 0 for as long
 * as the program we started lives (its next image after an exec). */
static int accept_agent(int lfd, pid_t pid, int timeout_ms, char *err, size_t errlen)
{
	uint64_t deadline = timeout_ms ? now_ms() + (uint64_t)timeout_ms : UINT64_MAX;
	while (now_ms() < deadline && !stop_requested) {
		struct pollfd p = {lfd, POLLIN, 0};
		if (launch_child_exited(pid)) {
			snprintf(err, errlen, "the program exited before the agent started");
			return -ECHILD;
		}
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (peer_is_target(fd, pid))
			return fd;
		close(fd); /* someone else: ignore */
	}
	if (stop_requested)
		snprintf(err, errlen, "interrupted before the agent connected");
	else
		snprintf(err, errlen, "the agent did not connect within %d s",
			 CONNECT_TIMEOUT_MS / 1000);
	return -ETIMEDOUT;
}

static int send_all(int fd, const void *msg, size_t len)
{
	return send(fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EPIPE;
}

static int send_simple(int fd, uint32_t type)
{
	struct np_msg_simple m = {.type = type};
	return send_all(fd, &m, sizeof(m));
}

/* The program after HELLO, in chunks (proto.h, NP_MSG_SCRIPT). */
static int send_script(int fd, const struct np_vm_prog *prog)
{
	static unsigned char chunk[4 + NP_SCRIPT_CHUNK];
	const unsigned char *p = (const unsigned char *)prog;
	uint32_t type = NP_MSG_SCRIPT;
	int rc = 0;
	memcpy(chunk, &type, 4);
	for (uint32_t at = 0; at < prog->size && !rc; at += NP_SCRIPT_CHUNK) {
		uint32_t n = prog->size - at < NP_SCRIPT_CHUNK ? prog->size - at : NP_SCRIPT_CHUNK;
		memcpy(chunk + 4, p + at, n);
		rc = send_all(fd, chunk, 4 + n);
	}
	return rc;
}

static const struct np_vm_prog *session_script;

static int send_probes(int fd, const struct np_msg_hello *h, const struct probe_set *set)
{
	int rc = send_all(fd, h, sizeof(*h));
	if (!rc && h->script_len)
		rc = send_script(fd, session_script);
	for (size_t i = 0; i < set->n && !rc; i++)
		rc = send_all(fd, &set->p[i].m, sizeof(set->p[i].m));
	return rc ? rc : send_simple(fd, NP_MSG_GO);
}

/* --- messages from the agent ---------------------------------------------- */

struct control {
	int fd;
	int shm_fd;
	bool ready, detached, closed;
	uint32_t pending;
	uint64_t heard; /* messages received */
	struct probe_set *set;
};

static void note_attached(struct control *c, const struct np_msg_attached *m)
{
	if (m->id >= c->set->n)
		return;
	struct rprobe *r = &c->set->p[m->id];
	r->err = m->err;
	r->strategy = m->strategy;
	r->addr = m->addr;
	r->state = m->err ? -1 : 1;
	snprintf(r->why, sizeof(r->why), "%.*s", (int)sizeof(m->why) - 1, m->why);
	if (m->err && !r->m.path[0]) /* a watch of an address, not of a module's symbol */
		cli_error("cannot place %s:%s: %s", r->group, r->event, r->why);
	else if (m->err)
		cli_error("cannot place %s:%s at %s+0x%llx: %s", r->group, r->event, r->m.path,
			  (unsigned long long)r->m.vaddr, r->why);
}

static int take_fd(struct msghdr *msg)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(msg);
	int fd = -1;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* One message; false when the socket is closed. */
static bool read_control(struct control *c)
{
	union {
		uint32_t type;
		struct np_msg_attached a;
		struct np_msg_simple s;
	} m;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf)};
	ssize_t n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return !(c->closed = n == 0 || errno != EINTR);
	c->heard++;
	if (m.type == NP_MSG_ATTACHED && n == sizeof(m.a)) {
		note_attached(c, &m.a);
	} else if (m.type == NP_MSG_READY && n == sizeof(m.s)) {
		c->shm_fd = take_fd(&msg);
		c->pending = m.s.pending;
		c->ready = true;
	} else if (m.type == NP_MSG_DETACHED) {
		c->detached = true;
	}
	return true;
}

static bool wait_control(struct control *c, int ms)
{
	struct pollfd p = {c->fd, POLLIN, 0};
	if (poll(&p, 1, ms) <= 0)
		return true;
	return read_control(c);
}

/* Given up during set-up: the agent is told, and waited for (it stops
 * placing probes and removes those it placed), so that the process is as
 * it was when we exit. */
static void call_off(struct control *c)
{
	uint64_t deadline = now_ms() + DETACH_TIMEOUT_MS;
	send_simple(c->fd, NP_MSG_DETACH);
	while (!c->detached && !c->closed && now_ms() < deadline)
		wait_control(c, 100);
}

/* READY, as long as the agent makes progress: the placing of thousands of
 * probes in a loaded process is slow but reports each probe; an agent
 * that says nothing for READY_TIMEOUT_MS is stuck. */
static int wait_ready(struct control *c, char *err, size_t errlen)
{
	uint64_t heard = c->heard, deadline = now_ms() + READY_TIMEOUT_MS;
	while (!c->ready && !c->closed && !stop_requested && now_ms() < deadline) {
		wait_control(c, 100);
		if (c->heard != heard)
			heard = c->heard, deadline = now_ms() + READY_TIMEOUT_MS;
	}
	if (c->ready && c->shm_fd >= 0)
		return 0;
	if (c->closed) {
		snprintf(err, errlen, "the agent closed the connection during set-up");
		return -EPROTO;
	}
	call_off(c);
	if (stop_requested)
		snprintf(err, errlen, "interrupted while the agent placed the probes; %s",
			 c->detached ? "it removed those it had placed"
				     : "it was told to remove those it placed");
	else
		snprintf(err, errlen, "the agent placed no probe for %d s; %s",
			 READY_TIMEOUT_MS / 1000,
			 c->detached ? "it removed those it had placed"
				     : "it was told to remove those it placed");
	return -EPROTO;
}

/* --- the session ---------------------------------------------------------- */

static size_t placed(const struct probe_set *set)
{
	size_t n = 0;
	for (size_t i = 0; i < set->n; i++)
		n += set->p[i].state >= 0; /* attached or waiting for its module */
	return n;
}

static int start_target(const struct session_opts *o, const char *sock, char *err,
			size_t errlen)
{
	/* -j on stdout: the program's own stdout goes to our stderr, so that
	 * ours holds JSON lines only */
	if (o->cmd)
		return launch_command(o->cmd, sock, o->json && !o->out_path, &target_pid, err,
				      errlen);
	target_pid = o->pid;
	return launch_inject(o->pid, sock, err, errlen);
}

static int handshake(const struct session_opts *o, struct control *c, struct np_msg_hello *h,
		     const struct session_ops *ops, bool first, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->set->n; i++)
		c->set->p[i].state = 0;
	int rc = send_probes(c->fd, h, c->set);
	if (!rc)
		rc = wait_ready(c, err, errlen);
	else
		snprintf(err, errlen, "the agent closed the connection");
	if (!rc && !placed(c->set)) {
		snprintf(err, errlen, "no probe could be placed");
		rc = -ENOENT;
	}
	if (!rc && ops->on_begin)
		ops->on_begin(c->shm_fd, h, ops->cookie);
	if (!rc && ops->on_ready) /* a program we started has not run main yet */
		ops->on_ready(ops->cookie);
	/* A preloaded program waits in its constructor for this word. Not
	 * the first image of one we started when its set-up failed: that is
	 * killed where it waits (run_sessions); told to go on, it could run
	 * its main before the kill (cli-e2e saw its output, under load). */
	if (o->cmd && !(rc && first))
		send_simple(c->fd, rc ? NP_MSG_DETACH : NP_MSG_GO);
	return rc;
}

static void interval_tick(struct consumer *cons, const struct session_ops *ops,
			  struct totals *scratch)
{
	if (!ops->on_interval)
		return;
	consumer_totals(cons, scratch);
	ops->on_interval(scratch, ops->cookie);
}

/* Read events until the program ends or we are told to stop (-d, a
 * signal); then detach. True when we stopped it. */
static bool run_loop(const struct session_opts *o, struct control *c, struct consumer *cons,
		     const struct session_ops *ops, struct totals *scratch)
{
	uint64_t start = now_ms(), last_reap = start, last_tick = start;
	uint64_t detach_sent = 0;
	while (!c->closed && !c->detached) {
		uint64_t t = now_ms();
		bool expired = o->duration > 0 && t - start >= (uint64_t)(o->duration * 1000);
		/* results that cannot be written end the session as Ctrl-C would */
		bool unwritable = output_error() != 0;
		if ((stop_requested || expired || unwritable) && !detach_sent) {
			send_simple(c->fd, NP_MSG_DETACH);
			detach_sent = t;
		}
		if (detach_sent && t - detach_sent > DETACH_TIMEOUT_MS)
			break;
		wait_control(c, POLL_MS);
		bool reap = t - last_reap >= REAP_EVERY_MS;
		consumer_drain(cons, ops, reap);
		output_flush(); /* what this drain printed, in whole lines */
		last_reap = reap ? t : last_reap;
		if (o->interval > 0 && t - last_tick >= (uint64_t)(o->interval * 1000)) {
			interval_tick(cons, ops, scratch);
			last_tick = t;
		}
	}
	consumer_drain(cons, ops, false);
	output_flush();
	return detach_sent != 0;
}

/* A latency session keeps a histogram per probe (proto.h, np_ring_hists). */
static bool wants_hists(const struct probe_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->p[i].m.action == NP_ACT_LATENCY)
			return true;
	return false;
}

static int totals_init(struct totals *t, const struct probe_set *set)
{
	size_t n = set->n;
	memset(t, 0, sizeof(*t));
	t->counts = calloc(n ? n : 1, sizeof(uint64_t));
	t->missed_by_probe = calloc(n ? n : 1, sizeof(uint64_t));
	if (wants_hists(set))
		t->hists = calloc(n ? n : 1, sizeof(struct np_hist));
	return t->counts && t->missed_by_probe && (t->hists || !wants_hists(set)) ? 0 : -ENOMEM;
}

void totals_free(struct totals *t)
{
	free(t->counts);
	free(t->missed_by_probe);
	free(t->hists);
	t->counts = t->missed_by_probe = NULL;
	t->hists = NULL;
}

/* Rings for a latency session: a histogram per probe in each makes them
 * large; at most about 1 GiB of them (the memory is touched only by the
 * threads that hit), and never fewer than 64. */
static unsigned latency_rings(const struct probe_set *set, unsigned ring_kb, unsigned want)
{
	uint64_t stride = np_ring_stride_extra((uint32_t)set->n, ring_kb * 1024u,
					       np_ring_hists_size((uint32_t)set->n));
	uint64_t fit = (1ull << 30) / stride;
	return fit >= want ? want : fit > 64 ? (unsigned)fit : 64;
}

static int fail(const struct session_opts *o, const char *msg)
{
	fprintf(stderr, "nanoprobe %s: %s\n", o->verb, msg);
	return 1;
}

/* --- the clock ------------------------------------------------------------ */

/* NANOPROBE_CLOCK: the agent's choice (unset, "auto"), or the vDSO even
 * where the agent would read the TSC ("vdso": to compare the two, or to
 * rule the counter out). Into *out (HELLO's clock); -1 on a bad value. */
static int clock_request(const struct session_opts *o, uint32_t *out)
{
	const char *env = getenv("NANOPROBE_CLOCK");
	*out = NP_CLOCK_NONE;
	if (!env || !*env || !strcmp(env, "auto"))
		return 0;
	if (!strcmp(env, "vdso")) {
		*out = NP_CLOCK_VDSO;
		return 0;
	}
	fprintf(stderr, "nanoprobe %s: NANOPROBE_CLOCK=%s: not auto or vdso\n", o->verb, env);
	return -1;
}

static uint32_t clock_hello;

/* How the agent read the time stamps (proto.h, np_shm_header.clock), as
 * its last session said. */
static struct {
	unsigned source; /* enum np_clock_source; NONE when unknown */
	uint64_t hz;     /* the TSC's measured rate */
	char why[96];    /* why not the TSC, printable */
	bool told;       /* the "Clock:" line is out */
} clock_seen;

/* What the agent says its clock is, taken apart from the memory it
 * shares, which the program could have written: each byte read once, an
 * unknown source "unknown", the reason printable text only. */
static void note_clock(const struct session_opts *o, const struct np_shm_header *hdr)
{
	const volatile struct np_shm_header *v = hdr;
	unsigned source = v->clock;
	clock_seen.source = source == NP_CLOCK_TSC || source == NP_CLOCK_VDSO ? source
									       : NP_CLOCK_NONE;
	clock_seen.hz = v->clock_hz;
	size_t n = 0;
	for (char ch; n + 1 < sizeof(clock_seen.why) && n < sizeof(v->clock_why) &&
		      (ch = v->clock_why[n]);
	     n++)
		clock_seen.why[n] = ch >= ' ' && ch < 127 ? ch : '?';
	clock_seen.why[n] = 0;
	if (clock_seen.told || !o->show_clock || o->json)
		return;
	clock_seen.told = true;
	if (clock_seen.source == NP_CLOCK_TSC)
		fprintf(stderr, "Clock: tsc at %.1f MHz, calibrated to CLOCK_MONOTONIC\n",
			(double)clock_seen.hz / 1e6);
	else if (clock_seen.source == NP_CLOCK_VDSO && clock_hello == NP_CLOCK_VDSO)
		fprintf(stderr, "Clock: vdso clock_gettime(CLOCK_MONOTONIC), as NANOPROBE_CLOCK=vdso "
				"asks\n");
	else if (clock_seen.source == NP_CLOCK_VDSO)
		fprintf(stderr, "Clock: vdso clock_gettime(CLOCK_MONOTONIC)%s%s\n",
			clock_seen.why[0] ? ": " : "", clock_seen.why);
	else
		fprintf(stderr, "Clock: unknown: the agent did not say\n");
}

const char *session_clock_name(void)
{
	switch (clock_seen.source) {
	case NP_CLOCK_TSC: return "tsc";
	case NP_CLOCK_VDSO: return "vdso";
	}
	return "unknown";
}

/* One agent's session. *t holds what earlier images of the program counted
 * and receives this one's on top. */
static int run_attached(const struct session_opts *o, struct control *c,
			const struct np_msg_hello *h, const struct session_ops *ops,
			struct totals *t)
{
	struct consumer cons;
	struct totals scratch;
	if (totals_init(&scratch, c->set))
		return fail(o, "out of memory");
	int rc = consumer_open(&cons, c->shm_fd, h, c->set, target_pid, t);
	cons.ops = ops;
	if (!rc)
		note_clock(o, cons.shm);
	if (rc) {
		send_simple(c->fd, NP_MSG_DETACH);
		totals_free(&scratch);
		return fail(o, "the agent's shared memory is not what was asked for");
	}
	if (run_loop(o, c, &cons, ops, &scratch))
		stopped_by_us = true;
	consumer_totals(&cons, &scratch);
	consumer_close(&cons);
	totals_free(t);
	*t = scratch;
	return 0;
}

static void forget_comms(void);

/* Sessions with the program's successive images: the one started, then,
 * after each exec (a wrapper script running its interpreter), the next. */
static int run_sessions(const struct session_opts *o, int lfd, struct probe_set *set,
			const struct session_ops *ops, struct totals *t)
{
	/* Counting needs no event space: room for many more threads then. */
	bool events = ops->on_event != NULL || ops->on_record != NULL;
	unsigned ring_kb = o->ring_kb ? o->ring_kb : events ? 256 : 4;
	unsigned nrings = o->nrings ? o->nrings : events ? RINGS_EVENTS : RINGS_COUNTING;
	bool hists = wants_hists(set);
	if (hists)
		nrings = latency_rings(set, ring_kb, nrings);
	struct np_msg_hello h = {NP_MSG_HELLO, NP_PROTO_MAGIC, NP_PROTO_VERSION,
				 (uint32_t)set->n, nrings,
				 ring_kb * 1024u, o->hist_unit ? o->hist_unit : 1,
				 o->script ? o->script->size : 0, hists ? (uint32_t)set->n : 0,
				 clock_hello};
	session_script = o->script;
	if (o->script) {
		session_script_ring_extra = (o->script->thread_bytes + 4095) & ~4095ull;
		session_script_bytes = (o->script->shared_bytes + 4095) & ~4095ull;
	}
	char err[512];
	for (int n = 0;; n++) {
		struct control c = {.fd = -1, .shm_fd = -1, .set = set};
		forget_comms(); /* a new image may have renamed its threads */
		int rc = c.fd = accept_agent(lfd, target_pid, n ? 0 : CONNECT_TIMEOUT_MS, err,
					     sizeof(err));
		if (rc >= 0 && !o->cmd)
			launch_inject_connected(target_pid);
		if (rc >= 0)
			rc = handshake(o, &c, &h, ops, n == 0, err, sizeof(err));
		if (rc && n == 0 && o->cmd)
			launch_kill_child(); /* before its main: it never ran */
		if (rc && (n == 0 || c.fd >= 0))
			fprintf(stderr, "nanoprobe %s: %s\n", o->verb, err);
		if (!rc)
			rc = run_attached(o, &c, &h, ops, t);
		if (c.shm_fd >= 0)
			close(c.shm_fd);
		/* the agent removed its probes, or never had any */
		released = c.fd < 0 || c.detached || c.closed;
		if (c.fd >= 0)
			close(c.fd);
		if (rc && n == 0)
			return 1;
		if (!o->cmd || stopped_by_us || stop_requested || launch_child_exited(target_pid))
			return 0;
	}
}

int session_run(const struct session_opts *o, struct probe_set *set,
		const struct session_ops *ops, struct totals *t)
{
	char name[64], err[512];
	if (totals_init(t, set)) {
		totals_free(t);
		return fail(o, "out of memory");
	}
	if (clock_request(o, &clock_hello)) {
		totals_free(t);
		return 1;
	}
	int lfd = listen_abstract(name, sizeof(name));
	int rc = lfd < 0 ? fail(o, "cannot open the control socket") : 0;
	if (!rc) {
		catch_stop_signals();
		rc = start_target(o, name, err, sizeof(err)) ? fail(o, err) : 0;
	}
	if (!rc)
		rc = run_sessions(o, lfd, set, ops, t);
	if (lfd >= 0)
		close(lfd);
	if (!o->cmd)
		launch_inject_done(released);
	if (rc)
		totals_free(t); /* the caller frees them only after a session ran */
	return rc;
}

/* --- thread names ---------------------------------------------------------- */

#define COMM_SLOTS 4096
static struct {
	int tid;
	char comm[20];
} comm_cache[COMM_SLOTS];

static void forget_comms(void)
{
	memset(comm_cache, 0, sizeof(comm_cache));
}

const char *session_comm(int tid, const char *fallback)
{
	unsigned i = (unsigned)tid % COMM_SLOTS;
	if (comm_cache[i].tid == tid && tid)
		return comm_cache[i].comm;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)target_pid, tid);
	FILE *f = fopen(path, "r");
	comm_cache[i].tid = tid;
	snprintf(comm_cache[i].comm, sizeof(comm_cache[i].comm), "%s",
		 fallback && fallback[0] ? fallback : "<...>");
	if (f) {
		if (fgets(comm_cache[i].comm, sizeof(comm_cache[i].comm), f))
			comm_cache[i].comm[strcspn(comm_cache[i].comm, "\n")] = 0;
		fclose(f);
	}
	return comm_cache[i].comm;
}

int session_finish(const struct session_opts *o)
{
	if (!o->cmd)
		return 0;
	int st = launch_wait_child();
	if (st < 0)
		return 0;
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "nanoprobe %s: %s was killed by signal %d\n", o->verb, o->cmd[0],
			WTERMSIG(st));
		return 128 + WTERMSIG(st);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 0;
}

/* What the engine says of each kind of miss (enum np_miss_reason). */
static const char *const miss_why[NP_MISS_REASONS] = {
	[NP_MISS_NESTED] = "hits not recorded: the probed code ran while a handler was running "
			   "on its thread (a signal handler interrupted it, or a handler called it)",
	[NP_MISS_NO_THREAD] = "hits not recorded: no memory was left for a thread's state",
	[NP_MISS_VECTOR] = "hits not recorded: a handler that may change vector registers met a "
			   "trampoline built before it, which does not save them",
	[NP_MISS_SHADOW_FULL] = "return events not recorded: more than 16,384 calls with return "
				"probes were in flight on one thread (deep recursion)",
	[NP_MISS_LEFT] = "return events not recorded: the call was left without returning "
			 "(longjmp, siglongjmp, a coroutine never resumed)",
	[NP_MISS_UNWOUND] = "return events not recorded: a stack unwinder went over the call (a "
			    "C++ exception, thread exit or cancellation, backtrace())",
	[NP_MISS_UNGUARDED] = "return events not recorded: return probes were turned off when a "
			      "module was loaded whose own unwinder cannot be found",
};

/* Misses by reason; what no reason covers (a miss counted before the
 * session's base was taken, say) as one more line. */
static void report_missed(const struct session_opts *o, const struct totals *t)
{
	uint64_t told = 0;
	for (int r = 0; r < NP_MISS_REASONS && r < NP_SHM_MISS_REASONS; r++) {
		uint64_t n = t->missed_why[r] < t->missed - told ? t->missed_why[r]
								  : t->missed - told;
		if (n)
			fprintf(stderr, "nanoprobe %s: %llu %s\n", o->verb, (unsigned long long)n,
				miss_why[r]);
		told += n;
	}
	if (t->missed > told)
		fprintf(stderr, "nanoprobe %s: %llu hits not recorded\n", o->verb,
			(unsigned long long)(t->missed - told));
}

void session_report(const struct session_opts *o, const struct probe_set *set,
		    const struct totals *t)
{
	report_missed(o, t);
	if (t->drops || t->no_ring)
		fprintf(stderr, "nanoprobe %s: %llu events lost to full buffers (--buffer-kb), "
				"%llu hits of threads that found every buffer taken\n",
			o->verb, (unsigned long long)t->drops, (unsigned long long)t->no_ring);
	if (t->corrupt)
		fprintf(stderr, "nanoprobe %s: %llu corrupt records skipped\n", o->verb,
			(unsigned long long)t->corrupt);
	for (size_t i = 0; i < set->n; i++)
		if (set->p[i].state == 0)
			/* the file may well have run, in a process the session did
			 * not trace: a child of the program (child.sh) */
			fprintf(stderr, "nanoprobe %s: %s:%s was never placed: the traced process "
					"never loaded %s (processes it starts are not traced)\n",
				o->verb, set->p[i].group, set->p[i].event, set->p[i].m.path);
}

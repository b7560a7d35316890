/* SPDX-License-Identifier: MIT */
/*
 * The traced tree: every process of it talks to the command through an
 * agent of its own, on a connection of its own, and they all share one
 * memory (src/agent/proto.h).
 *
 * Who joins. The processes the session starts from (the program started
 * with --, each process of -p) are its roots. A process the roots start
 * joins when its agent connects: a child they fork (its agent's thread,
 * src/agent/follow.c: NP_JOIN_FORK) and a program they exec (the agent is
 * preloaded again from the environment: NP_JOIN_IMAGE). Any agent of our
 * user (or any, for root) that says so is taken when its process is a
 * root, descends from a process of the tree, or carries this session's
 * socket name in its environment (a process the tree started that lost its
 * parent before its agent connected).
 *
 * What each gets. A fresh image (a root, an exec'd program) is sent the
 * probes as the single-process session always was, and the memory: the
 * first agent makes it and returns it with READY; every later image gets
 * it with HELLO and maps it. A forked child has its parent's probes and
 * mapping already: it only joins, so that its probes come out at the end.
 *
 * What is not traced is said. A process whose agent went away while it
 * lives has exec'd: its new image joins within a moment, or its program
 * could not take the agent (statically linked, set-user-ID, an environment
 * without LD_PRELOAD, or a -p session, whose processes have no agent in
 * their environment); after a second it is listed as not traced, with
 * the likely reason. A process the session does not follow (--no-follow)
 * says so itself (NP_JOIN_UNTRACED), and forked children that did not
 * follow are counted in the shared memory (session_report says how many).
 *
 * A copy made without fork's handlers (a raw clone or clone3, _Fork) has
 * no thread of the agent's: it records under its own pid from its first
 * hit and says so once (NP_JOIN_COPY, src/agent/copy.c), but cannot be
 * told to remove its probes. Its copy of its parent's connection keeps
 * that connection open while it lives; the session goes on while a copy
 * lives, does not wait for one to answer DETACH, and names those that
 * outlive it with their probes.
 *
 * The session ends when every agent has gone (the processes exited, or
 * removed their probes when told to), or when it is stopped (-d, a signal,
 * output that cannot be written): then every agent is told DETACH, and
 * waited for.
 */
#include "tree.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/vm.h"
#include "consume.h"
#include "launch.h"
#include "output/output.h"

#define CONNECT_TIMEOUT_MS 15000
#define READY_TIMEOUT_MS 60000
#define DETACH_TIMEOUT_MS 10000
#define JOIN_TIMEOUT_MS 2000 /* a connection says JOIN first, at once */
#define EXEC_GRACE_MS 1000   /* an exec'd image's agent connects by then */
#define POLL_MS 10
#define ACCEPTS_PER_ROUND 64 /* then the agents' messages get their turn */
#define REAP_EVERY_MS 500
#define UNTRACED_LISTED 10 /* processes named in the report; the rest counted */

/* One agent: a process of the tree, one image of it. */
struct conn {
	int fd;
	pid_t pid;
	uint32_t kind; /* enum np_join_kind */
	bool root, ready, detached, closed, told;
	uint32_t pending;
	uint64_t heard;  /* messages received */
	int shm_fd;      /* READY's, when this agent made the memory */
	int ready_flags; /* READY's recvmsg flags: MSG_CTRUNC says a descriptor was dropped */
};

/* A process that is about to exec (it said so), or whose agent went away
 * while it lives: its new image joins soon, or is not traced. */
struct gone {
	pid_t pid;
	uint64_t since;
	char path[256]; /* what it execs, "" when not told */
};

struct tree {
	const struct session_opts *o;
	const struct tree_start *s;
	struct probe_set *set;
	const struct session_ops *ops;
	struct totals *t;
	struct np_msg_hello hello;
	struct conn *c;
	size_t nc;
	pid_t *known; /* every process that joined, and the roots */
	size_t nknown;
	struct gone *gone;
	size_t ngone;
	pid_t *copies; /* NP_JOIN_COPY's: served by no agent (copy.c) */
	size_t ncopies;
	int shm_fd; /* the session's memory, once its first agent made it */
	struct consumer cons;
	bool cons_open;
	size_t roots_joined;
	uint64_t detach_sent;
};

static struct {
	pid_t pid;
	char exe[256];
	const char *why;
} untraced[UNTRACED_LISTED];
static size_t nuntraced;
static size_t joined; /* processes whose agents joined */
static struct {
	pid_t pid;
	char exe[256];
} kept[UNTRACED_LISTED]; /* copies that outlived the session, probes and all */
static size_t nkept;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool stopping(const struct tree *tr)
{
	return *tr->s->stop != 0;
}

/* --- sending --------------------------------------------------------------- */

static int send_all(int fd, const void *msg, size_t len)
{
	return send(fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EPIPE;
}

static int send_simple(int fd, uint32_t type)
{
	struct np_msg_simple m = {.type = type};
	return send_all(fd, &m, sizeof(m));
}

/* A message with a descriptor (SCM_RIGHTS). */
static int send_fd(int fd, const void *msg, size_t len, int pass)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c = {0};
	struct iovec iov = {(void *)msg, len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			   .msg_controllen = sizeof(c.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	return sendmsg(fd, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EPIPE;
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

/* HELLO (the memory with it once it exists), the program, the probes, GO. */
static int send_probes(const struct tree *tr, int fd)
{
	struct np_msg_hello h = tr->hello;
	if (tr->shm_fd >= 0)
		h.flags |= NP_HELLO_SHM_GIVEN;
	int rc = tr->shm_fd >= 0 ? send_fd(fd, &h, sizeof(h), tr->shm_fd)
				 : send_all(fd, &h, sizeof(h));
	if (!rc && h.script_len)
		rc = send_script(fd, tr->o->script);
	for (size_t i = 0; i < tr->set->n && !rc; i++)
		rc = send_all(fd, &tr->set->p[i].m, sizeof(tr->set->p[i].m));
	return rc ? rc : send_simple(fd, NP_MSG_GO);
}

/* --- messages from an agent -------------------------------------------------- */

/* A probe is placed once one process placed it; a refusal is said once. */
static void note_attached(struct tree *tr, const struct np_msg_attached *m)
{
	if (m->id >= tr->set->n)
		return;
	struct rprobe *r = &tr->set->p[m->id];
	if (r->state == 1 || (m->err && r->state == -1))
		return;
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

static void note_exec(struct tree *tr, pid_t pid, const char *path);

/* One message (none waiting: true, with MSG_DONTWAIT in flags); false
 * when the socket is closed. */
static bool read_message(struct tree *tr, struct conn *c, int flags)
{
	union {
		uint32_t type;
		struct np_msg_attached a;
		struct np_msg_simple s;
		struct np_msg_exec e;
	} m;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf)};
	ssize_t n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC | flags);
	int fd = n > 0 ? take_fd(&msg) : -1;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return !(c->closed = true);
	c->heard++;
	if (m.type == NP_MSG_ATTACHED && n == sizeof(m.a)) {
		note_attached(tr, &m.a);
	} else if (m.type == NP_MSG_READY && n == sizeof(m.s) && !c->ready) {
		c->shm_fd = fd;
		fd = -1;
		c->ready_flags = msg.msg_flags;
		c->pending = m.s.pending;
		c->ready = true;
	} else if (m.type == NP_MSG_DETACHED) {
		c->detached = true;
	} else if (m.type == NP_MSG_EXEC && n == sizeof(m.e)) {
		m.e.path[sizeof(m.e.path) - 1] = 0;
		note_exec(tr, m.e.pid, m.e.path);
	}
	if (fd >= 0)
		close(fd); /* nothing we asked for */
	return true;
}

static bool read_control(struct tree *tr, struct conn *c)
{
	return read_message(tr, c, 0);
}

/* Every message that waits: an exec's note is read before the new image's
 * JOIN is taken, which it preceded. */
static bool read_all(struct tree *tr, struct conn *c)
{
	uint64_t heard;
	do {
		heard = c->heard;
		if (!read_message(tr, c, MSG_DONTWAIT))
			return false;
	} while (c->heard != heard);
	return true;
}

static bool wait_control(struct tree *tr, struct conn *c, int ms)
{
	struct pollfd p = {c->fd, POLLIN, 0};
	if (poll(&p, 1, ms) <= 0)
		return true;
	return read_control(tr, c);
}

/* Given up during set-up: the agent is told, and waited for (it stops
 * placing probes and removes those it placed), so that the process is as
 * it was when we exit. */
static void call_off(struct tree *tr, struct conn *c)
{
	uint64_t deadline = now_ms() + DETACH_TIMEOUT_MS;
	send_simple(c->fd, NP_MSG_DETACH);
	c->told = true;
	while (!c->detached && !c->closed && now_ms() < deadline)
		wait_control(tr, c, 100);
}

/* Why a READY's memory is not what the session expects, as precisely as
 * the message says: seen once, under a loaded sanitizer run, unexplained. */
static void shm_mismatch(const struct conn *c, char *err, size_t errlen)
{
	if (c->shm_fd >= 0)
		snprintf(err, errlen, "the agent made a shared memory of its own, where the "
				      "session's was given");
	else if (c->ready_flags & MSG_CTRUNC)
		snprintf(err, errlen, "the agent's shared memory is not the session's: its "
				      "descriptor was dropped on the way (MSG_CTRUNC)");
	else
		snprintf(err, errlen, "the agent's shared memory is not the session's: its READY "
				      "came without the descriptor");
}

/* READY, as long as the agent makes progress: the placing of thousands of
 * probes in a loaded process is slow but reports each probe; an agent
 * that says nothing for READY_TIMEOUT_MS is stuck. The first agent
 * returns the memory it made. */
static int wait_ready(struct tree *tr, struct conn *c, char *err, size_t errlen)
{
	uint64_t heard = c->heard, deadline = now_ms() + READY_TIMEOUT_MS;
	while (!c->ready && !c->closed && !stopping(tr) && now_ms() < deadline) {
		wait_control(tr, c, 100);
		if (c->heard != heard)
			heard = c->heard, deadline = now_ms() + READY_TIMEOUT_MS;
	}
	if (c->ready && (c->shm_fd >= 0) == (tr->shm_fd < 0))
		return 0;
	if (c->closed) {
		snprintf(err, errlen, "the agent closed the connection during set-up");
		return -EPROTO;
	}
	call_off(tr, c);
	if (stopping(tr))
		snprintf(err, errlen, "interrupted while the agent placed the probes; %s",
			 c->detached ? "it removed those it had placed"
				     : "it was told to remove those it placed");
	else if (c->ready)
		shm_mismatch(c, err, errlen);
	else
		snprintf(err, errlen, "the agent placed no probe for %d s; %s",
			 READY_TIMEOUT_MS / 1000,
			 c->detached ? "it removed those it had placed"
				     : "it was told to remove those it placed");
	return -EPROTO;
}

/* --- fresh images ---------------------------------------------------------------- */

static size_t placed(const struct probe_set *set)
{
	size_t n = 0;
	for (size_t i = 0; i < set->n; i++)
		n += set->p[i].state >= 0; /* attached or waiting for its module */
	return n;
}

/* The first agent's memory: the consumer reads it, the verb sees it. */
static int open_memory(struct tree *tr, struct conn *c)
{
	tr->shm_fd = c->shm_fd;
	c->shm_fd = -1;
	int rc = consumer_open(&tr->cons, tr->shm_fd, &tr->hello, tr->set, tr->t);
	tr->cons.ops = tr->ops;
	tr->cons_open = rc == 0;
	if (!rc)
		session_note_clock(tr->o, tr->cons.shm);
	if (!rc && tr->ops->on_begin)
		tr->ops->on_begin(tr->shm_fd, &tr->hello, tr->ops->cookie);
	return rc;
}

/*
 * A fresh image: the probes, placed before a preloaded program goes on
 * from its constructor (GO). The first one makes the memory; when it could
 * place nothing, the session has failed: a program we started is then
 * killed where it waits, before its main, and never runs (told to go on,
 * it could run its main before the kill: cli-e2e saw its output, under
 * load). A later image placing nothing is no failure: its program may
 * simply not have the probed code.
 */
static int handshake(struct tree *tr, struct conn *c, char *err, size_t errlen)
{
	bool first = tr->shm_fd < 0;
	if (first)
		for (size_t i = 0; i < tr->set->n; i++)
			tr->set->p[i].state = 0;
	int rc = send_probes(tr, c->fd);
	if (!rc)
		rc = wait_ready(tr, c, err, errlen);
	else
		snprintf(err, errlen, "the agent closed the connection");
	if (!rc && first && !placed(tr->set)) {
		snprintf(err, errlen, "no probe could be placed");
		rc = -ENOENT;
	}
	if (!rc && first && open_memory(tr, c)) {
		snprintf(err, errlen, "the agent's shared memory is not what was asked for");
		rc = -EPROTO;
	}
	if (!rc && first && tr->ops->on_ready) /* a program we started has not run main yet */
		tr->ops->on_ready(tr->ops->cookie);
	bool preloaded = !(c->root && !tr->o->cmd); /* an injected root waits for nothing */
	if (preloaded && !(rc && first && tr->o->cmd))
		send_simple(c->fd, rc ? NP_MSG_DETACH : NP_MSG_GO);
	if (rc && c->shm_fd >= 0)
		close(c->shm_fd), c->shm_fd = -1;
	return rc;
}

/* --- who joins --------------------------------------------------------------------- */

static bool is_known(const struct tree *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->nknown; i++)
		if (tr->known[i] == pid)
			return true;
	return false;
}

static void add_known(struct tree *tr, pid_t pid)
{
	if (is_known(tr, pid))
		return;
	pid_t *v = realloc(tr->known, (tr->nknown + 1) * sizeof(*v));
	if (v)
		(tr->known = v)[tr->nknown++] = pid;
}

/* What /proc/PID/stat says after the name (which may hold anything, so
 * from its last ')'): "S PPID ...", in buf; NULL when it cannot be read. */
static const char *stat_after_name(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	const char *close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren + 2 : NULL;
}

/* The parent of pid, 0 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
	char buf[512];
	const char *rest = stat_after_name(pid, buf, sizeof(buf));
	int ppid = 0;
	return rest && sscanf(rest, "%*c %d", &ppid) == 1 ? (pid_t)ppid : 0;
}

/* Does pid's environment hold our socket's variable? A process the tree
 * started keeps it (a preloaded agent's), whoever its parent is now. */
static bool environ_ours(pid_t pid, const char *sock)
{
	char path[64], want[160];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int w = snprintf(want, sizeof(want), "%s=%s@", NP_AGENT_ENV_SOCK, sock);
	FILE *f = fopen(path, "re");
	bool found = false;
	char *line = NULL;
	size_t cap = 0;
	while (f && !found && getdelim(&line, &cap, 0, f) > 0)
		found = !strncmp(line, want, (size_t)w);
	free(line);
	if (f)
		fclose(f);
	return found;
}

static bool belongs(const struct tree *tr, pid_t pid)
{
	if (is_known(tr, pid))
		return true;
	pid_t p = pid;
	for (int depth = 0; depth < 64 && p > 1; depth++) {
		p = parent_of(p);
		if (is_known(tr, p))
			return true;
	}
	return environ_ours(pid, tr->s->sock);
}

/* Our user's agent (or anyone's, when we are root: a program we start may
 * change user before it execs, as setpriv and runuser do). */
static bool peer_ok(int fd, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	*pid = cred.pid;
	return cred.uid == geteuid() || geteuid() == 0;
}

static bool read_join(int fd, struct np_msg_join *j)
{
	struct pollfd p = {fd, POLLIN, 0};
	bool ok = poll(&p, 1, JOIN_TIMEOUT_MS) == 1 && recv(fd, j, sizeof(*j), 0) == sizeof(*j) &&
		  j->type == NP_MSG_JOIN && j->kind >= NP_JOIN_IMAGE && j->kind <= NP_JOIN_COPY;
	j->exe[sizeof(j->exe) - 1] = 0;
	return ok;
}

static void exe_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, buf, len - 1);
	snprintf(buf + (n > 0 ? n : 0), len - (size_t)(n > 0 ? n : 0), "%s", n > 0 ? "" : "?");
}

/* A process that is not traced, running exe ("": its /proc says), for the
 * report. */
static void note_untraced(pid_t pid, const char *exe, const char *why)
{
	if (nuntraced < UNTRACED_LISTED) {
		untraced[nuntraced].pid = pid;
		if (exe && exe[0])
			snprintf(untraced[nuntraced].exe, sizeof(untraced[nuntraced].exe), "%s", exe);
		else
			exe_of(pid, untraced[nuntraced].exe, sizeof(untraced[nuntraced].exe));
		untraced[nuntraced].why = why;
	}
	nuntraced++;
}

static void forget_gone(struct tree *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->ngone; i++)
		if (tr->gone[i].pid == pid)
			tr->gone[i--] = tr->gone[--tr->ngone];
}

static bool is_copy(const struct tree *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->ncopies; i++)
		if (tr->copies[i] == pid)
			return true;
	return false;
}

/* A copy joined (a note: it keeps no connection of its own), or, with
 * forked, a process taken for one in the moment between fork's system
 * call and its handlers, whose agent thread now joins. */
static void note_copy(struct tree *tr, pid_t pid, bool forked)
{
	for (size_t i = 0; forked && i < tr->ncopies; i++)
		if (tr->copies[i] == pid)
			tr->copies[i--] = tr->copies[--tr->ncopies];
	if (forked || is_copy(tr, pid))
		return;
	pid_t *v = realloc(tr->copies, (tr->ncopies + 1) * sizeof(*v));
	if (!v)
		return;
	(tr->copies = v)[tr->ncopies++] = pid;
	add_known(tr, pid);
	joined++;
	if (tr->ops->on_join)
		tr->ops->on_join(pid, tr->ops->cookie);
}

static struct conn *add_conn(struct tree *tr, int fd, pid_t pid, uint32_t kind)
{
	struct conn *v = realloc(tr->c, (tr->nc + 1) * sizeof(*v));
	if (!v)
		return NULL;
	tr->c = v;
	struct conn *c = &v[tr->nc++];
	*c = (struct conn){.fd = fd, .pid = pid, .kind = kind, .shm_fd = -1};
	for (size_t i = 0; i < tr->s->nroots; i++)
		c->root |= tr->s->roots[i] == pid;
	return c;
}

/* A connection with its JOIN read: one more process of the tree. 0, or -1
 * when the session failed (its first image could not be set up). */
static int join(struct tree *tr, int fd, pid_t pid, const struct np_msg_join *j, char *err,
		size_t errlen)
{
	if (j->kind == NP_JOIN_EXEC) { /* a note, on a connection of its own */
		note_exec(tr, pid, j->exe);
		close(fd);
		return 0;
	}
	if (j->kind == NP_JOIN_UNTRACED) {
		forget_gone(tr, pid);
		note_untraced(pid, j->exe, "the session does not follow the programs it runs "
					   "(--no-follow)");
		close(fd);
		return 0;
	}
	if (j->kind == NP_JOIN_COPY) {
		note_copy(tr, pid, false);
		close(fd);
		return 0;
	}
	if (j->kind == NP_JOIN_FORK && is_copy(tr, pid)) {
		note_copy(tr, pid, true);
		joined--; /* counted once */
	}
	/* an image: the exec of a process that had gone, which joined. Not a
	 * fork's JOIN: its thread may connect after the exec it raced with
	 * was noted (the exec kills it), and the note stands */
	if (j->kind == NP_JOIN_IMAGE)
		forget_gone(tr, pid);
	add_known(tr, pid);
	struct conn *c = add_conn(tr, fd, pid, j->kind);
	if (!c) {
		close(fd);
		return 0;
	}
	joined++;
	if (tr->ops->on_join)
		tr->ops->on_join(pid, tr->ops->cookie);
	if (c->root && j->kind == NP_JOIN_IMAGE && !tr->o->cmd)
		launch_inject_connected(pid); /* -p: the masks its threads block */
	if (stopping(tr) || tr->detach_sent) { /* too late: nothing to place */
		send_simple(fd, NP_MSG_DETACH);
		c->told = true;
		return 0;
	}
	if (j->kind != NP_JOIN_IMAGE)
		return 0;
	bool first = tr->shm_fd < 0;
	int rc = handshake(tr, c, err, errlen);
	if (c->root)
		tr->roots_joined++;
	if (rc && first) {
		if (tr->o->cmd)
			launch_kill_child(); /* before its main: it never ran */
		return -1;
	}
	if (rc)
		cli_error("process %d: %s", (int)pid, err);
	return 0;
}

static void conn_closed(struct tree *tr, struct conn *c);

/* A JOIN from our tree. A note (an exec to come, a process not followed)
 * may be read after its sender exited and was reaped: its own ancestry is
 * gone from /proc then, so the parent it named answers. So may a forked
 * child's JOIN: the child may exec at once, and the program it runs end,
 * before the JOIN is read; the exec's note waits behind it on the same
 * connection. */
static bool join_ours(const struct tree *tr, const struct np_msg_join *j)
{
	bool may_be_gone = j->kind == NP_JOIN_UNTRACED || j->kind == NP_JOIN_EXEC ||
			   j->kind == NP_JOIN_FORK || j->kind == NP_JOIN_COPY;
	return belongs(tr, j->pid) || (may_be_gone && belongs(tr, j->ppid));
}

static int accept_one(struct tree *tr, char *err, size_t errlen)
{
	struct np_msg_join j;
	pid_t pid;
	int fd = accept4(tr->s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return 0;
	/* an exec's note, sent before the exec, is queued by now: read it
	 * before the JOIN of the image it announced */
	for (size_t i = 0; i < tr->nc; i++)
		if (tr->c[i].fd >= 0 && !read_all(tr, &tr->c[i]))
			conn_closed(tr, &tr->c[i]);
	if (!peer_ok(fd, &pid) || !read_join(fd, &j) || j.pid != pid || !join_ours(tr, &j)) {
		close(fd); /* someone else: ignore */
		return 0;
	}
	return join(tr, fd, pid, &j, err, errlen);
}

/* --- processes that went away -------------------------------------------------------- */

/* Alive, and not a zombie. */
static bool alive(pid_t pid)
{
	char buf[512];
	const char *rest = stat_after_name(pid, buf, sizeof(buf));
	return rest && rest[0] != 'Z' && rest[0] != 'X';
}

static struct gone *find_gone(struct tree *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->ngone; i++)
		if (tr->gone[i].pid == pid)
			return &tr->gone[i];
	return NULL;
}

static struct gone *add_gone(struct tree *tr, pid_t pid)
{
	struct gone *g = find_gone(tr, pid);
	if (g)
		return g;
	struct gone *v = realloc(tr->gone, (tr->ngone + 1) * sizeof(*v));
	if (!v)
		return NULL;
	tr->gone = v;
	g = &v[tr->ngone++];
	*g = (struct gone){.pid = pid, .since = now_ms()};
	return g;
}

/* A process of the tree execs path (the last of several tries counts). */
static void note_exec(struct tree *tr, pid_t pid, const char *path)
{
	struct gone *g = add_gone(tr, pid);
	if (!g)
		return;
	g->since = now_ms();
	snprintf(g->path, sizeof(g->path), "%s", path);
}

/* An agent's connection ended: its process exec'd when it still lives. */
static void conn_closed(struct tree *tr, struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (!c->detached && !tr->detach_sent && alive(c->pid))
		add_gone(tr, c->pid);
}

/* Why the program a process exec'd did not take the agent. */
static const char *why_not_joined(const struct tree *tr, const char *exe)
{
	struct stat st;
	if (!tr->o->cmd)
		return "a process attached with -p has no agent in its environment for the "
		       "programs it execs";
	if (!tr->o->follow)
		return "the session does not follow the programs it runs (--no-follow)";
	if (exe[0] && launch_is_static(exe))
		return "a statically linked program cannot load the agent";
	if (exe[0] && stat(exe, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		return "a set-user-ID program ignores LD_PRELOAD";
	return "its program did not load the agent (its environment lost LD_PRELOAD?)";
}

/* Execs whose image has not joined within EXEC_GRACE_MS (all: now), said.
 * An exec that failed (a search through $PATH tries several) in a process
 * that has gone ran nothing. A process that announced no exec and is dead
 * now is settled at once: its agent's socket closed as it exited (the
 * kernel closes files before the process becomes a zombie, so it looked
 * alive then), and waiting would only keep the session a second longer
 * to drop it just the same. */
static void check_gone(struct tree *tr, bool all)
{
	uint64_t t = now_ms();
	for (size_t i = 0; i < tr->ngone; i++) {
		struct gone *g = &tr->gone[i];
		bool lives = alive(g->pid);
		if (!all && t - g->since < EXEC_GRACE_MS && (lives || g->path[0]))
			continue;
		char exe[256];
		snprintf(exe, sizeof(exe), "%s", g->path);
		if (lives && !exe[0])
			exe_of(g->pid, exe, sizeof(exe));
		if (lives || (exe[0] && access(exe, X_OK) == 0))
			note_untraced(g->pid, exe, why_not_joined(tr, exe));
		tr->gone[i--] = tr->gone[--tr->ngone];
	}
}

/* --- the session's loop ----------------------------------------------------------------- */

static size_t open_conns(const struct tree *tr)
{
	size_t n = 0;
	for (size_t i = 0; i < tr->nc; i++)
		n += tr->c[i].fd >= 0;
	return n;
}

static void detach_all(struct tree *tr)
{
	for (size_t i = 0; i < tr->nc; i++)
		if (tr->c[i].fd >= 0 && !tr->c[i].told) {
			send_simple(tr->c[i].fd, NP_MSG_DETACH);
			tr->c[i].told = true;
		}
}

/* A connection waits to be accepted (a child's note may wait behind
 * another, and must be read before the last agent's close ends the
 * session). */
static bool queued(const struct tree *tr)
{
	struct pollfd l = {tr->s->lfd, POLLIN, 0};
	return poll(&l, 1, 0) == 1 && (l.revents & POLLIN);
}

/* Every connection's messages now; a closed one is let go. */
static void read_conns(struct tree *tr, int ms)
{
	struct pollfd *p = calloc(tr->nc + 1, sizeof(*p));
	if (!p)
		return;
	p[0] = (struct pollfd){tr->s->lfd, POLLIN, 0};
	for (size_t i = 0; i < tr->nc; i++)
		p[i + 1] = (struct pollfd){tr->c[i].fd, POLLIN, 0};
	if (poll(p, tr->nc + 1, ms) > 0)
		for (size_t i = 0; i < tr->nc; i++)
			if (p[i + 1].revents && tr->c[i].fd >= 0 && !read_all(tr, &tr->c[i]))
				conn_closed(tr, &tr->c[i]);
	bool incoming = p[0].revents & POLLIN;
	free(p);
	for (int n = 0; incoming && n < ACCEPTS_PER_ROUND; n++) {
		char err[512];
		accept_one(tr, err, sizeof(err));
		incoming = queued(tr);
	}
}

static void interval_tick(struct tree *tr, struct totals *scratch)
{
	if (!tr->ops->on_interval || !tr->cons_open)
		return;
	consumer_totals(&tr->cons, scratch);
	tr->ops->on_interval(scratch, tr->ops->cookie);
}

static bool copy_lives(const struct tree *tr)
{
	for (size_t i = 0; i < tr->ncopies; i++)
		if (alive(tr->copies[i]))
			return true;
	return false;
}

/* Told DETACH: a connection that will answer no more. Its agent said
 * DETACHED, or its process has gone while a copy (copy.c) keeps the
 * connection open: what it sent before it went (an exec's note) is read
 * first. */
static bool answered(struct tree *tr, struct conn *c)
{
	if (c->fd < 0 || c->detached)
		return true;
	if (alive(c->pid))
		return false;
	if (!read_all(tr, c))
		conn_closed(tr, c);
	return true;
}

static bool finished(struct tree *tr, uint64_t t)
{
	if (tr->detach_sent) {
		bool all = true;
		for (size_t i = 0; i < tr->nc && all; i++)
			all = answered(tr, &tr->c[i]);
		/* the notes queued meanwhile are read first (an exec's, a copy's) */
		return (all && !queued(tr)) || t - tr->detach_sent > DETACH_TIMEOUT_MS;
	}
	return !open_conns(tr) && !tr->ngone && !queued(tr) && !copy_lives(tr);
}

/* The copies that outlive the session keep their probes: said. */
static void note_kept(const struct tree *tr)
{
	for (size_t i = 0; i < tr->ncopies; i++) {
		if (!alive(tr->copies[i]))
			continue;
		if (nkept < UNTRACED_LISTED) {
			kept[nkept].pid = tr->copies[i];
			exe_of(tr->copies[i], kept[nkept].exe, sizeof(kept[nkept].exe));
		}
		nkept++;
	}
}

/* Read events until every agent has gone or the session is stopped (-d,
 * a signal, output that cannot be written); then detach. */
static void run_loop(struct tree *tr, struct totals *scratch)
{
	const struct session_opts *o = tr->o;
	uint64_t start = now_ms(), last_reap = start, last_tick = start;
	for (;;) {
		uint64_t t = now_ms();
		bool expired = o->duration > 0 && t - start >= (uint64_t)(o->duration * 1000);
		/* results that cannot be written end the session as Ctrl-C would */
		if ((stopping(tr) || expired || output_error() != 0) && !tr->detach_sent) {
			tr->detach_sent = t;
			detach_all(tr);
		}
		if (finished(tr, t))
			break;
		read_conns(tr, POLL_MS);
		check_gone(tr, false);
		bool reap = t - last_reap >= REAP_EVERY_MS;
		consumer_drain(&tr->cons, tr->ops, reap);
		output_flush(); /* what this drain printed, in whole lines */
		last_reap = reap ? t : last_reap;
		if (o->interval > 0 && t - last_tick >= (uint64_t)(o->interval * 1000)) {
			interval_tick(tr, scratch);
			last_tick = t;
		}
	}
	consumer_drain(&tr->cons, tr->ops, false);
	output_flush();
}

/* The roots' first agent: the one that makes the memory, within
 * CONNECT_TIMEOUT_MS (its program gone or the user's interrupt ends the
 * wait). 0, or 1 after printing why the session could not start. */
static int first_join(struct tree *tr)
{
	char err[512] = "";
	uint64_t deadline = now_ms() + CONNECT_TIMEOUT_MS;
	while (tr->shm_fd < 0) {
		struct pollfd p = {tr->s->lfd, POLLIN, 0};
		if (stopping(tr)) {
			snprintf(err, sizeof(err), "interrupted before the agent connected");
			break;
		}
		if (tr->o->cmd && launch_child_exited(tr->s->roots[0])) {
			snprintf(err, sizeof(err), "the program exited before the agent started");
			break;
		}
		if (now_ms() >= deadline) {
			snprintf(err, sizeof(err), "the agent did not connect within %d s",
				 CONNECT_TIMEOUT_MS / 1000);
			break;
		}
		if (poll(&p, 1, 50) > 0 && accept_one(tr, err, sizeof(err)))
			break;
	}
	if (tr->shm_fd >= 0)
		return 0;
	fprintf(stderr, "nanoprobe %s: %s\n", tr->o->verb, err);
	return 1;
}

int tree_run(const struct session_opts *o, const struct tree_start *s, struct probe_set *set,
	     const struct session_ops *ops, struct totals *t, struct tree_end *end)
{
	struct tree tr = {.o = o, .s = s, .set = set, .ops = ops, .t = t, .hello = s->hello,
			  .shm_fd = -1};
	struct totals scratch;
	int rc = totals_alloc(&scratch, set) ? 1 : 0;
	for (size_t i = 0; i < s->nroots; i++)
		add_known(&tr, s->roots[i]);
	if (!rc)
		rc = first_join(&tr);
	if (!rc) {
		run_loop(&tr, &scratch);
		check_gone(&tr, true);
		note_kept(&tr);
		end->stopped = tr.detach_sent != 0;
		consumer_totals(&tr.cons, &scratch);
		totals_free(t);
		*t = scratch;
		scratch = (struct totals){0};
	}
	end->released = true;
	for (size_t i = 0; i < tr.nc; i++) {
		struct conn *c = &tr.c[i];
		end->released &= c->detached || c->closed || c->fd < 0;
		if (c->fd >= 0)
			close(c->fd);
		if (c->shm_fd >= 0)
			close(c->shm_fd);
	}
	if (tr.cons_open)
		consumer_close(&tr.cons);
	if (tr.shm_fd >= 0)
		close(tr.shm_fd);
	totals_free(&scratch);
	free(tr.c);
	free(tr.known);
	free(tr.gone);
	free(tr.copies);
	return rc;
}

void tree_report(const struct session_opts *o, const struct totals *t)
{
	for (size_t i = 0; i < nuntraced && i < UNTRACED_LISTED; i++)
		fprintf(stderr, "nanoprobe %s: process %d (%s) was not traced: %s\n", o->verb,
			(int)untraced[i].pid, untraced[i].exe, untraced[i].why);
	if (nuntraced > UNTRACED_LISTED)
		fprintf(stderr, "nanoprobe %s: %zu more processes were not traced\n", o->verb,
			nuntraced - UNTRACED_LISTED);
	for (size_t i = 0; i < nkept && i < UNTRACED_LISTED; i++)
		fprintf(stderr, "nanoprobe %s: process %d (%s) keeps its probes: it was made "
				"without fork's handlers (a clone system call or _Fork), and no thread "
				"of the agent's runs in it to remove them\n",
			o->verb, (int)kept[i].pid, kept[i].exe);
	if (nkept > UNTRACED_LISTED)
		fprintf(stderr, "nanoprobe %s: %zu more such processes keep their probes\n", o->verb,
			nkept - UNTRACED_LISTED);
	if (t->untraced_forks)
		fprintf(stderr, "nanoprobe %s: %llu process%s the traced program forked %s not "
				"traced (--no-follow)\n",
			o->verb, (unsigned long long)t->untraced_forks,
			t->untraced_forks == 1 ? "" : "es", t->untraced_forks == 1 ? "was" : "were");
	if (t->vfork_unrecorded)
		fprintf(stderr, "nanoprobe %s: %llu hits not recorded: a vfork child (posix_spawn) "
				"ran probed code before its exec, on a thread of its parent that had "
				"no buffer yet\n",
			o->verb, (unsigned long long)t->vfork_unrecorded);
}

size_t tree_processes(void)
{
	return joined;
}

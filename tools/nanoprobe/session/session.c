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

#include "agent/vm.h"
#include "consume.h"
#include <nanoprobe/nanoprobe.h>
#include "inject/inject.h"
#include "launch.h"
#include "output/output.h"
#include "tree.h"

/* Threads that can record at once (a ring each; rings of threads that exit
 * are reused). Memory is touched only as threads use it. */
#define RINGS_EVENTS 1024
#define RINGS_COUNTING 4096

static volatile sig_atomic_t stop_requested;
static bool stopped_by_us; /* -d or a signal ended the session */
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

/* --- the session ---------------------------------------------------------- */

static void forget_comms(void);

static int start_target(const struct session_opts *o, const char *sock, char *err,
			size_t errlen)
{
	/* -j on stdout: the program's own stdout goes to our stderr, so that
	 * ours holds JSON lines only */
	if (o->cmd)
		return launch_command(o->cmd, sock, o->json && !o->out_path, o->follow, &target_pid,
				      err, errlen);
	target_pid = o->pid;
	for (size_t i = 0; i < session_npids(o); i++) {
		int rc = launch_inject(session_pids(o)[i], sock, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* A latency session keeps a histogram per probe (proto.h, np_ring_hists). */
static bool wants_hists(const struct probe_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->p[i].m.action == NP_ACT_LATENCY)
			return true;
	return false;
}

int totals_alloc(struct totals *t, const struct probe_set *set)
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
void session_note_clock(const struct session_opts *o, const struct np_shm_header *hdr)
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

/* What every fresh image of the tree is told. */
static struct np_msg_hello hello_for(const struct session_opts *o, const struct probe_set *set,
				     const struct session_ops *ops)
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
				 clock_hello, o->follow ? NP_HELLO_FOLLOW : 0};
	if (o->script) {
		session_script_ring_extra = (o->script->thread_bytes + 4095) & ~4095ull;
		session_script_bytes = (o->script->shared_bytes + 4095) & ~4095ull;
	}
	return h;
}

int session_run(const struct session_opts *o, struct probe_set *set,
		const struct session_ops *ops, struct totals *t)
{
	char name[64], err[512];
	if (totals_alloc(t, set)) {
		totals_free(t);
		return fail(o, "out of memory");
	}
	if (clock_request(o, &clock_hello)) {
		totals_free(t);
		return 1;
	}
	forget_comms();
	int lfd = listen_abstract(name, sizeof(name));
	int rc = lfd < 0 ? fail(o, "cannot open the control socket") : 0;
	if (!rc) {
		catch_stop_signals();
		rc = start_target(o, name, err, sizeof(err)) ? fail(o, err) : 0;
	}
	struct tree_end end = {.released = true};
	if (!rc) {
		pid_t started = target_pid;
		struct tree_start s = {.lfd = lfd, .sock = name,
				       .roots = o->cmd ? &started : session_pids(o),
				       .nroots = o->cmd ? 1 : session_npids(o),
				       .hello = hello_for(o, set, ops), .stop = &stop_requested};
		rc = tree_run(o, &s, set, ops, t, &end);
	}
	stopped_by_us = end.stopped;
	if (lfd >= 0)
		close(lfd);
	if (!o->cmd)
		launch_inject_done(end.released);
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
	snprintf(path, sizeof(path), "/proc/%d/comm", tid); /* any process of the tree's */
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

/* Up to this many probes of one file are named one per line; more (a
 * wildcard over a library the program never loaded) are one line. */
#define UNPLACED_ONE_BY_ONE 3

static const struct probe_set *sort_set;

static int by_path(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(sort_set->p[i].m.path, sort_set->p[j].m.path);
	return c ? c : (i > j) - (i < j);
}

/* The probes of one file, [at, end) of order, that no traced process
 * placed. The file may well have run, in a process the session did not
 * trace: a child of the program (child.sh, --no-follow). */
static void report_unplaced_file(const struct session_opts *o, const struct probe_set *set,
				 const size_t *order, size_t at, size_t end)
{
	const char *path = set->p[order[at]].m.path;
	const char *why = o->follow ? "" : " (processes the program starts are not traced: "
					    "--no-follow)";
	if (end - at <= UNPLACED_ONE_BY_ONE) {
		for (size_t k = at; k < end; k++)
			fprintf(stderr, "nanoprobe %s: %s:%s was never placed: no traced process "
					"loaded %s%s\n",
				o->verb, set->p[order[k]].group, set->p[order[k]].event, path, why);
		return;
	}
	fprintf(stderr, "nanoprobe %s: %zu probes were never placed (", o->verb, end - at);
	for (size_t k = at; k < at + UNPLACED_ONE_BY_ONE; k++)
		fprintf(stderr, "%s:%s, ", set->p[order[k]].group, set->p[order[k]].event);
	fprintf(stderr, "and %zu more): no traced process loaded %s%s\n",
		end - at - UNPLACED_ONE_BY_ONE, path, why);
}

static void report_unplaced(const struct session_opts *o, const struct probe_set *set)
{
	size_t n = 0, *order = calloc(set->n ? set->n : 1, sizeof(*order));
	for (size_t i = 0; order && i < set->n; i++)
		if (set->p[i].state == 0)
			order[n++] = i;
	if (!order) { /* no memory for the groups: one line each */
		for (size_t i = 0; i < set->n; i++)
			if (set->p[i].state == 0)
				report_unplaced_file(o, set, &i, 0, 1);
		return;
	}
	sort_set = set;
	qsort(order, n, sizeof(*order), by_path);
	for (size_t at = 0, end; at < n; at = end) {
		for (end = at + 1; end < n && !strcmp(set->p[order[end]].m.path,
						      set->p[order[at]].m.path); end++)
			;
		report_unplaced_file(o, set, order, at, end);
	}
	free(order);
}

void session_report(const struct session_opts *o, const struct probe_set *set,
		    const struct totals *t)
{
	report_missed(o, t);
	tree_report(o, t);
	if (t->drops || t->no_ring)
		fprintf(stderr, "nanoprobe %s: %llu events lost to full buffers (--buffer-kb), "
				"%llu hits of threads that found every buffer taken\n",
			o->verb, (unsigned long long)t->drops, (unsigned long long)t->no_ring);
	if (t->corrupt)
		fprintf(stderr, "nanoprobe %s: %llu corrupt records skipped\n", o->verb,
			(unsigned long long)t->corrupt);
	report_unplaced(o, set);
}

/* SPDX-License-Identifier: MIT */
/*
 * The real-program rows of `nanoprobe bench`: a program unprobed, under
 * `nanoprobe count` (this executable), and under the kernel's uprobes with
 * the counting BPF program, in one run, the overhead in percent.
 *
 *   python3-json: a json encode/decode loop that times itself; entry and
 *     return probes on libc's malloc and free.
 *   redis-set, redis-get: redis-server on 127.0.0.1, started here and shut
 *     down after, under redis-benchmark; probes on processCommand,
 *     readQueryFromClient and call.
 *
 * The kernel's probes are placed on the child before it execs the program
 * (perf events follow a task across exec), and count only its hits. Rows
 * whose Debian packages are missing say which, and are skipped; nothing is
 * installed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_kernel.h"
#include "symbols/symtab.h"

/* The programs of the Debian packages, not whatever $PATH finds first (a
 * pyenv shim is a shell script that forks). */
#define PYTHON3 "/usr/bin/python3"
#define REDIS_SERVER "/usr/bin/redis-server"
#define REDIS_BENCHMARK "/usr/bin/redis-benchmark"

#define RUNS 3 /* each backend, interleaved; the median (python) or best (redis) */

struct probe_point {
	const char *lib;  /* np_resolve_path name, NULL: the program itself */
	const char *func;
};

/* A child started with its stdout in a temporary file. With a gate, it
 * waits until the gate closes before exec, so probes can go on it first. */
struct child {
	pid_t pid;
	int gate;   /* write end; -1 when none */
	FILE *out;
};

static int start_child(char **argv, bool gated, struct child *c)
{
	int gate[2] = {-1, -1};
	c->out = tmpfile();
	if (!c->out || (gated && pipe(gate)))
		return -errno;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		char b;
		if (gated) {
			close(gate[1]);
			if (read(gate[0], &b, 1) < 0)
				_exit(127);
			close(gate[0]);
		}
		dup2(fileno(c->out), 1);
		if (!getenv("NP_BENCH_DEBUG")) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (gated)
		close(gate[0]);
	c->gate = gated ? gate[1] : -1;
	return 0;
}

static void open_gate(struct child *c)
{
	if (c->gate >= 0)
		close(c->gate);
	c->gate = -1;
}

/* Wait for it; its whole stdout, malloc'd, or NULL. */
static char *finish_child(struct child *c)
{
	int st;
	open_gate(c);
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	size_t n = (size_t)ftell(c->out);
	char *s = malloc(n + 1);
	rewind(c->out);
	if (s)
		s[fread(s, 1, n, c->out)] = 0;
	fclose(c->out);
	return s;
}

/* The sum of every "count":N in `nanoprobe count -j` output. */
static uint64_t sum_counts(const char *s)
{
	uint64_t sum = 0;
	for (const char *p = s; p && (p = strstr(p, "\"count\":")); p += 8)
		sum += strtoull(p + 8, NULL, 10);
	return sum;
}

/* sum_counts of the file at path (`count -j -o path`), 0 if unreadable. */
static uint64_t file_counts(const char *path)
{
	FILE *f = fopen(path, "re");
	char buf[65536];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return sum_counts(buf);
}

/* Kernel uprobes (entry, and return if asked) on every point, for pid. */
static int kernel_probes(struct kcount *k, const char *prog, const struct probe_point *pts,
			 unsigned n, bool ret, pid_t pid, char *why, size_t len)
{
	for (unsigned i = 0; i < n; i++) {
		char path[PATH_MAX], err[256];
		struct np_symtab st;
		uint64_t off;
		if (np_resolve_program(pts[i].lib ? pts[i].lib : prog, 0, path, sizeof(path), NULL,
				       0, err, sizeof(err)) ||
		    np_symtab_load(path, &st, err, sizeof(err)))
			return snprintf(why, len, "%s", err), -ENOENT;
		const struct np_sym *s = np_symtab_find(&st, pts[i].func);
		int rc = s ? elf_vaddr_to_offset(path, s->addr, &off) : -ENOENT;
		np_symtab_free(&st);
		if (rc)
			return snprintf(why, len, "%.200s: no function %s", path, pts[i].func), rc;
		for (int r = 0; r <= (int)ret; r++)
			if ((rc = kcount_attach(k, path, off, r, pid, why, len)))
				return rc;
	}
	return 0;
}

/* --- python3 ------------------------------------------------------------- */

/* Records with a text field of 100 to 730 bytes: strings over 512 bytes
 * bypass Python's small-object allocator, so about 170 malloc and free
 * calls per loop reach libc (without it, json barely calls malloc). */
static const char py_workload[] =
	"import json, time\n"
	"rows = [{'id': i, 'name': 'item%d' % i, 'tags': ['a', 'b', str(i % 7)],"
	" 'price': i * 1.25, 'note': 'x' * (100 + 10 * (i % 64))} for i in range(200)]\n"
	"n = int(__import__('sys').argv[1])\n"
	"t = time.perf_counter()\n"
	"for _ in range(n):\n"
	"    rows = json.loads(json.dumps(rows, sort_keys=True))\n"
	"print('elapsed=%.6f' % (time.perf_counter() - t))\n";

static const struct probe_point py_points[] = {{"c", "malloc"}, {"c", "free"}};

/* One run: seconds of the loop (0 on failure), hits counted. */
static double python_run(const struct bench_opts *o, enum bench_backend b, struct kcount *k,
			 const char *iters, uint64_t *hits, char *why, size_t len)
{
	char *plain[] = {PYTHON3, "-c", (char *)py_workload, (char *)iters, NULL};
	/* The counts to a file of their own: with -j and no -o the started
	 * program's stdout goes to stderr (docs/cli.md), and its "elapsed="
	 * line is read from stdout here. */
	char counts[] = "/tmp/np-bench-counts-XXXXXX";
	int cfd = mkstemp(counts);
	if (cfd < 0)
		return snprintf(why, len, "cannot make a file for the counts: %s", strerror(errno)), 0;
	close(cfd);
	char *probed[] = {(char *)o->self, "count", "-j", "-o", counts, "c:malloc", "c:free",
			  "c:malloc%return", "c:free%return", "--", PYTHON3, "-c",
			  (char *)py_workload, (char *)iters, NULL};
	struct child c;
	if (start_child(b == BK_JUMP ? probed : plain, b == BK_KERNEL, &c)) {
		unlink(counts);
		return snprintf(why, len, "cannot start python3: %s", strerror(errno)), 0;
	}
	if (b == BK_KERNEL && kernel_probes(k, PYTHON3, py_points, 2, true, c.pid, why, len))
		kill(c.pid, SIGKILL);
	char *out = finish_child(&c);
	const char *e = out ? strstr(out, "elapsed=") : NULL;
	double secs = e ? strtod(e + 8, NULL) : 0;
	*hits = b == BK_KERNEL ? kcount_read(k) : b == BK_JUMP ? file_counts(counts) : 0;
	unlink(counts);
	if (b == BK_KERNEL)
		kcount_detach_all(k);
	if (!secs && !why[0])
		snprintf(why, len, "the python3 workload failed");
	free(out);
	return secs;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void python_rows(const struct bench_opts *o, struct kcount *k, const char *kernel_why)
{
	static const enum bench_backend order[] = {BK_NONE, BK_JUMP, BK_KERNEL};
	struct bench_row rows[3];
	double t[3][RUNS] = {{0}};
	char iters[16];
	/* about 1 s unprobed at -d 1 here; -d 0.1 gives the test a short run */
	snprintf(iters, sizeof(iters), "%d", (int)(o->seconds * 600) + 1);
	for (int i = 0; i < 3; i++) {
		rows[i] = (struct bench_row){.kind = ROW_PROGRAM, .backend = order[i], .cpus = 1,
					     .metric = "seconds"};
		snprintf(rows[i].bench, sizeof(rows[i].bench), "python3-json");
		if (!o->backend[order[i]])
			continue;
		if (access(PYTHON3, X_OK))
			snprintf(rows[i].skipped, sizeof(rows[i].skipped),
				 "needs the Debian package python3");
		else if (order[i] == BK_KERNEL && kernel_why[0])
			snprintf(rows[i].skipped, sizeof(rows[i].skipped), "%s", kernel_why);
	}
	for (int run = 0; run < RUNS; run++)
		for (int i = 0; i < 3; i++)
			if (o->backend[order[i]] && !rows[i].skipped[0])
				t[i][run] = python_run(o, order[i], k, iters, &rows[i].hits,
						       rows[i].skipped, sizeof(rows[i].skipped));
	for (int i = 0; i < 3; i++) {
		if (!o->backend[order[i]])
			continue;
		qsort(t[i], RUNS, sizeof(double), cmp_double);
		rows[i].value = t[i][RUNS / 2];
		if (i && !rows[0].skipped[0] && o->backend[BK_NONE] && rows[0].value > 0)
			rows[i].overhead_pct = (rows[i].value / rows[0].value - 1) * 100;
		bench_emit(o, &rows[i]);
	}
}

/* --- redis --------------------------------------------------------------- */

static const struct probe_point redis_points[] = {
	{NULL, "processCommand"}, {NULL, "readQueryFromClient"}, {NULL, "call"}};

/* A TCP port nobody listens on now. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Connect to the server; with cmd, send it (RESP inline) and close. */
static bool redis_send(int port, const char *cmd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (ok && cmd)
		ok = write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd);
	char b[64];
	if (ok && cmd)
		(void)!read(fd, b, sizeof(b)); /* the server closes on SHUTDOWN */
	if (fd >= 0)
		close(fd);
	return ok;
}

static bool wait_ready(int port, pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (redis_send(port, NULL))
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
	}
	return false;
}

/* redis-benchmark's --csv: "SET","81234.57",... -> rps of SET and GET. */
static bool redis_benchmark(int port, long requests, double rps[2])
{
	char p[16], n[24];
	snprintf(p, sizeof(p), "%d", port);
	snprintf(n, sizeof(n), "%ld", requests);
	char *argv[] = {REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", p, "-t", "set,get", "-n", n,
			"-q", "--csv", NULL};
	struct child c;
	if (start_child(argv, false, &c))
		return false;
	char *out = finish_child(&c);
	const char *s = out ? strstr(out, "\"SET\",\"") : NULL, *g = out ? strstr(out, "\"GET\",\"") : NULL;
	rps[0] = s ? strtod(s + 7, NULL) : 0;
	rps[1] = g ? strtod(g + 7, NULL) : 0;
	free(out);
	return rps[0] > 0 && rps[1] > 0;
}

static int redis_run(const struct bench_opts *o, enum bench_backend b, struct kcount *k,
		     double rps[2], uint64_t *hits, char *why, size_t len)
{
	int port = free_port();
	char p[16];
	snprintf(p, sizeof(p), "%d", port);
	char *server[] = {REDIS_SERVER, "--port", p, "--bind", "127.0.0.1", "--save", "",
			  "--appendonly", "no", "--loglevel", "warning", NULL};
	char *probed[] = {(char *)o->self, "count", "-j", "processCommand", "readQueryFromClient",
			  "call", "--", REDIS_SERVER, "--port", p, "--bind", "127.0.0.1",
			  "--save", "", "--appendonly", "no", "--loglevel", "warning", NULL};
	struct child c;
	if (port < 0 || start_child(b == BK_JUMP ? probed : server, b == BK_KERNEL, &c))
		return snprintf(why, len, "cannot start redis-server"), -1;
	if (b == BK_KERNEL &&
	    kernel_probes(k, REDIS_SERVER, redis_points, 3, false, c.pid, why, len))
		kill(c.pid, SIGKILL);
	open_gate(&c);
	long requests = (long)(o->seconds * 50000) + 1000;
	bool ok = !why[0] && wait_ready(port, c.pid) && redis_benchmark(port, requests, rps);
	if (!redis_send(port, "SHUTDOWN NOSAVE\r\n"))
		kill(c.pid, SIGTERM);
	char *out = finish_child(&c);
	*hits = b == BK_KERNEL ? kcount_read(k) : b == BK_JUMP ? sum_counts(out) : 0;
	if (b == BK_KERNEL)
		kcount_detach_all(k);
	free(out);
	if (!ok && !why[0])
		snprintf(why, len, "redis-server or redis-benchmark failed");
	return ok ? 0 : -1;
}

static void redis_rows(const struct bench_opts *o, struct kcount *k, const char *kernel_why)
{
	static const enum bench_backend order[] = {BK_NONE, BK_JUMP, BK_KERNEL};
	static const char *const names[2] = {"redis-set", "redis-get"};
	double best[3][2] = {{0}};
	uint64_t hits[3] = {0};
	char why[3][256] = {""};
	const char *need = access(REDIS_SERVER, X_OK)      ? "redis-server" :
			   access(REDIS_BENCHMARK, X_OK) ? "redis-tools" : NULL;
	for (int i = 0; i < 3; i++)
		if (need)
			snprintf(why[i], sizeof(why[i]), "needs the Debian package %s", need);
		else if (order[i] == BK_KERNEL && kernel_why[0])
			snprintf(why[i], sizeof(why[i]), "%s", kernel_why);
	for (int run = 0; run < RUNS; run++)
		for (int i = 0; i < 3; i++) {
			double rps[2];
			if (!o->backend[order[i]] || why[i][0] ||
			    redis_run(o, order[i], k, rps, &hits[i], why[i], sizeof(why[i])))
				continue;
			for (int t = 0; t < 2; t++)
				best[i][t] = rps[t] > best[i][t] ? rps[t] : best[i][t];
		}
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < 3; i++) {
			if (!o->backend[order[i]] || !bench_selected(o, names[t]))
				continue;
			struct bench_row r = {.kind = ROW_PROGRAM, .backend = order[i], .cpus = 1,
					      .metric = "rps", .value = best[i][t], .hits = hits[i]};
			snprintf(r.bench, sizeof(r.bench), "%s", names[t]);
			snprintf(r.skipped, sizeof(r.skipped), "%s", why[i]);
			if (i && best[0][t] > 0)
				r.overhead_pct = (1 - best[i][t] / best[0][t]) * 100;
			bench_emit(o, &r);
		}
}

int bench_programs(const struct bench_opts *o)
{
	bool py = bench_selected(o, "python3-json");
	bool redis = bench_selected(o, "redis-set") || bench_selected(o, "redis-get");
	if (!py && !redis)
		return 0;
	struct kcount k = {.map_fd = -1, .prog_fd = -1};
	char kernel_why[256] = "";
	if (o->backend[BK_KERNEL])
		kcount_open(&k, kernel_why, sizeof(kernel_why));
	if (py)
		python_rows(o, &k, kernel_why);
	if (redis)
		redis_rows(o, &k, kernel_why);
	kcount_close(&k);
	return 0;
}

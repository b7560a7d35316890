/* SPDX-License-Identifier: MIT */
/*
 * The programs of the program rows of `nanoprobe bench`, each set up with
 * its workload in a private directory, ready for bench_tools.c to start
 * under each tool:
 *
 *   python3-json: a json encode/decode loop that times itself; entry and
 *     return probes on libc's malloc and free.
 *   sqlite3: the sqlite3 shell on a :memory: database (inserts, an index,
 *     joins, an update, a delete), timed by itself; an entry probe on every
 *     function of libsqlite3 (`'libsqlite3:*'`: 2,661 on Debian 12).
 *   redis-set, redis-get: redis-server on 127.0.0.1 under
 *     redis-benchmark; probes on processCommand, readQueryFromClient and
 *     call, 3 hits per request.
 *
 * The programs are the Debian packages'; when one is missing, the rows say
 * which package it is. Nothing is installed.
 */
#include "bench_workloads.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbols/symtab.h"

/* The programs of the Debian packages, not whatever $PATH finds first (a
 * pyenv shim is a shell script that forks). */
#define PYTHON3 "/usr/bin/python3"
#define SQLITE3 "/usr/bin/sqlite3"
#define REDIS_SERVER "/usr/bin/redis-server"
#define REDIS_BENCHMARK "/usr/bin/redis-benchmark"

/* --- setting a program up ------------------------------------------------ */

static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	char buf[1 << 16];
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	int rc = in < 0 || out < 0 || n < 0 ? -errno : 0;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) && !rc)
		rc = -errno;
	return rc;
}

static int cmp_point(const void *a, const void *b)
{
	const struct prog_point *x = a, *y = b;
	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return (int)x->ret - (int)y->ret;
}

/* Copy file `from` into the program's directory as `name` and point the
 * spec at the copy: the functions matching each glob (entry, and return
 * when asked) become its probe points. */
static int probe_copy(struct workload *w, const char *from, const char *name, mode_t mode,
		      const char *const *globs, bool ret, char *why, size_t len)
{
	struct prog_spec *p = &w->spec;
	snprintf(p->file, sizeof(p->file), "%s/%s", p->dir, name);
	if (copy_file(from, p->file, mode))
		return snprintf(why, len, "cannot copy %s: %s", from, strerror(errno)), -1;
	struct np_symtab st;
	char err[256];
	if (np_symtab_load(p->file, &st, err, sizeof(err)))
		return snprintf(why, len, "%s", err), -1;
	for (int g = 0; globs[g]; g++) {
		const struct np_sym **m = NULL;
		size_t n = np_symtab_match(&st, globs[g], &m);
		struct prog_point *pts = realloc(p->pts, (p->n + n * (1 + ret)) * sizeof(*pts));
		if (!n || !pts) {
			free(m);
			np_symtab_free(&st);
			return snprintf(why, len, "%s: no function %s", from, globs[g]), -1;
		}
		p->pts = pts;
		for (size_t i = 0; i < n; i++)
			for (int r = 0; r <= (int)ret; r++) {
				struct prog_point *pt = &p->pts[p->n++];
				*pt = (struct prog_point){.vaddr = m[i]->addr, .ret = r};
				snprintf(pt->name, sizeof(pt->name), "%s", m[i]->name);
				if (elf_vaddr_to_offset(p->file, pt->vaddr, &pt->offset))
					pt->offset = pt->vaddr;
			}
		free(m);
	}
	np_symtab_free(&st);
	qsort(p->pts, p->n, sizeof(*p->pts), cmp_point);
	return 0;
}

/* nanoprobe count's specs: FILE:GLOB, and FILE:GLOB%return when asked. */
static void np_specs(struct workload *w, const char *const *globs, bool ret)
{
	int n = 0;
	for (int g = 0; globs[g] && n < 6; g++)
		for (int r = 0; r <= (int)ret && n < 6; r++) {
			snprintf(w->specs[n], sizeof(w->specs[n]), "%s:%s%s", w->spec.file,
				 globs[g], r ? "%return" : "");
			w->spec.np_specs[n] = w->specs[n];
			n++;
		}
	w->spec.np_specs[n] = NULL;
}

/* A file in the program's directory with this text; its path in out. */
static int dir_file(struct workload *w, const char *name, const char *text, char *out,
		    size_t len)
{
	snprintf(out, len, "%s/%s", w->spec.dir, name);
	FILE *f = fopen(out, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

/* Records with a text field of 100 to 730 bytes: strings over 512 bytes
 * bypass Python's small-object allocator, so about 170 malloc and free
 * calls per loop reach libc (without it, json barely calls malloc). */
static const char py_workload[] =
	"import json, sys, time\n"
	"rows = [{'id': i, 'name': 'item%d' % i, 'tags': ['a', 'b', str(i % 7)],"
	" 'price': i * 1.25, 'note': 'x' * (100 + 10 * (i % 64))} for i in range(200)]\n"
	"n = int(sys.argv[1])\n"
	"start, t = time.time(), time.perf_counter()\n"
	"for _ in range(n):\n"
	"    rows = json.loads(json.dumps(rows, sort_keys=True))\n"
	"t = time.perf_counter() - t\n"
	"print('start=%.6f end=%.6f elapsed=%.6f' % (start, time.time(), t))\n";

static int setup_python(const struct bench_opts *o, struct workload *w, char *why, size_t len)
{
	static const char *const globs[] = {"malloc", "free", NULL};
	char libc[PATH_MAX], err[256];
	if (np_resolve_library("libc.so.6", PYTHON3, 0, libc, sizeof(libc), err, sizeof(err)))
		return snprintf(why, len, "%s", err), -1;
	if (probe_copy(w, libc, "libc.so.6", 0644, globs, true, why, len) ||
	    dir_file(w, "json_loop.py", py_workload, w->script, sizeof(w->script)))
		return why[0] ? -1 : (snprintf(why, len, "cannot write a script"), -1);
	np_specs(w, globs, true);
	snprintf(w->spec.ld_path, sizeof(w->spec.ld_path), "%s", w->spec.dir);
	/* about 1 s unprobed at -d 1 here; -d 0.1 gives the test a short run */
	snprintf(w->arg, sizeof(w->arg), "%d", (int)(o->seconds * 600) + 1);
	char *argv[] = {PYTHON3, w->script, w->arg, NULL};
	memcpy(w->spec.argv, argv, sizeof(argv));
	return 0;
}

/* The join is the quadratic part: 5,000 items make 1.8M calls into the
 * library, 0.1 to 0.15 s unprobed here. julianday('now') has millisecond
 * resolution. */
static const char sql_workload[] =
	"CREATE TABLE clock(t REAL);\n"
	"INSERT INTO clock VALUES (julianday('now'));\n"
	"CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, price REAL);\n"
	"CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT);\n"
	"CREATE INDEX item_grp ON item(grp);\n"
	"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50)\n"
	"  INSERT INTO grp SELECT i, 'group ' || i FROM c;\n"
	"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)\n"
	"  INSERT INTO item(name, grp, price) SELECT 'item ' || i, i %% 50 + 1, i * 0.25 FROM c;\n"
	"SELECT g.label, count(*), sum(i.price) FROM item i JOIN grp g ON g.id = i.grp\n"
	"  GROUP BY g.label ORDER BY 3 DESC LIMIT 3;\n"
	"SELECT count(*) FROM item a JOIN item b ON a.grp = b.grp AND b.id = a.id + 50\n"
	"  WHERE a.price > 100;\n"
	"UPDATE item SET price = price * 1.1 WHERE grp IN\n"
	"  (SELECT id FROM grp WHERE label LIKE '%%7');\n"
	"DELETE FROM item WHERE id %% 3 = 0;\n"
	"SELECT count(*), avg(price) FROM item;\n"
	"SELECT printf('start=%%.3f end=%%.3f elapsed=%%.3f', (t - 2440587.5) * 86400.0,\n"
	"  (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - t) * 86400.0) FROM clock;\n";

static int setup_sqlite(const struct bench_opts *o, struct workload *w, char *why, size_t len)
{
	static const char *const globs[] = {"*", NULL};
	char lib[PATH_MAX], err[256], sql[sizeof(sql_workload) + 16];
	if (np_resolve_library("libsqlite3.so.0", SQLITE3, 0, lib, sizeof(lib), err, sizeof(err)))
		return snprintf(why, len, "%s", err), -1;
	int items = (int)(o->seconds * 5000);
	snprintf(sql, sizeof(sql), sql_workload, items < 100 ? 100 : items);
	if (probe_copy(w, lib, "libsqlite3.so.0", 0644, globs, false, why, len) ||
	    dir_file(w, "workload.sql", sql, w->script, sizeof(w->script)))
		return why[0] ? -1 : (snprintf(why, len, "cannot write the workload"), -1);
	np_specs(w, globs, false);
	snprintf(w->spec.ld_path, sizeof(w->spec.ld_path), "%s", w->spec.dir);
	char *argv[] = {SQLITE3, "-init", w->script, ":memory:", ".quit", NULL};
	memcpy(w->spec.argv, argv, sizeof(argv));
	return 0;
}

static int setup_redis(const struct bench_opts *o, struct workload *w, char *why, size_t len)
{
	(void)o;
	static const char *const globs[] = {"processCommand", "readQueryFromClient", "call", NULL};
	if (probe_copy(w, REDIS_SERVER, "redis-server", 0755, globs, false, why, len))
		return -1;
	np_specs(w, globs, false);
	snprintf(w->conf, sizeof(w->conf), "%s/redis.conf", w->spec.dir);
	char *argv[] = {w->spec.file, w->conf, NULL};
	memcpy(w->spec.argv, argv, sizeof(argv));
	return 0;
}

/* Every file of the program's directory, then the directory. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX + 256];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

static const struct {
	const char *rows[2], *metric, *program, *package;
	int (*setup)(const struct bench_opts *, struct workload *, char *, size_t);
} kinds[] = {
	[WL_PYTHON] = {{"python3-json"}, "seconds", PYTHON3, "python3", setup_python},
	[WL_SQLITE] = {{"sqlite3"}, "seconds", SQLITE3, "sqlite3", setup_sqlite},
	[WL_REDIS] = {{"redis-set", "redis-get"}, "rps", REDIS_SERVER, "redis-server", setup_redis},
};

int workload_make(const struct bench_opts *o, enum workload_kind kind, struct workload *w,
		  char *why, size_t len)
{
	*w = (struct workload){.rows = {kinds[kind].rows[0], kinds[kind].rows[1]},
			       .metric = kinds[kind].metric};
	const char *need = access(kinds[kind].program, X_OK) ? kinds[kind].package :
			   kind == WL_REDIS && access(REDIS_BENCHMARK, X_OK) ? "redis-tools" : NULL;
	if (need)
		return snprintf(why, len, "needs the Debian package %s", need), -1;
	snprintf(w->spec.dir, sizeof(w->spec.dir), "/tmp/np-bench-XXXXXX");
	if (!mkdtemp(w->spec.dir))
		return snprintf(why, len, "cannot make a directory in /tmp: %s", strerror(errno)), -1;
	w->made = true;
	return kinds[kind].setup(o, w, why, len);
}

void workload_free(struct workload *w)
{
	free(w->spec.pts);
	w->spec.pts = NULL;
	if (w->made)
		remove_dir(w->spec.dir);
	w->made = false;
}

/* --- redis --------------------------------------------------------------- */

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
bool redis_send(int port, const char *cmd)
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

/* Until the server answers, as long as its tool runs: bpftrace takes
 * minutes to place thousands of probes, seconds for three. */
bool redis_ready(int port, struct tool_run *t)
{
	for (int i = 0; i < 600 * 50; i++) {
		if (redis_send(port, NULL))
			return true;
		if (!tool_alive(t))
			return false;
		nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
	}
	return false;
}

/* redis-benchmark's --csv: "SET","81234.57",... -> rps of SET and GET. */
bool redis_benchmark(int port, long requests, double rps[2])
{
	char p[16], n[24];
	snprintf(p, sizeof(p), "%d", port);
	snprintf(n, sizeof(n), "%ld", requests);
	char *argv[] = {REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", p, "-t", "set,get", "-n", n,
			"-q", "--csv", NULL};
	FILE *out = tmpfile();
	if (!out)
		return false;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fileno(out), 1);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0), dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	char buf[4096];
	rewind(out);
	buf[fread(buf, 1, sizeof(buf) - 1, out)] = 0;
	fclose(out);
	const char *s = strstr(buf, "\"SET\",\""), *g = strstr(buf, "\"GET\",\"");
	rps[0] = s ? strtod(s + 7, NULL) : 0;
	rps[1] = g ? strtod(g + 7, NULL) : 0;
	return rps[0] > 0 && rps[1] > 0;
}

int redis_next_port(struct workload *w)
{
	char text[256];
	w->port = free_port();
	snprintf(text, sizeof(text),
		 "port %d\nbind 127.0.0.1\nsave \"\"\nappendonly no\nloglevel warning\n",
		 w->port);
	FILE *f = fopen(w->conf, "we");
	if (!f || w->port < 0)
		return f ? (fclose(f), -1) : -1;
	fputs(text, f);
	return fclose(f) ? -1 : 0;
}


/* SPDX-License-Identifier: MIT */
/*
 * Starting a program under each tool of the program rows, and reading
 * back what the tool counted at each probe point.
 *
 *   none      the program alone.
 *   jump      `nanoprobe count -j -o FILE SPECS -- PROGRAM`.
 *   kernel    the program forked and held at a gate before exec; kernel
 *             uprobes counted by the bench's BPF program go on its pid,
 *             then the gate opens (perf events and uprobe_multi links
 *             follow the task across exec).
 *   bpftrace  `bpftrace --unsafe -o FILE -c 'PROGRAM' SCRIPT`, the script
 *             `uprobe:FILE:0xADDR, ... { @[probe] = count(); }`: -c starts
 *             the program only once every probe is attached. Addresses,
 *             not names: bpftrace's wildcard sees only the functions with
 *             a symbol (1,370 of libsqlite3's 2,661; the others are known
 *             by their .eh_frame entries), and --unsafe lets it probe an
 *             address that no symbol covers.
 *   frida     frida_count.py (built into this executable) under the Python
 *             that has Frida: it spawns the program suspended, attaches an
 *             Interceptor listener with a native CModule callback to each
 *             function, resumes it and writes the counts when it exits.
 *
 * Nothing is installed: a tool that is missing makes its rows say which
 * package provides it.
 */
#include "bench_tools.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frida_count.h" /* frida_count_py: frida_count.py's text */

#define BPFTRACE "/usr/bin/bpftrace"
#define KERNEL_MULTI_MIN 16 /* from this many probes, one uprobe_multi link */

double realtime_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *frida_python(void)
{
	const char *py = getenv("NP_BENCH_FRIDA_PYTHON");
	return py && *py ? py : "python3";
}

/* Run argv to its end with no input or output: its exit status, or -1. */
static int run_quietly(char *const argv[])
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void tool_available(const struct bench_opts *o, enum bench_backend b, char *why, size_t len)
{
	(void)o;
	why[0] = 0;
	if (b == BK_BPFTRACE && access(BPFTRACE, X_OK))
		snprintf(why, len, "needs the Debian package bpftrace");
	else if (b == BK_BPFTRACE && geteuid() != 0)
		snprintf(why, len, "bpftrace needs root");
	else if (b == BK_FRIDA &&
		 run_quietly((char *[]){(char *)frida_python(), "-c", "import frida", NULL}))
		snprintf(why, len, "needs the Python package frida for %s (python3 -m venv V && "
			 "V/bin/pip install frida; NP_BENCH_FRIDA_PYTHON=V/bin/python3)",
			 frida_python());
}

/* The environment of the program, the same under every tool (the tool's
 * own, if it adds any, aside): how many allocations Python makes as it
 * starts depends on its locale and environment, so one run's hits could
 * otherwise differ from another's by a few. HOME and XDG_CACHE_HOME are
 * passed on, for tools that keep a cache there. */
struct prog_env {
	char *envp[8];
	char ld[PATH_MAX + 32], home[PATH_MAX + 8], cache[PATH_MAX + 24];
};

static void prog_env(const struct prog_spec *p, struct prog_env *e)
{
	int n = 0;
	e->envp[n++] = "PATH=/usr/bin:/bin";
	e->envp[n++] = "LC_ALL=C.UTF-8";
	if (p->ld_path[0])
		snprintf(e->ld, sizeof(e->ld), "LD_LIBRARY_PATH=%s", p->ld_path), e->envp[n++] = e->ld;
	if (getenv("HOME"))
		snprintf(e->home, sizeof(e->home), "HOME=%s", getenv("HOME")), e->envp[n++] = e->home;
	if (getenv("XDG_CACHE_HOME"))
		snprintf(e->cache, sizeof(e->cache), "XDG_CACHE_HOME=%s", getenv("XDG_CACHE_HOME")),
			e->envp[n++] = e->cache;
	e->envp[n] = NULL;
}

/* Fork argv with its output in temporary files, its environment envp
 * (NULL: ours); gated: held before exec until t->gate is closed. */
static int spawn(char *const argv[], char *const envp[], bool gated, struct tool_run *t)
{
	int gate[2] = {-1, -1};
	t->out = tmpfile();
	t->err = tmpfile();
	fflush(NULL);
	t->launched = realtime_now();
	if (!t->out || !t->err || (gated && pipe2(gate, O_CLOEXEC)) || (t->pid = fork()) < 0) {
		int err = errno;
		if (t->out)
			fclose(t->out);
		if (t->err)
			fclose(t->err);
		t->out = t->err = NULL;
		return -err;
	}
	if (t->pid == 0) {
		char b;
		if (gated)
			close(gate[1]); /* the gate opens when the parent's end closes */
		if (gated && read(gate[0], &b, 1) < 0)
			_exit(127);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(fileno(t->out), 1);
		dup2(fileno(t->err), 2);
		execvpe(argv[0], argv, envp ? envp : environ);
		_exit(127);
	}
	if (gated)
		close(gate[0]);
	t->gate = gated ? gate[1] : -1;
	return 0;
}

static void open_gate(struct tool_run *t)
{
	if (t->gate >= 0)
		close(t->gate);
	t->gate = -1;
}

/* --- starting ------------------------------------------------------------ */

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

static int start_kernel(const struct prog_spec *p, struct tool_run *t, char *const envp[],
			char *why, size_t len)
{
	if (spawn(p->argv, envp, true, t))
		return snprintf(why, len, "cannot start %s: %s", p->argv[0], strerror(errno)), -1;
	int rc = 0;
	if (p->n < KERNEL_MULTI_MIN) {
		for (size_t i = 0; !rc && i < p->n; i++)
			rc = kcount_attach(t->k, p->file, p->pts[i].offset, p->pts[i].ret, t->pid, why,
					   len);
	} else {
		/* uprobe_multi links, a counter per probe: perf events would
		 * cost a grace period each to remove (about 110 ms here: minutes
		 * for a library's every function) */
		uint64_t *off = calloc(p->n, sizeof(*off)), *slot = calloc(p->n, sizeof(*slot));
		for (int ret = 0; off && slot && !rc && ret < 2; ret++) {
			unsigned n = 0;
			for (size_t i = 0; i < p->n; i++)
				if (p->pts[i].ret == ret)
					off[n] = p->pts[i].offset, slot[n++] = i;
			rc = n ? kcount_attach_each(t->k, p->file, off, slot, n, ret, t->pid,
						    (unsigned)p->n, why, len) : 0;
		}
		rc = off && slot ? rc : (snprintf(why, len, "out of memory"), -ENOMEM);
		free(off);
		free(slot);
	}
	if (rc)
		kill(t->pid, SIGKILL);
	open_gate(t);
	return rc ? -1 : 0;
}

/* The probes as a bpftrace script, by address. */
static int bpftrace_script(const struct prog_spec *p, const char *path)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "%s:%s:0x%llx%s\n", p->pts[i].ret ? "uretprobe" : "uprobe", p->file,
			(unsigned long long)p->pts[i].vaddr, i + 1 < p->n ? "," : "");
	fprintf(f, "{ @[probe] = count(); }\n");
	return fclose(f) ? -errno : 0;
}

static int start_bpftrace(const struct prog_spec *p, struct tool_run *t, char *const envp[],
			  char *why, size_t len)
{
	char script[PATH_MAX + 16], cmd[8192] = "/usr/bin/env -i", probes[64], progs[64];
	snprintf(script, sizeof(script), "%s/probes.bt", p->dir);
	if (bpftrace_script(p, script))
		return snprintf(why, len, "cannot write %s: %s", script, strerror(errno)), -1;
	/* -c splits its command at spaces: the environment through env(1) */
	size_t at = strlen(cmd);
	for (char *const *e = envp; *e && at < sizeof(cmd); e++)
		at += (size_t)snprintf(cmd + at, sizeof(cmd) - at, " %s", *e);
	for (char *const *a = p->argv; *a && at < sizeof(cmd); a++)
		at += (size_t)snprintf(cmd + at, sizeof(cmd) - at, " %s", *a);
	/* its defaults allow 512 probes and programs */
	snprintf(probes, sizeof(probes), "BPFTRACE_MAX_PROBES=%zu", p->n + 16);
	snprintf(progs, sizeof(progs), "BPFTRACE_MAX_BPF_PROGS=%zu", p->n + 16);
	char *argv[] = {BPFTRACE, "--unsafe", "-o", t->result, "-c", cmd, script, NULL};
	char *env[] = {probes, progs, "PATH=/usr/bin:/bin", NULL};
	if (spawn(argv, env, false, t))
		return snprintf(why, len, "cannot start bpftrace: %s", strerror(errno)), -1;
	return 0;
}

/* The lowest vaddr a PT_LOAD segment of the ELF file at path maps: where
 * its module starts in Frida's view. */
static int elf_load_base(const char *path, uint64_t *base)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -ENOEXEC;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n = 0;
	*base = UINT64_MAX;
	for (size_t i = 0; e && !elf_getphdrnum(e, &n) && i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < *base) {
			*base = ph.p_vaddr & ~(uint64_t)0xfff;
			rc = 0;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

/* The probes for frida_count.py: the file, then "ADDRESS [return]" from
 * its lowest loaded address. */
static int frida_spec(const struct prog_spec *p, const char *path)
{
	uint64_t base = 0;
	FILE *f = elf_load_base(p->file, &base) ? NULL : fopen(path, "we");
	if (!f)
		return -1;
	fprintf(f, "%s\n", p->file);
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "0x%llx%s\n", (unsigned long long)(p->pts[i].vaddr - base),
			p->pts[i].ret ? " return" : "");
	return fclose(f) ? -errno : 0;
}

static int start_frida(const struct prog_spec *p, struct tool_run *t, char *const envp[],
		       char *why, size_t len)
{
	char driver[PATH_MAX + 32], spec[PATH_MAX + 32];
	snprintf(driver, sizeof(driver), "%s/frida_count.py", p->dir);
	snprintf(spec, sizeof(spec), "%s/frida.spec", p->dir);
	if (write_file(driver, frida_count_py) || frida_spec(p, spec))
		return snprintf(why, len, "cannot write in %s: %s", p->dir, strerror(errno)), -1;
	char *argv[32] = {(char *)frida_python(), driver, spec, t->result};
	int n = 4;
	for (char *const *e = envp; *e && n < 12; e++)
		argv[n++] = *e;
	argv[n++] = "--";
	for (char *const *a = p->argv; *a && n < 31; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	if (spawn(argv, NULL, false, t))
		return snprintf(why, len, "cannot start %s: %s", argv[0], strerror(errno)), -1;
	return 0;
}

static int start_nanoprobe(const struct bench_opts *o, const struct prog_spec *p,
			   struct tool_run *t, struct prog_env *e, char *why, size_t len)
{
	/* the program inherits nanoprobe's environment, and its agent's
	 * variables; NANOPROBE_AGENT finds the agent of a copied executable */
	char agent[PATH_MAX + 32], *envp[10];
	int ne = 0;
	for (char *const *v = e->envp; *v; v++)
		envp[ne++] = *v;
	if (getenv("NANOPROBE_AGENT"))
		snprintf(agent, sizeof(agent), "NANOPROBE_AGENT=%s", getenv("NANOPROBE_AGENT")),
			envp[ne++] = agent;
	envp[ne] = NULL;
	char *argv[40] = {(char *)o->self, "count", "-j", "-o", t->result};
	int n = 5;
	for (const char *const *s = p->np_specs; *s && n < 20; s++)
		argv[n++] = (char *)*s;
	argv[n++] = "--";
	for (char *const *a = p->argv; *a && n < 39; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	if (spawn(argv, envp, false, t))
		return snprintf(why, len, "cannot start nanoprobe: %s", strerror(errno)), -1;
	return 0;
}

int tool_start(const struct bench_opts *o, enum bench_backend b, const struct prog_spec *p,
	       struct kcount *k, struct tool_run *t, char *why, size_t len)
{
	*t = (struct tool_run){.b = b, .gate = -1, .k = k, .pid = -1};
	snprintf(t->result, sizeof(t->result), "%s/counts-%s", p->dir, bench_backend_names[b]);
	unlink(t->result);
	struct prog_env e;
	prog_env(p, &e);
	switch (b) {
	case BK_NONE:
		if (spawn(p->argv, e.envp, false, t))
			return snprintf(why, len, "cannot start %s: %s", p->argv[0],
					strerror(errno)), -1;
		return 0;
	case BK_JUMP: return start_nanoprobe(o, p, t, &e, why, len);
	case BK_KERNEL: return start_kernel(p, t, e.envp, why, len);
	case BK_BPFTRACE: return start_bpftrace(p, t, e.envp, why, len);
	case BK_FRIDA: return start_frida(p, t, e.envp, why, len);
	default: return snprintf(why, len, "no program rows for this backend"), -1;
	}
}

bool tool_alive(struct tool_run *t)
{
	if (!t->reaped && waitpid(t->pid, &t->status, WNOHANG) == t->pid)
		t->reaped = true;
	return !t->reaped;
}

/* The whole of a temporary file, malloc'd; closes it. */
static char *slurp(FILE *f)
{
	if (!f)
		return NULL;
	long n = ftell(f);
	char *s = malloc(n > 0 ? (size_t)n + 1 : 1);
	rewind(f);
	if (s)
		s[n > 0 ? fread(s, 1, (size_t)n, f) : 0] = 0;
	fclose(f);
	return s;
}

/* The last non-empty line of s into why. */
static void last_line(const char *s, char *why, size_t len)
{
	const char *end = s + strlen(s);
	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	const char *start = end;
	while (start > s && start[-1] != '\n')
		start--;
	snprintf(why, len, "%.*s", (int)(end - start), start);
}

char *tool_finish(struct tool_run *t, double *ended, char *why, size_t len)
{
	open_gate(t);
	while (!t->reaped && waitpid(t->pid, &t->status, 0) < 0 && errno == EINTR)
		;
	t->reaped = true;
	*ended = realtime_now();
	char *err = slurp(t->err);
	if (err && getenv("NP_BENCH_DEBUG"))
		fputs(err, stderr);
	bool ok = WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0;
	if (!ok && err && !why[0]) {
		char line[200];
		last_line(err, line, sizeof(line));
		snprintf(why, len, "%s exited with status %d%s%s", bench_backend_names[t->b],
			 WIFEXITED(t->status) ? WEXITSTATUS(t->status) : 128 + WTERMSIG(t->status),
			 line[0] ? ": " : "", line);
	}
	free(err);
	return slurp(t->out);
}

/* --- reading the counts -------------------------------------------------- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	return slurp(f);
}

/* A point's index by (address, return); the points are sorted by both. */
static long point_at(const struct prog_spec *p, uint64_t vaddr, bool ret)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct prog_point *m = &p->pts[mid];
		if (m->vaddr == vaddr && m->ret == ret)
			return (long)mid;
		if (m->vaddr < vaddr || (m->vaddr == vaddr && m->ret < ret))
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* A point's index by nanoprobe's probe name ("malloc", "malloc%return"). */
static long point_named(const struct prog_spec *p, const char *name, size_t len)
{
	bool ret = len > 7 && !memcmp(name + len - 7, "%return", 7);
	size_t base = ret ? len - 7 : len;
	for (size_t i = 0; i < p->n; i++)
		if (p->pts[i].ret == ret && strlen(p->pts[i].name) == base &&
		    !memcmp(p->pts[i].name, name, base))
			return (long)i;
	return -1;
}

/* `count -j`: {"func":..,"probe":"NAME",..,"count":N,..,"placed":BOOL} each. */
static void parse_nanoprobe(const char *s, const struct prog_spec *p, struct tool_counts *c)
{
	for (size_t i = 0; i < p->n; i++)
		c->state[i] = PT_REFUSED;
	for (const char *q = s; (q = strstr(q, "\"probe\":\"")); ) {
		q += 9;
		const char *end = strchr(q, '"'), *n = strstr(q, "\"count\":"),
			   *pl = strstr(q, "\"placed\":"), *m = strstr(q, "\"missed\":");
		if (!end || !n || !pl || !m)
			break;
		c->missed += strtoull(m + 9, NULL, 10);
		long i = point_named(p, q, (size_t)(end - q));
		uint64_t hits = strtoull(n + 8, NULL, 10);
		c->total += hits;
		if (i >= 0 && !strncmp(pl + 9, "true", 4)) {
			c->per[i] = hits;
			c->state[i] = PT_PLACED;
		}
	}
}

/* bpftrace's map: "@[uprobe:FILE:ADDRESS]: N" a line. */
static void parse_bpftrace(const char *s, const struct prog_spec *p, struct tool_counts *c)
{
	for (const char *q = s; (q = strstr(q, "@[")); q++) {
		bool ret = !strncmp(q + 2, "uretprobe:", 10);
		const char *close = strstr(q, "]: ");
		if (!close)
			break;
		const char *colon = close;
		while (colon > q && *colon != ':')
			colon--;
		uint64_t hits = strtoull(close + 3, NULL, 10);
		long i = point_at(p, strtoull(colon + 1, NULL, 0), ret);
		c->total += hits;
		if (i >= 0)
			c->per[i] = hits;
	}
}

/* frida_count.py: "COUNT placed|redirected|refused REASON" a line, in order. */
static void parse_frida(const char *s, const struct prog_spec *p, struct tool_counts *c)
{
	const char *line = s;
	for (size_t i = 0; i < p->n && *line; i++) {
		char *state;
		c->per[i] = strtoull(line, &state, 10);
		c->total += c->per[i];
		const char *next = strchr(state, '\n');
		line = next ? next + 1 : state + strlen(state);
		state += *state == ' ';
		if (!strncmp(state, "redirected", 10)) {
			c->state[i] = PT_REDIRECTED;
		} else if (!strncmp(state, "refused", 7)) {
			c->state[i] = PT_REFUSED;
		}
	}
}

int tool_counts(struct tool_run *t, const struct prog_spec *p, struct tool_counts *c, char *why,
		size_t len)
{
	*c = (struct tool_counts){0};
	if (t->b == BK_NONE)
		return 0;
	c->per = calloc(p->n, sizeof(*c->per));
	c->state = calloc(p->n, 1);
	if (t->b == BK_KERNEL) {
		c->missed = kcount_missed(t->k);
		c->placed = p->n;
		if (t->k->each_n && c->per && !kcount_read_each(t->k, c->per)) {
			for (size_t i = 0; i < p->n; i++)
				c->total += c->per[i];
			return 0;
		}
		tool_counts_free(c); /* one counter for every probe */
		c->total = kcount_read(t->k);
		return 0;
	}
	char *s = read_file(t->result);
	if (!s || !c->per || !c->state) {
		free(s);
		tool_counts_free(c);
		return snprintf(why, len, "%s wrote no counts to %s", bench_backend_names[t->b],
				t->result), -1;
	}
	if (t->b == BK_JUMP)
		parse_nanoprobe(s, p, c);
	else if (t->b == BK_BPFTRACE)
		parse_bpftrace(s, p, c);
	else
		parse_frida(s, p, c);
	free(s);
	for (size_t i = 0; i < p->n; i++)
		c->placed += c->state[i] == PT_PLACED, c->redirected += c->state[i] == PT_REDIRECTED,
			c->refused += c->state[i] == PT_REFUSED;
	return 0;
}

void tool_counts_free(struct tool_counts *c)
{
	free(c->per);
	free(c->state);
	c->per = NULL;
	c->state = NULL;
}

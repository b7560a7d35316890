/* SPDX-License-Identifier: MIT */
/*
 * nanoprobe run: bpftrace programs against a user-space process.
 *
 *   nanoprobe run -e 'uprobe:c:malloc /arg0 > 4096/ { @big[ustack(5)] = count(); }' -- app
 *   nanoprobe run script.bt -p 4242
 *
 * The way through: the program is parsed (parse.c), typed (check.c) and
 * compiled to bytecode (compile.c) before anything is touched; its
 * uprobes are resolved like every other verb's specs (resolve.c); the
 * session (session.c) hands the agent the bytecode with the probes, and
 * the agent runs a probe's block on every hit, in the traced thread
 * (src/agent/vm.c). Maps live in the shared memory; this command reads
 * them, runs BEGIN, END and interval blocks itself with the same
 * interpreter, and prints what the records ask for as bpftrace would.
 *
 * A program with no probe in a process (only BEGIN, END, interval) runs here alone,
 * as bpftrace runs it, with no process.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "inject/inject.h"
#include "output/output.h"
#include "runtime.h"
#include "session/session.h"
#include "symbols/usdt.h"

#define CMD_RING_BYTES (1u << 20)
#define RUN_RINGS 256

struct run {
	struct program prog;
	struct compiled comp;
	struct script_rt rt;
	struct probe_set set;
	struct spec *specs;
	size_t nspecs;
	struct session_opts o;
	const char *text;     /* -e, or the file's contents */
	char *owned_text;
	char **c_words;       /* -c CMD split */
	bool exited;          /* exit() was called: records are ignored */
	bool ending;          /* but END's are printed */
	/* the command's own ring, for BEGIN, END and interval blocks */
	struct np_ring *cmd_ring;
	unsigned char *cmd_data;
	uint8_t *shm_map;
	size_t shm_map_size;
	uint64_t start_ns;
	uint64_t *next_due;   /* per program probe: interval's next run */
	char *main_path;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- records ---------------------------------------------------------------- */

static void handle_record(struct run *r, const unsigned char *rec, uint32_t len)
{
	struct np_rec h;
	if (len < sizeof(h) || (r->exited && !r->ending))
		return;
	memcpy(&h, rec, sizeof(h));
	unsigned kind = h.reserved >> 24;
	uint32_t id = h.reserved & 0xffffff;
	if (kind == VM_REC_EXIT) {
		if (r->ending)
			return;
		r->exited = true;
		session_request_stop();
		return;
	}
	print_record(&r->rt, kind, id, h.probe, rec + sizeof(h), len - (uint32_t)sizeof(h));
}

static void on_record(const unsigned char *rec, uint32_t len, int tid, const char *comm,
		      void *cookie)
{
	(void)tid, (void)comm;
	handle_record(cookie, rec, len);
}

/* The records a block run here left in the command's ring. */
static void drain_cmd_ring(struct run *r)
{
	struct np_ring *ring = r->cmd_ring;
	while (ring->tail < ring->head) {
		uint32_t off = (uint32_t)(ring->tail & (CMD_RING_BYTES - 1));
		struct np_rec h;
		memcpy(&h, r->cmd_data + off, sizeof(h));
		if (h.probe != NP_REC_PAD)
			handle_record(r, r->cmd_data + off, h.len);
		ring->tail += h.len;
	}
	fflush(r->rt.out);
}

/* Run program probe `pr`'s block here (BEGIN, END, interval). */
static void run_here(struct run *r, const struct probe *pr)
{
	if (!r->rt.shared || (r->exited && pr->attach->kind != PK_END))
		return;
	uint32_t id = (uint32_t)(r->set.n + (size_t)pr->index);
	struct np_vm_site site = {
		.prog = r->comp.prog, .shared = r->rt.shared, .block = (uint32_t)pr->index,
		.probe = id, .probe_key = id, .func_key = id,
		.uid = (uint64_t)getuid(), .gid = (uint64_t)getgid(), .start_ns = r->start_ns,
	};
	np_vm_site_bind(&site);
	struct np_vm_env env = {
		.site = &site, .thread = r->rt.fold, .ring = r->cmd_ring, .ring_data = r->cmd_data,
		.ring_bytes = CMD_RING_BYTES, .pid = (uint64_t)getpid(),
	};
	np_vm_run(&env);
	drain_cmd_ring(r);
}

static void run_kind(struct run *r, enum probe_kind kind)
{
	for (struct probe *pr = r->prog.probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next)
			if (a->kind == kind)
				run_here(r, pr);
}

static void run_intervals(struct run *r)
{
	uint64_t now = mono_ns();
	for (struct probe *pr = r->prog.probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next)
			if (a->kind == PK_INTERVAL && now >= r->next_due[pr->index]) {
				r->next_due[pr->index] += a->period_ns;
				if (r->next_due[pr->index] < now)
					r->next_due[pr->index] = now + a->period_ns;
				run_here(r, pr);
			}
}

static bool has_kind(const struct program *p, enum probe_kind kind)
{
	for (struct probe *pr = p->probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next)
			if (a->kind == kind)
				return true;
	return false;
}

/* --- the session's memory ------------------------------------------------------ */

static void on_begin(int fd, const struct np_msg_hello *h, void *cookie)
{
	struct run *r = cookie;
	struct stat st;
	if (r->shm_map || fstat(fd, &st))
		return;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return;
	struct np_shm_header hd;
	memcpy(&hd, p, sizeof(hd));
	uint64_t want = (r->comp.prog->shared_bytes + 4095) & ~4095ull;
	if (hd.nprobes != h->nprobes || hd.nrings != h->nrings ||
	    hd.ring_extra < r->comp.prog->thread_bytes || hd.script_bytes < want ||
	    hd.script_off > (uint64_t)st.st_size || (uint64_t)st.st_size - hd.script_off < want ||
	    np_shm_size(hd.nprobes, hd.nrings, hd.ring_stride) > (uint64_t)st.st_size ||
	    hd.ring_stride != np_ring_stride_extra(hd.nprobes, hd.ring_bytes, hd.ring_extra)) {
		munmap(p, (size_t)st.st_size);
		fprintf(stderr, "nanoprobe run: the agent's shared memory is not what was asked for\n");
		return;
	}
	r->shm_map = p;
	r->shm_map_size = (size_t)st.st_size;
	r->rt.shm = p;
	r->rt.nprobes = hd.nprobes;
	r->rt.nrings = hd.nrings;
	r->rt.ring_bytes = hd.ring_bytes;
	r->rt.stride = hd.ring_stride;
	r->rt.shared = (uint8_t *)p + hd.script_off;
	r->start_ns = mono_ns();
	/* the program's mappings now, while it lives: stacks are named at the end */
	if (!r->rt.sym)
		r->rt.sym = symbolizer_new(session_pid(), r->main_path);
	if (r->rt.sym)
		symbolizer_refresh(r->rt.sym);
	run_kind(r, PK_BEGIN);
}

/* A thread is gone: its aggregations into ours, its area wiped for the
 * next thread (its entries would otherwise count twice). */
static void on_reap(uint32_t i, void *cookie)
{
	struct run *r = cookie;
	if (!r->rt.shm || i >= r->rt.nrings)
		return;
	struct np_ring *ring = np_shm_ring(r->rt.shm, r->rt.nprobes, r->rt.stride, i);
	uint8_t *area = np_ring_extra(ring, r->rt.nprobes, r->rt.ring_bytes);
	map_fold_area(&r->rt, area);
	uint64_t len = r->rt.stride - np_ring_base_size(r->rt.nprobes, r->rt.ring_bytes);
	if (len && madvise(area, len, MADV_REMOVE))
		memset(area, 0, len);
}

/* A process of the tree: its own mappings name its stacks and symbols
 * (VM_USTACK and usym() record its pid), read now while it lives and
 * again at the end. */
static void on_join(pid_t pid, void *cookie)
{
	struct run *r = cookie;
	char link[64], exe[NP_PATH_MAX];
	for (size_t i = 0; i < r->rt.nsyms; i++)
		if (r->rt.syms[i].pid == pid) {
			symbolizer_refresh(r->rt.syms[i].sym); /* an exec'd image */
			return;
		}
	struct pid_sym *v = realloc(r->rt.syms, (r->rt.nsyms + 1) * sizeof(*v));
	if (!v)
		return;
	r->rt.syms = v;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	struct symbolizer *s = symbolizer_new(pid, n > 0 ? exe : r->main_path);
	if (!s)
		return;
	symbolizer_refresh(s);
	v[r->rt.nsyms++] = (struct pid_sym){pid, s};
}

static void on_interval(const struct totals *t, void *cookie)
{
	(void)t;
	run_intervals(cookie);
}

/* --- resolving the uprobes -------------------------------------------------------- */

static int add_names(struct run *r, size_t from, const struct attach *a)
{
	for (size_t i = from; i < r->set.n; i++) {
		struct rprobe *p = &r->set.p[i];
		char **pn = realloc(r->rt.probe_names, (i + 1) * sizeof(*pn));
		char **fn = realloc(r->rt.func_names, (i + 1) * sizeof(*fn));
		if (pn)
			r->rt.probe_names = pn;
		if (fn)
			r->rt.func_names = fn;
		if (!pn || !fn)
			return -ENOMEM;
		const char *func = p->func[0] ? p->func : p->event;
		const char *target = a->target[0] ? a->target : r->main_path;
		int w = a->kind == PK_USDT /* its group is sdt_PROVIDER */
				? asprintf(&pn[i], "usdt:%s:%s:%s", target, p->group + 4, p->event)
				: asprintf(&pn[i], "%s:%s:%s",
					   a->kind == PK_URETPROBE ? "uretprobe" : "uprobe", target,
					   func);
		if (w < 0)
			pn[i] = NULL;
		fn[i] = strdup(func);
	}
	return 0;
}

/* Attach points in the traced process: uprobes, uretprobes, usdt. */
static bool in_process(enum probe_kind k)
{
	return k == PK_UPROBE || k == PK_URETPROBE || k == PK_USDT;
}

static size_t count_uprobes(const struct program *p)
{
	size_t n = 0;
	for (struct probe *pr = p->probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next)
			n += in_process(a->kind);
	return n;
}

static int resolve_uprobe(struct run *r, const struct attach *a, const char *main_path,
			  char *err, size_t errlen)
{
	struct spec *s = &r->specs[r->nspecs++];
	s->text = a->text;
	s->is_return = a->kind == PK_URETPROBE;
	snprintf(s->path, sizeof(s->path), "%s", a->target);
	snprintf(s->symbol, sizeof(s->symbol), "%s", a->func);
	s->offset = a->offset;
	return resolve_spec(&r->set, s, r->o.pid, main_path, NP_ACT_SCRIPT, err, errlen);
}

static int resolve_one(struct run *r, const struct probe *pr, const struct attach *a,
		       const char *main_path, char *err, size_t errlen)
{
	if (a->kind != PK_USDT)
		return resolve_uprobe(r, a, main_path, err, errlen);
	struct usdt_spec u = {.text = a->text, .path = a->target, .provider = a->provider,
			      .name = a->func, .max_arg = pr->max_arg};
	return resolve_usdt(&r->set, &u, r->o.pid, main_path, NP_ACT_SCRIPT, err, errlen);
}

static int resolve_probes(struct run *r)
{
	char err[1024], main_path[NP_PATH_MAX];
	for (size_t i = 0; i < r->o.npids; i++)
		if (np_inject_check_pid(r->o.pids[i], err, sizeof(err)))
			return fprintf(stderr, "nanoprobe run: %s\n", err), 1;
	if (session_main_path(&r->o, main_path, sizeof(main_path), err, sizeof(err)))
		return fprintf(stderr, "nanoprobe run: %s\n", err), 1;
	r->main_path = strdup(main_path);
	r->specs = calloc(count_uprobes(&r->prog) + 1, sizeof(*r->specs));
	if (!r->specs || !r->main_path)
		return 1;
	for (struct probe *pr = r->prog.probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next) {
			if (!in_process(a->kind))
				continue;
			size_t before = r->set.n;
			if (resolve_one(r, pr, a, main_path, err, sizeof(err))) {
				fprintf(stderr, "nanoprobe run: %s: %s\n", a->text, err);
				return 1;
			}
			for (size_t k = before; k < r->set.n; k++) {
				r->set.p[k].m.strategy = (uint8_t)r->o.strategy;
				r->set.p[k].m.block = (uint32_t)pr->index;
				r->set.p[k].m.script_regs = pr->uses_ustack;
			}
			if (add_names(r, before, a))
				return 1;
		}
	if (r->set.n >= NP_REC_PAD)
		return fprintf(stderr, "nanoprobe run: %zu probes; at most %d\n", r->set.n,
			       NP_REC_PAD - 1), 1;
	return 0;
}

static char **sort_names; /* lowest_ids' qsort, on one thread */

static const char *sorted_name(uint32_t i)
{
	return sort_names[i] ? sort_names[i] : "";
}

static int by_name_then_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(sorted_name(x), sorted_name(y));
	return c ? c : x < y ? -1 : x > y;
}

/* The lowest id of a name in names[0..n), for each: what `probe` and
 * `func` hold, so that two probes of one name are one map key. */
static int lowest_ids(char **names, size_t n, uint32_t *out)
{
	uint32_t *order = malloc((n + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	sort_names = names;
	qsort(order, n, sizeof(*order), by_name_then_id);
	for (size_t i = 0, first = 0; i < n; i++) {
		if (i && strcmp(sorted_name(order[first]), sorted_name(order[i])))
			first = i;
		out[order[i]] = order[first];
	}
	free(order);
	return 0;
}

static int assign_keys(struct run *r)
{
	uint32_t *pk = calloc(r->set.n + 1, sizeof(*pk)), *fk = calloc(r->set.n + 1, sizeof(*fk));
	if (!pk || !fk) {
		free(pk), free(fk);
		return -ENOMEM;
	}
	int rc = lowest_ids(r->rt.probe_names, r->set.n, pk) ||
		 lowest_ids(r->rt.func_names, r->set.n, fk) ? -ENOMEM : 0;
	for (size_t i = 0; !rc && i < r->set.n; i++) {
		r->set.p[i].m.probe_key = pk[i];
		r->set.p[i].m.func_key = fk[i];
	}
	free(pk), free(fk);
	return rc;
}

/* Names for the probes the command runs: after the resolved ones. */
static int name_own_probes(struct run *r)
{
	size_t n = r->set.n + (size_t)r->prog.nprobes;
	char **pn = realloc(r->rt.probe_names, (n + 1) * sizeof(*pn));
	char **fn = pn ? realloc(r->rt.func_names, (n + 1) * sizeof(*fn)) : NULL;
	if (pn)
		r->rt.probe_names = pn;
	if (!pn || !fn)
		return -ENOMEM;
	r->rt.func_names = fn;
	for (struct probe *pr = r->prog.probes; pr; pr = pr->next) {
		pn[r->set.n + (size_t)pr->index] = strdup(pr->attach->text);
		fn[r->set.n + (size_t)pr->index] = strdup("");
	}
	r->rt.nids = n;
	return 0;
}

/* --- the command line ---------------------------------------------------------------- */

/* -c "CMD ARGS": words split at spaces, quotes kept together. */
static char **split_words(const char *s)
{
	size_t cap = 8, n = 0;
	char **v = calloc(cap, sizeof(*v));
	while (v && *s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		char *w = malloc(strlen(s) + 1), *o = w;
		char quote = 0;
		if (!w)
			break;
		for (; *s && (quote || (*s != ' ' && *s != '\t')); s++) {
			if ((*s == '"' || *s == '\'') && (!quote || quote == *s)) {
				quote = quote ? 0 : *s;
				continue;
			}
			*o++ = *s;
		}
		*o = 0;
		if (n + 2 > cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = w;
		v[n] = NULL;
	}
	return v;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	char chunk[4096];
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (len + n + 1 > cap) {
			char *b = realloc(buf, cap = (len + n + 1) * 2);
			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[len] = 0;
	return buf;
}

enum { OPT_STRATEGY = 3000, OPT_BUFFER, OPT_MAP_KEYS, OPT_NO_FOLLOW };

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "nanoprobe run: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

static const struct cli_opt run_own[] = {
	{'e', "program", "PROGRAM", "the program to run (else the FILE given)"},
	{'p', "pid", "PID", "attach to the running process PID (repeat, or PID,PID: several)"},
	{'c', "command", "CMD", "start CMD (a command line, split at spaces) and trace it"},
	{'d', "duration", "SECONDS", "stop after SECONDS (fractions allowed)"},
	{'o', "output", "FILE", "the output to FILE, not stdout"},
	{'f', "format", "FORMAT", "text, or json: bpftrace's JSON lines"},
	{OPT_STRATEGY, "strategy", "S", "place every probe by S: auto, jump or trap"},
	{OPT_BUFFER, "buffer-kb", "N", "event ring per thread in KiB: 4..65536, a power of 2"},
	{OPT_MAP_KEYS, "map-keys", "N", "keys per map at most (default 4096; 1024 for hist, lhist)"},
	{OPT_NO_FOLLOW, "no-follow", NULL, "trace the process alone, not the processes it starts"},
	{0},
};
static const struct cli_opt *const run_opts[] = {run_own, NULL};

static int parse_args(struct run *r, int argc, char **argv, struct compile_opts *co,
		      const char **file, const char **format)
{
	struct option longs[16];
	char shortopts[32];
	int end = argc, opt;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			end = i;
			if (i + 1 >= argc)
				return usage_error("nothing to run after --%s", "");
			r->o.cmd = argv + i + 1;
			break;
		}
	cli_getopt_tables(run_opts, shortopts, sizeof(shortopts), longs, 16);
	optind = 1;
	char *e;
	long v;
	while ((opt = getopt_long(end, argv, shortopts, longs, NULL)) != -1) {
		switch (opt) {
		case 'e': r->text = optarg; break;
		case 'p':
			if (session_parse_pids(optarg, &r->o))
				return 2;
			break;
		case 'c':
			r->c_words = split_words(optarg);
			if (!r->c_words || !r->c_words[0])
				return usage_error("-c wants a command, not '%s'", optarg);
			break;
		case 'd':
			if (session_parse_seconds("run", "-d", optarg, &r->o.duration))
				return 2;
			break;
		case 'o': r->o.out_path = optarg; break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return usage_error("-f is text or json, not '%s'", optarg);
			*format = optarg;
			break;
		case OPT_STRATEGY:
			for (unsigned s = NP_STRATEGY_AUTO; s <= NP_STRATEGY_TRAP; s++)
				if (!strcmp(optarg, np_strategy_name(s)))
					r->o.strategy = s + 100;
			if (r->o.strategy < 100)
				return usage_error("--strategy is auto, jump or trap, not '%s'", optarg);
			r->o.strategy -= 100;
			break;
		case OPT_BUFFER:
			v = strtol(optarg, &e, 10);
			if (*e || v < 4 || v > 65536 || (v & (v - 1)))
				return usage_error("--buffer-kb wants a power of two in 4..65536%s", "");
			r->o.ring_kb = (unsigned)v;
			break;
		case OPT_NO_FOLLOW: r->o.follow = false; break;
		case OPT_MAP_KEYS:
			v = strtol(optarg, &e, 10);
			if (*e || v < 1 || v > (1 << 19))
				return usage_error("--map-keys wants a number in 1..524288, not '%s'", optarg);
			co->max_keys = (uint32_t)v;
			break;
		default:
			return cli_bad_option(opt, argv, run_opts);
		}
	}
	if (optind < end && !r->text)
		*file = argv[optind++];
	if (optind < end)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!r->text && !*file)
		return usage_error("give a program: -e 'PROGRAM' or a file%s", "");
	if (r->c_words && r->o.cmd)
		return usage_error("give -c CMD or -- CMD, not both%s", "");
	if (r->c_words)
		r->o.cmd = r->c_words;
	if (r->o.pid && r->o.cmd)
		return usage_error("give -p PID or a command, not both%s", "");
	return 0;
}

/* --- the run ------------------------------------------------------------------------ */

static void attached(struct run *r, size_t n)
{
	if (r->rt.json)
		fprintf(r->rt.out, "{\"type\": \"attached_probes\", \"data\": {\"probes\": %zu}}\n", n);
	else
		fprintf(r->rt.out, "Attaching %zu probe%s...\n", n, n == 1 ? "" : "s");
	fflush(r->rt.out);
}

static size_t own_probes(const struct program *p)
{
	size_t n = 0;
	for (struct probe *pr = p->probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next)
			n += a->kind == PK_BEGIN || a->kind == PK_END || a->kind == PK_INTERVAL;
	return n;
}

static volatile sig_atomic_t local_stop;
static void on_local_signal(int sig)
{
	local_stop = sig;
}

/* Without a process: BEGIN, the intervals until exit() or -d, END. */
static void run_alone(struct run *r)
{
	r->rt.shared = calloc(1, r->comp.prog->shared_bytes + 8);
	r->start_ns = mono_ns();
	signal(SIGINT, on_local_signal);
	signal(SIGTERM, on_local_signal);
	run_kind(r, PK_BEGIN);
	uint64_t until = r->o.duration > 0 ? r->start_ns + (uint64_t)(r->o.duration * 1e9) : 0;
	bool intervals = has_kind(&r->prog, PK_INTERVAL);
	while (!r->exited && !local_stop && intervals && (!until || mono_ns() < until) &&
	       !output_flush()) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		run_intervals(r);
	}
}

static void finish(struct run *r)
{
	for (size_t i = 0; i < r->rt.nsyms; i++) /* what they loaded since they joined */
		symbolizer_refresh(r->rt.syms[i].sym);
	r->ending = true;
	run_kind(r, PK_END);
	if (!r->rt.json)
		fputs("\n\n", r->rt.out);
	print_maps(&r->rt);
	fflush(r->rt.out);
}

/* Stacks or usym(): addresses named with their own process's mappings. */
static bool names_code(const struct program *p)
{
	for (struct probe *pr = p->probes; pr; pr = pr->next)
		if (pr->uses_ustack || pr->uses_usym)
			return true;
	return false;
}

static int run_session(struct run *r)
{
	struct session_ops ops = {
		.on_interval = has_kind(&r->prog, PK_INTERVAL) ? on_interval : NULL, .cookie = r,
		.on_begin = on_begin, .on_record = on_record, .on_reap = on_reap,
		.on_join = names_code(&r->prog) ? on_join : NULL,
	};
	struct totals t;
	r->o.script = r->comp.prog;
	r->o.nrings = RUN_RINGS;
	if (ops.on_interval)
		r->o.interval = 0.001;
	int rc = session_run(&r->o, &r->set, &ops, &t);
	if (rc)
		return rc;
	finish(r);
	session_report(&r->o, &r->set, &t);
	totals_free(&t);
	return 0;
}

static int prepare(struct run *r, int argc, char **argv, const char **file)
{
	const char *format = "text";
	struct compile_opts co = {0};
	int rc = parse_args(r, argc, argv, &co, file, &format);
	if (rc)
		return rc;
	if (!r->text && !(r->text = r->owned_text = read_file(*file))) {
		fprintf(stderr, "nanoprobe run: %s: %s\n", *file, strerror(errno));
		return 1;
	}
	if (script_parse(&r->prog, r->owned_text ? *file : "stdin", r->text) ||
	    script_check(&r->prog))
		return 2;
	bool uprobes = count_uprobes(&r->prog) > 0;
	if (uprobes && !r->o.pid && !r->o.cmd)
		return usage_error("say what to trace: -p PID, -c CMD or -- CMD ARGS...%s", "");
	if (uprobes && (rc = resolve_probes(r)))
		return rc;
	if (script_compile(&r->prog, &co, &r->comp))
		return 2;
	if (name_own_probes(r) || assign_keys(r))
		return 1;
	r->rt.json = !strcmp(format, "json");
	/* as -j for the other verbs: a program started with -- or -c writes
	 * its stdout to our stderr, so that stdout holds JSON lines only */
	r->o.json = r->rt.json;
	char name[NP_PATH_MAX + 8];
	snprintf(name, sizeof(name), r->o.out_path ? "-o %s" : "stdout", r->o.out_path);
	if (!(r->o.out = output_open(r->o.out_path, name))) {
		cli_error("%s: %s", name, strerror(errno));
		return 1;
	}
	r->rt.out = r->o.out;
	return 0;
}

static int setup_runtime(struct run *r)
{
	r->rt.prog = &r->prog;
	r->rt.comp = &r->comp;
	r->rt.set = &r->set;
	r->rt.fold = calloc(1, r->comp.prog->thread_bytes + 8);
	r->cmd_ring = calloc(1, sizeof(*r->cmd_ring));
	r->cmd_data = calloc(1, CMD_RING_BYTES);
	r->next_due = calloc((size_t)r->prog.nprobes + 1, sizeof(*r->next_due));
	if (!r->rt.fold || !r->cmd_ring || !r->cmd_data || !r->next_due)
		return 1;
	uint64_t now = mono_ns();
	for (struct probe *pr = r->prog.probes; pr; pr = pr->next)
		for (struct attach *a = pr->attach; a; a = a->next)
			if (a->kind == PK_INTERVAL)
				r->next_due[pr->index] = now + a->period_ns;
	return 0;
}

static void run_free(struct run *r)
{
	for (size_t i = 0; i < r->rt.nids; i++) {
		free(r->rt.probe_names[i]);
		free(r->rt.func_names[i]);
	}
	free(r->rt.probe_names);
	free(r->rt.func_names);
	if (r->shm_map)
		munmap(r->shm_map, r->shm_map_size);
	else
		free(r->rt.shared);
	if (r->rt.sym)
		symbolizer_free(r->rt.sym);
	for (size_t i = 0; i < r->rt.nsyms; i++)
		symbolizer_free(r->rt.syms[i].sym);
	free(r->rt.syms);
	free(r->rt.fold);
	free(r->cmd_ring);
	free(r->cmd_data);
	free(r->next_due);
	free(r->main_path);
	free(r->specs);
	free(r->owned_text);
	for (size_t i = 0; r->c_words && r->c_words[i]; i++)
		free(r->c_words[i]);
	free(r->c_words);
	compiled_free(&r->comp);
	program_free(&r->prog);
	probe_set_free(&r->set);
}

int cmd_run(int argc, char **argv)
{
	struct run r;
	const char *file = NULL;
	memset(&r, 0, sizeof(r));
	r.o.verb = "run";
	r.o.follow = true;    /* the tree: the processes the program starts too */
	r.o.many_pids = true; /* -p A -p B: one session, one memory, every process */
	int rc = prepare(&r, argc, argv, &file);
	if (!rc)
		rc = setup_runtime(&r);
	if (!rc) {
		attached(&r, r.set.n + own_probes(&r.prog)); /* a USDT probe's sites each count */
		if (!r.set.n) {
			run_alone(&r);
			finish(&r);
		} else {
			rc = run_session(&r);
		}
	}
	if (r.o.out)
		output_close(r.o.out); /* an error is reported below */
	int status = !rc && r.set.n ? session_finish(&r.o) : 0;
	if (!rc)
		rc = status;
	if (output_exit())
		rc = 1;
	run_free(&r);
	return rc;
}

const struct cli_verb verb_run = {
	"run", cmd_run,
	"run [OPTIONS] {-e PROGRAM | FILE} [-p PID... | -c CMD | -- CMD [ARGS...]]",
	"a bpftrace program (uprobe, uretprobe, usdt, BEGIN, END, interval)",
	"A program with no uprobe (only BEGIN, END, interval) needs no process.\n"
	"-f json prints bpftrace's JSON lines ({\"type\": \"map\", \"data\": ...}), not the\n"
	"envelope of the other verbs (docs/scripts.md).\n",
	run_opts,
};

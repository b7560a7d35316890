/* SPDX-License-Identifier: MIT */
/*
 * The neighbour scan's cache (core/scan_cache.c, module_scan.c): a run
 * that reads libc's scan from the cache has the targets and the plans of
 * one that decodes it; a damaged, stale or foreign file is ignored and the
 * module decoded again (the file then replaced by a good one); a cache
 * that cannot be written, or a directory others could write, costs only
 * the decode; processes racing leave a whole file; NANOPROBE_CACHE=off
 * and a module without a build ID keep nothing.
 *
 * Each run is a process of its own, this program executed again (so each
 * has its own address layout, as the processes a cache serves do): it
 * reports what its engine found on stdout. Nothing here depends on timing:
 * racing processes must leave a whole file whatever the interleaving.
 */
#include "arch/arch.h"
#include "core/embed.h"
#include "core/engine.h"
#include "core/maps.h"
#include "core/modules.h"
#include "core/plan_host.h"
#include "core/scan_cache.h"
#include "test.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the run ------------------------------------------------------------ */

/* What one run found. */
struct outcome {
	unsigned scanned, loaded; /* modules decoded, read from the cache */
	int same;                 /* the engine's targets are a fresh decode's */
	unsigned long ntargets;
	unsigned long long plans; /* a hash of every libc function's plan */
	int malloc_strategy, free_strategy;
	int fds_kept; /* as many descriptors open after as before */
	int ignored;  /* files the cache said it ignored */
};

static int ignored;

static void count_ignored(enum np_log_level level, const char *msg, void *user)
{
	(void)level, (void)user;
	if (strstr(msg, "scan cache:") && strstr(msg, "ignored"))
		ignored++;
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* A function of libc's own (nothing intercepts it: ASan's malloc is the
 * program's). */
static uint64_t libc_at(void)
{
	return (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
}

static int lowest_load(struct dl_phdr_info *info, size_t size, void *cookie)
{
	uint64_t *at = cookie, lo = UINT64_MAX;
	bool mine = false;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD)
			continue;
		lo = start < lo ? start : lo;
		mine |= *at >= start && *at - start < ph->p_memsz;
	}
	if (mine)
		*at = lo;
	return mine;
}

/* The lowest address of libc's mapping. */
static uint64_t libc_low(void)
{
	uint64_t at = libc_at();
	dl_iterate_phdr(lowest_load, &at);
	return at;
}

static int read_original(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	return np_read_original(addr, dst, len);
}

static void collect(void *cookie, uint64_t target)
{
	struct np_targets *t = cookie;
	np_targets_merge(t, &target, 1);
}

static int dry_jump(void *c, const struct np_fn_view *v, struct np_site_plan *s, char *why,
		    size_t len)
{
	(void)c, (void)v, (void)s, (void)why, (void)len;
	return 0;
}

static int dry_trap(void *c, const struct np_fn_view *v, struct np_site_plan *s, bool back,
		    char *why, size_t len)
{
	(void)c, (void)v, (void)s, (void)back, (void)why, (void)len;
	return 0;
}

/* Every function of libc planned (nothing placed), relative to its
 * .eh_frame_hdr: the same in every process mapping the same libc. */
static unsigned long long plan_all(const struct np_fde_table *t)
{
	const struct np_plan_realise dry = {dry_jump, dry_trap, NULL};
	struct np_hash h;
	np_hash_init(&h);
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t at = np_fde_table_start(t, i);
		struct np_fn_view v;
		struct np_site_plan s = {0};
		if (np_live_view_load(&v, at, 0, 0) == 0)
			np_plan_site(&v, at, NP_WANT_AUTO, &dry, &s);
		np_fn_view_free(&v);
		uint64_t rec[4] = {at - t->base, s.kind, s.plan.start ? s.plan.start - t->base : 0,
				   s.plan.end - s.plan.start};
		np_hash_add(&h, rec, sizeof(rec));
	}
	return np_hash_end(&h);
}

static void count_hit(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data;
}

/* The strategy a probe on libc's function name gets. */
static int strategy_at(const char *name)
{
	struct np_probe_opts o = {.sz = sizeof(o), .on_entry = count_hit};
	Dl_info info;
	void *libc = dladdr((void *)(uintptr_t)libc_at(), &info)
			     ? dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD)
			     : NULL;
	void *fn = libc ? dlsym(libc, name) : NULL;
	struct np_probe *p = fn ? np_probe_attach(fn, &o) : NULL;
	int s = p ? (int)np_probe_strategy(p) : -1;
	if (p)
		np_probe_detach(p);
	if (libc)
		dlclose(libc);
	return s;
}

/* The run itself: libc's neighbours through the engine, against a decode
 * of libc made here; with full, the plans and two probes too. */
static void run_libc(bool full)
{
	struct outcome o = {0};
	struct np_fde_table t;
	np_set_log_fn(count_ignored, NULL);
	np_engine_init();
	np_maps_call_begin();
	np_fault_guard_refresh();
	int fds = open_fds();
	uint64_t lo = libc_low();
	if (np_engine_lock() || !np_fde_table(libc_at(), &t))
		_exit(2);
	struct np_targets engine = {0}, fresh = {0};
	np_neighbor_targets(lo, UINT64_MAX - lo, collect, &engine);
	np_neighbor_stats(&o.scanned, &o.loaded);
	o.fds_kept = open_fds() == fds;
	if (full) {
		uint64_t *starts = malloc(t.n * sizeof(*starts));
		for (uint32_t i = 0; i < t.n; i++)
			starts[i] = np_fde_table_start(&t, i);
		np_targets_add_module(&fresh, np_host_isa, &(struct np_mem){read_original, NULL, NULL},
				      starts, t.n);
		free(starts);
		size_t k = 0; /* what the engine has above lo is all of fresh's */
		while (k < fresh.n && fresh.v[k] <= lo)
			k++;
		o.same = fresh.n - k == engine.n &&
			 !memcmp(fresh.v + k, engine.v, engine.n * sizeof(*engine.v));
		o.plans = plan_all(&t);
	}
	o.ntargets = engine.n;
	np_engine_unlock();
	if (full) {
		o.malloc_strategy = strategy_at("malloc");
		o.free_strategy = strategy_at("free");
	}
	o.ignored = ignored;
	printf("%u %u %d %lu %llu %d %d %d %d\n", o.scanned, o.loaded, o.same, o.ntargets, o.plans,
	       o.malloc_strategy, o.free_strategy, o.fds_kept, o.ignored);
	fflush(stdout);
	_exit(0);
}

/* A library without a GNU build ID: decoded, never kept. */
static void run_nobuildid(void)
{
	struct np_scan_key k;
	struct np_fde_table t;
	void *lib = dlopen(NOBUILDID_LIB, RTLD_NOW);
	int (*add)(int) = lib ? (int (*)(int))dlsym(lib, "nobuildid_lib_add") : NULL;
	if (!add)
		_exit(4);
	uint64_t at = (uint64_t)(uintptr_t)add;
	np_engine_init();
	np_maps_call_begin();
	np_fault_guard_refresh();
	if (np_engine_lock() || !np_fde_table(at, &t))
		_exit(2);
	np_neighbor_targets(at, 1, collect, &(struct np_targets){0});
	unsigned scanned, loaded;
	np_neighbor_stats(&scanned, &loaded);
	printf("%u %u %d\n", scanned, loaded, np_scan_cache_key(t.base, t.n, &k));
	fflush(stdout);
	_exit(add(2) == 3 ? 0 : 3);
}

/* Many loads and stores of libc's file, as racing processes make them:
 * every load must find a whole file (this process stored one first). */
static void run_race(int rounds)
{
	struct np_fde_table t;
	struct np_scan_key k;
	struct np_scan_kept kept = {0};
	int bad = 0;
	np_set_log_fn(count_ignored, NULL);
	np_engine_init();
	np_maps_call_begin();
	np_fault_guard_refresh();
	if (np_engine_lock() || !np_fde_table(libc_at(), &t) || np_scan_cache_key(t.base, t.n, &k))
		_exit(2);
	np_neighbor_targets(t.base, 1, collect, &(struct np_targets){0}); /* decodes or loads */
	for (int i = 0; i < rounds; i++) {
		bad += np_scan_cache_load(&k, &kept) != 0;
		bad += np_scan_cache_store(&k, &kept) != 0;
		np_scan_kept_free(&kept);
	}
	printf("%d %d\n", bad, ignored);
	fflush(stdout);
	_exit(0);
}

__attribute__((constructor)) static void child(void)
{
	const char *mode = getenv("SCAN_CACHE_RUN");
	if (!mode)
		return;
	if (!strcmp(mode, "full") || !strcmp(mode, "stats"))
		run_libc(!strcmp(mode, "full"));
	if (!strcmp(mode, "nobuildid"))
		run_nobuildid();
	if (!strncmp(mode, "race", 4))
		run_race(atoi(mode + 4));
	_exit(2);
}

/* ---- the parent: runs, files, directories -------------------------------- */

static char tmp[64];

static char *path_in(const char *rel)
{
	static char p[4][256];
	static int k;
	char *s = p[k++ % 4];
	snprintf(s, sizeof(p[0]), "%s/%s", tmp, rel);
	return s;
}

/* Runs made with a library preloaded: libc lands elsewhere relative to
 * ld.so, whose functions libc's PLT slots hold. */
static bool shifted;

/* Start this program as a run: mode, XDG_CACHE_HOME (NULL: unset, HOME
 * too), NANOPROBE_CACHE (NULL: unset). The pid; its stdout in *out. */
static pid_t start(const char *mode, const char *xdg, const char *cache, int *out)
{
	int fd[2];
	if (pipe(fd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		setenv("SCAN_CACHE_RUN", mode, 1);
		if (xdg)
			setenv("XDG_CACHE_HOME", xdg, 1);
		else
			unsetenv("XDG_CACHE_HOME"), unsetenv("HOME");
		if (cache)
			setenv("NANOPROBE_CACHE", cache, 1);
		else
			unsetenv("NANOPROBE_CACHE");
		if (shifted) { /* ahead of ASan's runtime, which it tolerates so */
			setenv("LD_PRELOAD", NOBUILDID_LIB, 1);
			setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 1);
		}
		execl("/proc/self/exe", "scan-cache-run", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	*out = fd[0];
	return pid;
}

/* Its report, once it has exited 0; "" otherwise. */
static void finish(pid_t pid, int fd, char *line, size_t len)
{
	FILE *f = fdopen(fd, "r");
	int st = 0;
	if (!f || !fgets(line, (int)len, f))
		line[0] = 0;
	if (f)
		fclose(f);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		line[0] = 0;
}

static bool run(const char *mode, const char *xdg, const char *cache, struct outcome *o)
{
	char line[256];
	int fd;
	pid_t pid = start(mode, xdg, cache, &fd);
	if (pid < 0)
		return false;
	finish(pid, fd, line, sizeof(line));
	*o = (struct outcome){0};
	return sscanf(line, "%u %u %d %lu %llu %d %d %d %d", &o->scanned, &o->loaded, &o->same,
		      &o->ntargets, &o->plans, &o->malloc_strategy, &o->free_strategy, &o->fds_kept,
		      &o->ignored) == 9;
}

/* The one file in dir/nanoprobe (NULL: none, or more than one). */
static char *only_file(const char *xdg)
{
	static char found[600];
	char dir[300];
	int n = 0;
	snprintf(dir, sizeof(dir), "%s/nanoprobe", xdg);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(found, sizeof(found), "%s/%s", dir, e->d_name);
			n++;
		}
	if (d)
		closedir(d);
	return n == 1 ? found : NULL;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = path ? fopen(path, "rb") : NULL;
	uint8_t *buf = NULL;
	if (f && !fseek(f, 0, SEEK_END)) {
		long n = ftell(f);
		buf = n > 0 ? malloc((size_t)n) : NULL;
		rewind(f);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	if (f)
		fclose(f);
	return buf;
}

static void put(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(buf, 1, len, f);
		fclose(f);
	}
}

static void remove_tree(const char *p)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	CHECK_EQ(system(cmd), 0);
}

/* A fresh $XDG_CACHE_HOME under tmp. */
static const char *fresh_home(const char *name)
{
	char *p = path_in(name);
	remove_tree(p);
	mkdir(p, 0700);
	return p;
}

/* What every run must agree on: the decode without any cache (the
 * baseline), and the file a decode keeps (pristine). */
static struct outcome baseline;
static uint8_t *pristine;
static size_t pristine_len;

static void clean_up(void)
{
	remove_tree(tmp);
	free(pristine);
}

static void setup(void)
{
	if (tmp[0])
		return;
	snprintf(tmp, sizeof(tmp), "/tmp/np-scan-cache-XXXXXX");
	CHECK(mkdtemp(tmp) != NULL);
	atexit(clean_up);
	CHECK(run("full", fresh_home("off"), "off", &baseline));
	CHECK(baseline.same && baseline.scanned >= 1 && baseline.loaded == 0);
	CHECK(baseline.ntargets > 100 && baseline.malloc_strategy >= 0);
	CHECK(only_file(path_in("off")) == NULL); /* off: nothing written */
	struct outcome cold;
	const char *home = fresh_home("pristine");
	CHECK(run("stats", home, NULL, &cold));
	CHECK(cold.scanned >= 1 && cold.loaded == 0);
	pristine = slurp(only_file(home), &pristine_len);
	CHECK(pristine && pristine_len > sizeof(struct np_scan_file));
}

static void check_like_baseline(const struct outcome *o, bool full)
{
	CHECK_EQ(o->ntargets, baseline.ntargets);
	CHECK(o->fds_kept);
	if (!full)
		return;
	CHECK(o->same);
	CHECK_EQ(o->plans, baseline.plans);
	CHECK_EQ(o->malloc_strategy, baseline.malloc_strategy);
	CHECK_EQ(o->free_strategy, baseline.free_strategy);
}

TEST(a_run_from_the_cache_has_the_targets_and_plans_of_a_decode)
{
	setup();
	const char *home = fresh_home("warm");
	struct outcome cold, warm;
	CHECK(run("full", home, NULL, &cold)); /* decodes, keeps */
	CHECK(cold.scanned >= 1 && cold.loaded == 0);
	check_like_baseline(&cold, true);
	/* read back where the other modules lie elsewhere from libc: what
	 * its GOT slots hold is this process's, not the file's */
	shifted = true;
	CHECK(run("full", home, NULL, &warm));
	shifted = false;
	CHECK(warm.loaded >= 1 && warm.scanned == 0);
	check_like_baseline(&warm, true);
	CHECK_EQ(warm.ignored, 0);
	/* the same bytes every time: the file is a function of the module */
	size_t len = 0;
	uint8_t *now = slurp(only_file(home), &len);
	CHECK(now && len == pristine_len && !memcmp(now, pristine, len));
	free(now);
}

/* buf as the module's file in home's cache. */
static void plant_bytes(const char *home, const uint8_t *buf, size_t len)
{
	char dir[300], file[512];
	snprintf(dir, sizeof(dir), "%s/nanoprobe", home);
	mkdir(dir, 0700);
	const char *name = strrchr(only_file(path_in("pristine")), '/');
	snprintf(file, sizeof(file), "%s%s", dir, name);
	put(file, buf, len);
}

/* A copy of the pristine file changed by edit, with its checksum made
 * right again when fix: only the check under test can refuse it. */
static void plant(const char *home, void (*edit)(uint8_t *, size_t *), bool fix)
{
	size_t len = pristine_len;
	uint8_t *b = malloc(pristine_len + 16);
	memcpy(b, pristine, pristine_len);
	edit(b, &len);
	if (fix) {
		struct np_scan_file h;
		memcpy(&h, b, sizeof(h));
		h.checksum = 0;
		memcpy(b, &h, sizeof(h));
		h.checksum = np_hash64(b, len);
		memcpy(b, &h, sizeof(h));
	}
	plant_bytes(home, b, len);
	free(b);
}

static struct np_scan_file *header(uint8_t *b)
{
	return (struct np_scan_file *)(void *)b;
}

static void cut_one_byte(uint8_t *b, size_t *len)
{
	(void)b, --*len;
}
static void cut_to_half_a_header(uint8_t *b, size_t *len)
{
	(void)b, *len = sizeof(struct np_scan_file) / 2;
}
static void flip_a_target_bit(uint8_t *b, size_t *len)
{
	b[sizeof(struct np_scan_file) + 3] ^= 0x10;
	(void)len;
}
static void flip_the_last_byte(uint8_t *b, size_t *len)
{
	b[*len - 1] ^= 1;
}
static void flip_the_image_hash(uint8_t *b, size_t *len)
{
	header(b)->image_hash ^= 1;
	(void)len;
}
static void another_build_id(uint8_t *b, size_t *len)
{
	header(b)->module_id[0] ^= 0xff;
	(void)len;
}
static void another_version(uint8_t *b, size_t *len)
{
	header(b)->version++;
	(void)len;
}
static void another_engine(uint8_t *b, size_t *len)
{
	header(b)->engine_id[3] ^= 0x40;
	(void)len;
}
static void another_isa(uint8_t *b, size_t *len)
{
	memcpy(header(b)->isa, "pdp11", 6);
	(void)len;
}
static void another_fde_count(uint8_t *b, size_t *len)
{
	header(b)->nfdes++;
	(void)len;
}
static void a_count_too_large(uint8_t *b, size_t *len)
{
	header(b)->count++;
	(void)len;
}
static void targets_out_of_order(uint8_t *b, size_t *len)
{
	int64_t t[2];
	memcpy(t, b + sizeof(struct np_scan_file), sizeof(t));
	int64_t x = t[0];
	t[0] = t[1], t[1] = x;
	memcpy(b + sizeof(struct np_scan_file), t, sizeof(t));
	(void)len;
}
static void a_function_past_the_table(uint8_t *b, size_t *len)
{
	/* one more volatile function, numbered past the FDE table */
	uint32_t past = (uint32_t)header(b)->nfdes;
	memcpy(b + *len, &past, sizeof(past));
	*len += sizeof(past);
	header(b)->nvolatile++;
}

static const struct {
	const char *what;
	void (*edit)(uint8_t *, size_t *);
	bool fix;
} damage[] = {
	{"cut by a byte", cut_one_byte, false},
	{"cut to half a header", cut_to_half_a_header, false},
	{"a target's bit flipped", flip_a_target_bit, false},
	{"the last byte flipped", flip_the_last_byte, false},
	{"the image hash flipped", flip_the_image_hash, false},
	{"another build ID", another_build_id, true},
	{"another format version", another_version, true},
	{"another engine", another_engine, true},
	{"another ISA", another_isa, true},
	{"another FDE count", another_fde_count, true},
	{"a count the size does not have", a_count_too_large, true},
	{"targets out of order", targets_out_of_order, true},
	{"a function past the table", a_function_past_the_table, true},
};

TEST(a_damaged_or_foreign_file_is_ignored_decoded_again_and_replaced)
{
	setup();
	for (size_t i = 0; i < sizeof(damage) / sizeof(*damage); i++) {
		const char *home = fresh_home("damaged");
		struct outcome o;
		plant(home, damage[i].edit, damage[i].fix);
		bool full = i == 5; /* one of them against the plans too */
		CHECK(run(full ? "full" : "stats", home, NULL, &o));
		if (o.loaded || !o.scanned || o.ignored != 1)
			fprintf(stderr, "%s: loaded %u, scanned %u, ignored %d\n", damage[i].what,
				o.loaded, o.scanned, o.ignored);
		CHECK(o.loaded == 0 && o.scanned >= 1 && o.ignored == 1);
		check_like_baseline(&o, full);
		size_t len = 0;
		uint8_t *now = slurp(only_file(home), &len);
		CHECK(now && len == pristine_len && !memcmp(now, pristine, len));
		free(now);
	}
}

TEST(a_file_that_is_a_link_or_not_a_file_is_not_read)
{
	setup();
	const char *home = fresh_home("link");
	char dir[300], target[400], link[600];
	const char *name = strrchr(only_file(path_in("pristine")), '/');
	snprintf(dir, sizeof(dir), "%s/nanoprobe", home);
	mkdir(dir, 0700);
	snprintf(target, sizeof(target), "%s/elsewhere", home);
	put(target, pristine, pristine_len);
	snprintf(link, sizeof(link), "%s%s", dir, name);
	CHECK(symlink(target, link) == 0);
	struct outcome o;
	CHECK(run("stats", home, NULL, &o));
	CHECK(o.loaded == 0 && o.scanned >= 1);
	unlink(link);
	CHECK(mkfifo(link, 0600) == 0); /* opened without blocking, not read */
	CHECK(run("stats", home, NULL, &o));
	CHECK(o.loaded == 0 && o.scanned >= 1);
	check_like_baseline(&o, false);
}

TEST(a_cache_that_cannot_be_written_costs_only_the_decode)
{
	setup();
	struct outcome o;
	char *file = path_in("a-file");
	put(file, (const uint8_t *)"x", 1);
	char under[300];
	snprintf(under, sizeof(under), "%s/cache", file); /* ENOTDIR */
	CHECK(run("full", under, NULL, &o));
	CHECK(o.scanned >= 1 && o.loaded == 0);
	check_like_baseline(&o, true);
	const char *home = fresh_home("blocked"); /* nanoprobe/ is a file */
	char blocker[300];
	snprintf(blocker, sizeof(blocker), "%s/nanoprobe", home);
	put(blocker, (const uint8_t *)"x", 1);
	CHECK(run("stats", home, NULL, &o));
	CHECK(o.scanned >= 1 && o.loaded == 0);
	check_like_baseline(&o, false);
	CHECK(run("stats", NULL, NULL, &o)); /* neither XDG_CACHE_HOME nor HOME */
	CHECK(o.scanned >= 1 && o.loaded == 0);
	check_like_baseline(&o, false);
	if (geteuid() != 0) { /* root writes anyway */
		home = fresh_home("readonly");
		CHECK(chmod(home, 0500) == 0);
		CHECK(run("stats", home, NULL, &o));
		CHECK(o.scanned >= 1 && o.loaded == 0);
		CHECK(chmod(home, 0700) == 0);
	}
}

TEST(a_directory_others_may_write_or_own_is_neither_read_nor_written)
{
	setup();
	struct outcome o;
	const char *home = fresh_home("shared");
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/nanoprobe", home);
	plant_bytes(home, pristine, pristine_len); /* a good file... */
	CHECK(chmod(dir, 0777) == 0);                  /* ...where anyone could have put it */
	CHECK(run("stats", home, NULL, &o));
	CHECK(o.loaded == 0 && o.scanned >= 1 && o.ignored == 0);
	if (geteuid() == 0) { /* another user's directory: not written either */
		CHECK(chmod(dir, 0700) == 0);
		CHECK(unlink(only_file(home)) == 0);
		CHECK(chown(dir, 65534, 65534) == 0);
		CHECK(run("stats", home, NULL, &o));
		CHECK(o.loaded == 0 && o.scanned >= 1);
		CHECK(only_file(home) == NULL);
	}
}

TEST(nanoprobe_cache_off_reads_and_writes_nothing)
{
	setup();
	struct outcome o;
	const char *home = fresh_home("off2");
	CHECK(run("stats", home, "off", &o));
	CHECK(o.loaded == 0 && o.scanned >= 1);
	CHECK(only_file(home) == NULL);
	plant_bytes(home, pristine, pristine_len);
	CHECK(run("stats", home, "off", &o));
	CHECK(o.loaded == 0 && o.scanned >= 1 && o.ignored == 0);
}

TEST(a_module_without_a_build_id_is_never_kept)
{
	setup();
	char line[128];
	int fd;
	const char *home = fresh_home("nobuildid");
	pid_t pid = start("nobuildid", home, NULL, &fd);
	finish(pid, fd, line, sizeof(line));
	unsigned scanned = 0, loaded = 1;
	int key = 0;
	CHECK(sscanf(line, "%u %u %d", &scanned, &loaded, &key) == 3);
	CHECK(scanned == 1 && loaded == 0);
	CHECK_EQ(key, -ENOENT);
	CHECK(only_file(home) == NULL);
}

TEST(processes_racing_leave_a_whole_file_and_no_other)
{
	setup();
	enum { RUNS = 4 };
	const char *home = fresh_home("race");
	pid_t pid[RUNS];
	int fd[RUNS];
	for (int i = 0; i < RUNS; i++)
		pid[i] = start("race50", home, NULL, &fd[i]);
	for (int i = 0; i < RUNS; i++) {
		char line[64];
		int bad = -1, ign = -1;
		finish(pid[i], fd[i], line, sizeof(line));
		CHECK(sscanf(line, "%d %d", &bad, &ign) == 2);
		CHECK_EQ(bad, 0); /* every load found a whole file, every store kept one */
		CHECK_EQ(ign, 0);
	}
	size_t len = 0; /* one file: no writer's own left behind */
	uint8_t *now = slurp(only_file(home), &len);
	CHECK(now && len == pristine_len && !memcmp(now, pristine, len));
	free(now);
}

/* errno and the descriptors stay the program's, file or no file. */
TEST(the_cache_keeps_errno_and_every_descriptor)
{
	setup();
	struct np_fde_table t;
	struct np_scan_key k;
	struct np_scan_kept kept = {0};
	const char *home = fresh_home("errno");
	setenv("XDG_CACHE_HOME", home, 1);
	np_maps_call_begin();
	np_fault_guard_refresh();
	CHECK(np_fde_table(libc_at(), &t));
	int fds = open_fds();
	errno = 4242;
	CHECK_EQ(np_scan_cache_key(t.base, t.n, &k), 0);
	CHECK_EQ(errno, 4242);
	CHECK_EQ(np_scan_cache_load(&k, &kept), -ENOENT); /* no file yet */
	CHECK_EQ(errno, 4242);
	kept.targets = malloc(sizeof(uint64_t));
	kept.targets[0] = t.base + 16;
	kept.count = 1;
	kept.volatile_fns = malloc(sizeof(uint32_t));
	CHECK_EQ(np_scan_cache_store(&k, &kept), 0);
	CHECK_EQ(errno, 4242);
	np_scan_kept_free(&kept);
	CHECK_EQ(np_scan_cache_load(&k, &kept), 0);
	CHECK_EQ(errno, 4242);
	CHECK(kept.count == 1 && kept.targets[0] == t.base + 16 && kept.nvolatile == 0);
	np_scan_kept_free(&kept);
	put(only_file(home), (const uint8_t *)"junk", 4);
	CHECK_EQ(np_scan_cache_load(&k, &kept), -ENOENT);
	CHECK_EQ(errno, 4242);
	setenv("XDG_CACHE_HOME", "/proc/version/nope", 1); /* cannot be made */
	CHECK_EQ(np_scan_cache_store(&k, &kept), -EACCES);
	CHECK_EQ(errno, 4242);
	CHECK_EQ(open_fds(), fds);
	unsetenv("XDG_CACHE_HOME");
}

TEST_MAIN()

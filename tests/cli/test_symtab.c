/* SPDX-License-Identifier: MIT */
/*
 * Symbol tables of the fixture program (tests/cli/fixtures) in each form a
 * distribution ships it: full, stripped, with MiniDebugInfo, with a split
 * debug file found by build-id. Every form must give the same functions at
 * the same addresses; the stripped one names what .dynsym lacks after its
 * .eh_frame bounds. Then globs, suggestions, offsets and path resolution.
 *
 * NP_FIXTURE names the full copy; the others sit beside it (make-fixtures.sh).
 */
#include "test.h"

#include "symbols/demangle.h"
#include "symbols/symtab.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every function of fixture.c and fixture_x86_64.S, exported ones first. */
static const char *const names[] = {
	"np_fx_add", "np_fx_mul", "np_fx_sum",	    "np_fx_switch",
	"np_fx_tiny", "np_fx_backjump", "np_fx_reject", "main",
};
#define NEXPORTED 2

/* A failed precondition ends the case: what follows would only crash. */
#define REQUIRE(cond)                                                        \
	do {                                                                 \
		if (!(cond)) {                                               \
			CHECK(!"required: " #cond);                          \
			return;                                              \
		}                                                            \
	} while (0)

static const char *fixture(const char *suffix)
{
	static char path[PATH_MAX];
	const char *base = getenv("NP_FIXTURE");
	snprintf(path, sizeof(path), "%s%s", base ? base : "cli-fixture", suffix);
	return path;
}

static int load(const char *suffix, struct np_symtab *st)
{
	char err[256] = "";
	int ret = np_symtab_load(fixture(suffix), st, err, sizeof(err));
	if (ret)
		fprintf(stderr, "load %s: %s\n", fixture(suffix), err);
	return ret;
}

static void check_same_function(const struct np_symtab *ref, const struct np_symtab *st,
				const char *name, const char *copy)
{
	const struct np_sym *a = np_symtab_find(ref, name), *b = np_symtab_find(st, name);
	if (!a || !b) {
		fprintf(stderr, "%s: %s missing\n", copy, name);
		np_test_failed = 1;
		return;
	}
	CHECK_EQ(b->addr, a->addr);
	CHECK_EQ(b->size, a->size);
}

TEST(full_copy_reads_every_function_from_symtab)
{
	struct np_symtab st;
	REQUIRE(load("", &st) == 0);
	CHECK_EQ(st.machine, EM_X86_64);
	CHECK(st.dyn);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct np_sym *s = np_symtab_find(&st, names[i]);
		CHECK(s && s->size > 0 && s->source == NP_SYM_SYMTAB);
	}
	const struct np_sym *add = np_symtab_find(&st, "np_fx_add");
	const struct np_sym *plus = np_symtab_find(&st, "np_fx_plus");
	CHECK(add && plus && add->addr == plus->addr);
	CHECK(st.sources & NP_SYM_SYMTAB);
	for (size_t i = 1; i < st.n; i++)
		CHECK(st.syms[i - 1].addr <= st.syms[i].addr);
	np_symtab_free(&st);
}

TEST(minidebuginfo_copy_matches_full_copy)
{
	struct np_symtab ref, st;
	REQUIRE(load("", &ref) == 0 && load(".mini", &st) == 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_same_function(&ref, &st, names[i], "mini");
	CHECK_EQ(np_symtab_find(&st, "np_fx_add")->source, NP_SYM_DYNSYM);
	CHECK_EQ(np_symtab_find(&st, "np_fx_sum")->source, NP_SYM_MINIDEBUG);
	np_symtab_free(&st);
	np_symtab_free(&ref);
}

/* The build-id of the stripped copy as hex, or "" when it has none. */
static void build_id_hex(char *hex, size_t len)
{
	int fd = open(fixture(".stripped"), O_RDONLY);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	const unsigned char *id = NULL;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&id) : -1;
	hex[0] = '\0';
	for (ssize_t i = 0; i < n && (size_t)(2 * i + 3) <= len; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	elf_end(elf);
	close(fd);
}

/* The split debug file where a -dbgsym package puts it: DIR/.build-id/xx/yyyy.debug. */
static int place_debug_file(char *dir, size_t len)
{
	char hex[128], sub[256], link[512], target[PATH_MAX];
	build_id_hex(hex, sizeof(hex));
	snprintf(dir, len, "/tmp/np-symtab-XXXXXX");
	if (strlen(hex) < 4 || !mkdtemp(dir) || !realpath(fixture(".debug"), target))
		return -1;
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, hex);
	mkdir(sub, 0755);
	snprintf(link, sizeof(link), "%s/%s.debug", sub, hex + 2);
	return symlink(target, link);
}

static void remove_debug_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

TEST(split_debug_file_found_by_build_id_matches_full_copy)
{
	struct np_symtab ref, st;
	char dir[64];
	REQUIRE(load("", &ref) == 0 && place_debug_file(dir, sizeof(dir)) == 0);
	setenv("NANOPROBE_DEBUGINFO_PATH", dir, 1);
	int ret = load(".stripped", &st);
	unsetenv("NANOPROBE_DEBUGINFO_PATH");
	remove_debug_dir(dir);
	REQUIRE(ret == 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_same_function(&ref, &st, names[i], "debug file");
	CHECK_EQ(np_symtab_find(&st, "np_fx_sum")->source, NP_SYM_DEBUGFILE);
	np_symtab_free(&st);
	np_symtab_free(&ref);
}

/* With MiniDebugInfo and a split debug file both there, libdwfl reads the
 * debug file's .symtab and not .gnu_debugdata: the symbols say so. (Only
 * this case opens the debug file's DWARF, to tell the two apart: the
 * cost of inflating it is not paid for a file without MiniDebugInfo.) */
TEST(minidebuginfo_copy_with_a_split_debug_file_reads_the_debug_file)
{
	struct np_symtab ref, st;
	char dir[64];
	REQUIRE(load("", &ref) == 0 && place_debug_file(dir, sizeof(dir)) == 0);
	setenv("NANOPROBE_DEBUGINFO_PATH", dir, 1);
	int ret = load(".mini", &st);
	unsetenv("NANOPROBE_DEBUGINFO_PATH");
	remove_debug_dir(dir);
	REQUIRE(ret == 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_same_function(&ref, &st, names[i], "mini + debug file");
	CHECK_EQ(np_symtab_find(&st, "np_fx_sum")->source, NP_SYM_DEBUGFILE);
	CHECK(!(st.sources & NP_SYM_MINIDEBUG));
	np_symtab_free(&st);
	np_symtab_free(&ref);
}

TEST(stripped_copy_bounds_unexported_functions_from_eh_frame)
{
	struct np_symtab ref, st;
	REQUIRE(load("", &ref) == 0 && load(".stripped", &st) == 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct np_sym *r = np_symtab_find(&ref, names[i]);
		if (i < NEXPORTED) {
			check_same_function(&ref, &st, names[i], "stripped");
			CHECK_EQ(np_symtab_find(&st, names[i])->source, NP_SYM_DYNSYM);
			continue;
		}
		char fn[32];
		snprintf(fn, sizeof(fn), "fn_%llx", (unsigned long long)r->addr);
		const struct np_sym *s = np_symtab_find(&st, fn);
		CHECK(!np_symtab_find(&st, names[i]));
		CHECK(s && s->addr == r->addr && s->size == r->size && s->source == NP_SYM_EHFRAME);
	}
	np_symtab_free(&st);
	np_symtab_free(&ref);
}

/* How control arrives at a function, from its FDE: a call, a jump with
 * the frame built (.cold parts), the kernel's signal return. */
TEST(entries_not_reached_by_a_call_are_marked_from_the_unwind_info)
{
	struct np_symtab ref, st;
	REQUIRE(load("", &ref) == 0 && load(".stripped", &st) == 0);
	CHECK_EQ(np_symtab_find(&ref, "np_fx_sum")->entry, NP_ENTRY_CALL);
	CHECK_EQ(np_symtab_find(&ref, "np_fx_tiny")->entry, NP_ENTRY_CALL);
	CHECK_EQ(np_symtab_find(&ref, "fixture_cold")->entry, NP_ENTRY_MID_FRAME);
	CHECK_EQ(np_symtab_find(&ref, "fixture_sigreturn")->entry, NP_ENTRY_SIGRETURN);
	/* stripped: the fragment by its FDE, the trampoline not at all */
	char fn[32];
	snprintf(fn, sizeof(fn), "fn_%llx",
		 (unsigned long long)np_symtab_find(&ref, "fixture_cold")->addr);
	const struct np_sym *cold = np_symtab_find(&st, fn);
	CHECK(cold && cold->entry == NP_ENTRY_MID_FRAME);
	uint64_t sigret = np_symtab_find(&ref, "fixture_sigreturn")->addr;
	const struct np_sym *at = np_symtab_at(&st, sigret);
	CHECK(!at || at->addr + (at->size ? at->size : 1) <= sigret - 1 ||
	      at->entry == NP_ENTRY_SIGRETURN);
	np_symtab_free(&st);
	np_symtab_free(&ref);
}

/* The PLT has unwind info but is no function (its stubs push an index the
 * loader reads off the stack): libc's must not be offered. */
TEST(plt_sections_are_not_offered_as_functions)
{
	char path[512], err[256];
	struct np_symtab st;
	CHECK_EQ(np_resolve_path("libc.so.6", 0, path, sizeof(path), err, sizeof(err)), 0);
	REQUIRE(np_symtab_load(path, &st, err, sizeof(err)) == 0);
	int fd = open(path, O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx = 0, inside = 0, plts = 0;
	elf_getshdrstrndx(elf, &shstrndx);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : "";
		if (!name || strncmp(name, ".plt", 4))
			continue;
		plts++;
		for (size_t i = 0; i < st.n; i++)
			inside += st.syms[i].addr >= sh.sh_addr && st.syms[i].addr < sh.sh_addr + sh.sh_size;
	}
	CHECK(plts > 0);
	CHECK_EQ(inside, 0);
	elf_end(elf);
	close(fd);
	np_symtab_free(&st);
}

TEST(glob_folds_aliases_to_one_entry_per_address)
{
	struct np_symtab st;
	const struct np_sym **m;
	REQUIRE(load("", &st) == 0);
	/* Nine np_fx_ names, eight addresses: add and plus are one. */
	size_t n = np_symtab_match(&st, "np_fx_*", &m);
	CHECK_EQ(n, 8);
	for (size_t i = 1; i < n; i++)
		CHECK(m[i - 1]->addr < m[i]->addr);
	free(m);
	CHECK_EQ(np_symtab_match(&st, "np_fx_plus", &m), 1);
	CHECK_STR(m[0]->name, "np_fx_plus");
	free(m);
	CHECK_EQ(np_symtab_match(&st, "no_such_*", &m), 0);
	CHECK(m == NULL);
	np_symtab_free(&st);
}

TEST(lookup_by_address_finds_the_containing_function)
{
	struct np_symtab st;
	REQUIRE(load("", &st) == 0);
	const struct np_sym *sw = np_symtab_find(&st, "np_fx_switch");
	CHECK(np_symtab_at(&st, sw->addr + sw->size - 1) == sw);
	CHECK(np_symtab_at(&st, sw->addr) == sw);
	CHECK(np_symtab_at(&st, 0x10) == NULL);
	np_symtab_free(&st);
}

TEST(suggestions_name_close_functions_only)
{
	struct np_symtab st;
	char buf[256];
	REQUIRE(load("", &st) == 0);
	np_symtab_suggest(&st, "np_fx_swich", buf, sizeof(buf));
	CHECK_STR(buf, "did you mean: np_fx_switch?");
	np_symtab_suggest(&st, "np_fx_mu", buf, sizeof(buf));
	CHECK(!strncmp(buf, "did you mean: np_fx_mul, ", 25));
	np_symtab_suggest(&st, "zzzzzzzzzzzz", buf, sizeof(buf));
	CHECK_STR(buf, "");
	np_symtab_free(&st);
}

/* The file offset of vaddr, found independently through the section headers. */
static uint64_t text_offset(const char *path, uint64_t vaddr)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	uint64_t off = 0;
	for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && vaddr >= sh.sh_addr &&
		    vaddr < sh.sh_addr + sh.sh_size)
			off = sh.sh_offset + (vaddr - sh.sh_addr);
	}
	elf_end(elf);
	close(fd);
	return off;
}

TEST(file_offsets_map_to_vaddrs_through_program_headers)
{
	struct np_symtab st;
	uint64_t vaddr = 0;
	uint8_t a[16], b[16];
	REQUIRE(load("", &st) == 0);
	const struct np_sym *sw = np_symtab_find(&st, "np_fx_switch");
	uint64_t off = text_offset(st.path, sw->addr);
	CHECK(off != 0);
	CHECK_EQ(np_symtab_offset_to_vaddr(&st, off, &vaddr), 0);
	CHECK_EQ(vaddr, sw->addr);
	CHECK_EQ(np_symtab_offset_to_vaddr(&st, 1ull << 40, &vaddr), -ERANGE);
	int fd = open(st.path, O_RDONLY);
	CHECK(pread(fd, a, sizeof(a), (off_t)off) == sizeof(a));
	close(fd);
	CHECK_EQ(np_symtab_read(&st, sw->addr, b, sizeof(b)), 0);
	CHECK(!memcmp(a, b, sizeof(a)));
	CHECK_EQ(np_symtab_read(&st, 1ull << 40, b, sizeof(b)), -EFAULT);
	np_symtab_free(&st);
}

TEST(load_refuses_missing_and_non_elf_files)
{
	struct np_symtab st;
	char err[256];
	CHECK_EQ(np_symtab_load("/nonexistent/np", &st, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "No such file") != NULL);
	CHECK_EQ(np_symtab_load("/dev/null", &st, err, sizeof(err)), -ENOEXEC);
	CHECK(strstr(err, "not an ELF file") != NULL);
}

static const char *base_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static bool resolves_to_lib(const char *name, pid_t pid, const char *stem)
{
	char out[PATH_MAX], err[256] = "";
	if (np_resolve_path(name, pid, out, sizeof(out), err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", name, err);
		return false;
	}
	const char *b = base_of(out);
	size_t n = strlen(stem);
	return out[0] == '/' && !strncmp(b, stem, n) && (b[n] == '.' || b[n] == '-');
}

TEST(library_short_names_resolve_through_ld_so_cache)
{
	CHECK(resolves_to_lib("c", 0, "libc"));
	CHECK(resolves_to_lib("libc", 0, "libc"));
	CHECK(resolves_to_lib("libc.so.6", 0, "libc"));
	CHECK(resolves_to_lib("m", 0, "libm"));
	CHECK(resolves_to_lib("pthread", 0, "libpthread"));
}

TEST(library_short_names_resolve_through_process_maps)
{
	CHECK(resolves_to_lib("c", getpid(), "libc"));
	CHECK(resolves_to_lib("libc.so.6", getpid(), "libc"));
}

TEST(program_names_resolve_through_PATH)
{
	char out[PATH_MAX], err[256];
	struct stat sb;
	CHECK_EQ(np_resolve_path("sh", 0, out, sizeof(out), err, sizeof(err)), 0);
	CHECK(out[0] == '/' && stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && !access(out, X_OK));
	CHECK_EQ(np_resolve_path("./x/../y", 0, out, sizeof(out), err, sizeof(err)), 0);
	CHECK(out[0] == '/');
}

TEST(unknown_names_say_where_they_were_looked_for)
{
	char out[PATH_MAX], err[256];
	CHECK_EQ(np_resolve_path("np-no-such-prog", 0, out, sizeof(out), err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "unknown binary 'np-no-such-prog': not found in $PATH");
	CHECK_EQ(np_resolve_path("libnp_none", 0, out, sizeof(out), err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "library 'libnp_none' not found in ld.so.cache");
	char want[128];
	snprintf(want, sizeof(want), "library 'np_none' not found in process %d nor in ld.so.cache",
		 (int)getpid());
	CHECK_EQ(np_resolve_path("np_none", getpid(), out, sizeof(out), err, sizeof(err)), -ENOENT);
	CHECK_STR(err, want);
	CHECK_EQ(np_resolve_path("c", 99999999, out, sizeof(out), err, sizeof(err)), -ESRCH);
	CHECK_STR(err, "process 99999999 not found");
}

TEST(versioned_symbols_are_found_by_their_plain_name)
{
	char path[512], err[256];
	struct np_symtab st;
	CHECK_EQ(np_resolve_path("libc.so.6", 0, path, sizeof(path), err, sizeof(err)), 0);
	CHECK_EQ(np_symtab_load(path, &st, err, sizeof(err)), 0);
	const struct np_sym *s = np_symtab_find(&st, "dlopen"); /* dlopen@@GLIBC_2.34 */
	CHECK(s != NULL);
	for (size_t i = 0; i < st.n; i++)
		if (strchr(st.syms[i].name, '@')) {
			CHECK_STR(st.syms[i].name, "(no version suffix)");
			break;
		}
	np_symtab_free(&st);
}

/* libc's local functions are only in its separate debug file (libc6-dbg,
 * which make deps installs): found there, with the exports of .dynsym. */
TEST(libc_local_functions_come_from_its_debug_file)
{
	char path[512], err[256];
	struct np_symtab st;
	CHECK_EQ(np_resolve_path("c", 0, path, sizeof(path), err, sizeof(err)), 0);
	REQUIRE(np_symtab_load(path, &st, err, sizeof(err)) == 0);
	const struct np_sym *s = np_symtab_find(&st, "_int_malloc");
	CHECK(s && s->source == NP_SYM_DEBUGFILE && s->size > 0);
	const struct np_sym **m = NULL;
	size_t n = np_symtab_match(&st, "malloc", &m);
	CHECK(n == 1 && m[0]->size > 0);
	free(m);
	np_symtab_free(&st);
}

TEST(cxx_names_demangle_and_shorten_to_what_people_write)
{
	static const struct {
		const char *mangled, *demangled, *short_name;
	} v[] = {
		{"_ZN4shop4Cart5priceEi", "shop::Cart::price(int)", "shop::Cart::price"},
		{"_ZNK4shop4Cart5totalEv", "shop::Cart::total() const", "shop::Cart::total"},
		{"_ZN1A1fEPFviE", "A::f(void (*)(int))", "A::f"},
		{"_ZN4shop4Cart5priceEi.isra.0", "shop::Cart::price(int) [clone .isra.0]",
		 "shop::Cart::price"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		char *d = np_demangle(v[i].mangled);
		CHECK_STR(d ? d : "(null)", v[i].demangled);
		char *sh = d ? np_demangled_short(d) : NULL;
		CHECK_STR(sh ? sh : "(null)", v[i].short_name);
		free(d);
		free(sh);
	}
	CHECK(np_demangle("malloc") == NULL);
	CHECK(np_demangle("_Znot_a_name") == NULL);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * np_read_user and np_read_user_str end to end: good reads equal memcpy,
 * bad addresses of every kind give EFAULT with the readable prefix, reads
 * from probe handlers (JUMP and TRAP), from signal handlers and from
 * threads on an alternate stack, and the program's own SIGSEGV/SIGBUS
 * handling left as it was: handlers set before the guard still get their
 * faults (with their mask and flags), default dispositions still kill,
 * and a handler set after the guard turns reads into the safe syscall
 * path without ever being called.
 *
 * Order matters: the tests that fork run first, so that each child
 * installs the guard over the disposition it sets itself; then the guard
 * goes in for this process over a program handler; the handler set after
 * the guard comes last.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "test.h"

#define ERRNO_CANARY 4242

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* n readable pages, then one PROT_NONE page: returns the first page. */
static char *map_with_guard(size_t n)
{
	size_t ps = page_size();
	char *p = mmap(NULL, (n + 1) * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	mprotect(p + n * ps, ps, PROT_NONE);
	return p;
}

static void unmap_with_guard(char *p, size_t n)
{
	munmap(p, (n + 1) * page_size());
}

/* A page that was mapped and no longer is. */
static uint64_t unmapped_page(void)
{
	char *p = map_with_guard(0);
	unmap_with_guard(p, 0);
	return (uint64_t)(uintptr_t)p;
}

/* ---- the program's own faults (forked children, guard installed there) -- */

static volatile int sink;

/* A fault of the program's own, outside the copy routine. */
static void fault_in_program(void)
{
	char *p = map_with_guard(0);
	sink = *(volatile char *)p;
}

static void set_disposition(int sig, void (*h)(int))
{
	struct sigaction sa = {.sa_handler = h};
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/* Run fn in a child without core dumps; its wait status. */
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		fn();
		_exit(0);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	return st;
}

static bool killed_by(int st, int sig)
{
	return WIFSIGNALED(st) && WTERMSIG(st) == sig;
}

static void dfl_then_fault(void)
{
	set_disposition(SIGSEGV, SIG_DFL);
	if (!np_fault_guard_refresh())
		_exit(3);
	fault_in_program();
}

static void ign_then_fault(void)
{
	set_disposition(SIGSEGV, SIG_IGN);
	np_fault_guard_refresh();
	fault_in_program();
}

static void dfl_then_raise(void)
{
	set_disposition(SIGSEGV, SIG_DFL);
	np_fault_guard_refresh();
	raise(SIGSEGV);
}

static void ign_then_raise(void)
{
	set_disposition(SIGSEGV, SIG_IGN);
	np_fault_guard_refresh();
	raise(SIGSEGV);
}

/* Reading past the end of a mapped file raises SIGBUS. */
static char *map_past_eof(void)
{
	FILE *f = tmpfile();
	if (!f || ftruncate(fileno(f), (off_t)page_size()))
		return NULL;
	char *p = mmap(NULL, 2 * page_size(), PROT_READ, MAP_SHARED, fileno(f), 0);
	fclose(f);
	return p == MAP_FAILED ? NULL : p + page_size();
}

static void dfl_then_bus(void)
{
	set_disposition(SIGBUS, SIG_DFL);
	np_fault_guard_refresh();
	sink = *(volatile char *)map_past_eof();
}

TEST(program_fault_under_sig_dfl_still_kills_with_sigsegv)
{
	CHECK(killed_by(in_child(dfl_then_fault), SIGSEGV));
}

TEST(program_fault_under_sig_ign_still_kills_with_sigsegv)
{
	CHECK(killed_by(in_child(ign_then_fault), SIGSEGV));
}

TEST(sent_sigsegv_under_sig_dfl_still_kills)
{
	CHECK(killed_by(in_child(dfl_then_raise), SIGSEGV));
}

TEST(sent_sigsegv_under_sig_ign_is_still_ignored)
{
	int st = in_child(ign_then_raise);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(program_bus_error_under_sig_dfl_still_kills_with_sigbus)
{
	CHECK(killed_by(in_child(dfl_then_bus), SIGBUS));
}

static sigjmp_buf resethand_jb;
static void resethand_handler(int sig)
{
	siglongjmp(resethand_jb, sig);
}

/* SA_RESETHAND: the handler gets the first fault, the default the second. */
static void resethand_then_fault_twice(void)
{
	struct sigaction sa = {.sa_handler = resethand_handler, .sa_flags = SA_RESETHAND};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	np_fault_guard_refresh();
	if (sigsetjmp(resethand_jb, 1) == 0)
		fault_in_program();
	else
		fault_in_program();
	_exit(4);
}

TEST(program_handler_with_sa_resethand_runs_once_then_the_default_kills)
{
	CHECK(killed_by(in_child(resethand_then_fault_twice), SIGSEGV));
}

/* ---- a program handler installed before the guard (this process) -------- */

static sigjmp_buf before_jb;
static volatile sig_atomic_t before_hits, before_mask_ok, before_bus_hits;

static void before_segv(int sig, siginfo_t *si, void *uc)
{
	sigset_t now;
	(void)si, (void)uc;
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	/* its sa_mask (SIGUSR2) and, without SA_NODEFER, SIGSEGV itself */
	before_mask_ok = sigismember(&now, SIGUSR2) && sigismember(&now, SIGSEGV);
	before_hits++;
	siglongjmp(before_jb, sig);
}

static void before_bus(int sig)
{
	before_bus_hits++;
	siglongjmp(before_jb, sig);
}

static void install_before_handlers(void)
{
	struct sigaction sa = {.sa_sigaction = before_segv, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGSEGV, &sa, NULL);
	struct sigaction bus = {.sa_handler = before_bus};
	sigemptyset(&bus.sa_mask);
	sigaction(SIGBUS, &bus, NULL);
}

static bool handler_is(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction cur;
	sigaction(sig, NULL, &cur);
	return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fn;
}

TEST(program_handlers_installed_before_the_guard_still_get_their_faults)
{
	install_before_handlers();
	CHECK(np_fault_guard_refresh());
	CHECK(!handler_is(SIGSEGV, before_segv)); /* the guard is in front */

	if (sigsetjmp(before_jb, 1) == 0)
		fault_in_program();
	CHECK_EQ(before_hits, 1);
	CHECK(before_mask_ok);

	char *past_eof = map_past_eof();
	CHECK(past_eof != NULL);
	if (past_eof && sigsetjmp(before_jb, 1) == 0)
		sink = *(volatile char *)past_eof;
	CHECK_EQ(before_bus_hits, 1);

	/* and the engine's own faults never reach them */
	char c;
	CHECK_EQ(np_read_user(&c, 0, 1), -1);
	CHECK_EQ(np_read_user(&c, (uint64_t)(uintptr_t)past_eof, 1), -1);
	CHECK_EQ(before_hits, 1);
	CHECK_EQ(before_bus_hits, 1);
}

/* ---- good reads --------------------------------------------------------- */

/* The fast path; installs the guard when a test runs on its own. */
static void guard_in_place(void)
{
	CHECK(np_fault_guard_refresh());
}

TEST(good_reads_of_every_length_and_alignment_equal_memcpy)
{
	guard_in_place();
	uint8_t src[64 + 16], dst[64 + 16], want[64 + 16];
	for (unsigned i = 0; i < sizeof src; i++)
		src[i] = (uint8_t)(i * 37 + 11);
	for (unsigned align = 0; align < 16; align++)
		for (unsigned len = 0; len <= 64; len++) {
			memset(dst, 0xa5, sizeof dst);
			memset(want, 0xa5, sizeof want);
			memcpy(want, src + align, len);
			errno = ERRNO_CANARY;
			CHECK_EQ(np_read_user(dst, (uint64_t)(uintptr_t)(src + align), len), 0);
			CHECK_EQ(errno, ERRNO_CANARY);
			CHECK(memcmp(dst, want, sizeof dst) == 0);
		}
}

TEST(read_of_the_last_bytes_before_a_guard_page_succeeds)
{
	guard_in_place();
	char *p = map_with_guard(1);
	uint64_t end = (uint64_t)(uintptr_t)(p + page_size());
	memset(p, 'x', page_size());
	char dst[16];
	for (unsigned len = 1; len <= 16; len++)
		CHECK_EQ(np_read_user(dst, end - len, len), 0);
	unmap_with_guard(p, 1);
}

/* ---- bad addresses ------------------------------------------------------ */

static void check_efault(uint64_t addr, size_t len)
{
	uint8_t dst[64];
	errno = 0;
	int rc = np_read_user(dst, addr, len);
	if (rc != -1 || errno != EFAULT)
		fprintf(stderr, "# read 0x%" PRIx64 "+%zu: %d, errno %d\n", addr, len, rc, errno);
	CHECK_EQ(rc, -1);
	CHECK_EQ(errno, EFAULT);
}

TEST(null_and_tiny_addresses_fail_with_efault)
{
	guard_in_place();
	for (size_t len = 1; len <= 64; len *= 2) {
		check_efault(0, len);
		check_efault(1, len);
		check_efault(0x1000 - 4, len);
	}
}

TEST(prot_none_and_unmapped_pages_fail_with_efault)
{
	guard_in_place();
	char *p = map_with_guard(0);
	for (size_t len = 1; len <= 64; len *= 2) {
		check_efault((uint64_t)(uintptr_t)p, len);
		check_efault(unmapped_page(), len);
	}
	unmap_with_guard(p, 0);
}

TEST(read_crossing_into_a_guard_page_keeps_the_readable_prefix)
{
	guard_in_place();
	char *p = map_with_guard(1);
	char *end = p + page_size();
	for (unsigned i = 0; i < page_size(); i++)
		p[i] = (char)(i * 7 + 1);
	for (unsigned before = 1; before <= 17; before++)
		for (unsigned after = 1; after <= 17; after += 4) {
			char dst[40];
			memset(dst, 0, sizeof dst);
			check_efault((uint64_t)(uintptr_t)(end - before), before + after);
			errno = 0;
			np_read_user(dst, (uint64_t)(uintptr_t)(end - before), before + after);
			CHECK(memcmp(dst, end - before, before) == 0);
			CHECK_EQ(dst[before], 0); /* nothing past the fault */
		}
	unmap_with_guard(p, 1);
}

TEST(kernel_and_non_canonical_addresses_fail_with_efault)
{
	guard_in_place();
	static const uint64_t bad[] = {
		0xffffffff81000000, /* the kernel's text */
		0xffff800000000000, /* the start of the kernel half */
		0xfffffffffffffff8, /* and its end */
		0x0000800000000000, /* first non-canonical with 4-level paging */
		0x00ff000000000000, /* non-canonical up to 5-level's reach */
		0x8000000000000000,
		0x00007ffffffffffc, /* runs from the last user page over the edge */
	};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		for (size_t len = 1; len <= 16; len *= 2)
			check_efault(bad[i], len);
	check_efault(0x1000, SIZE_MAX); /* addr + len wraps */
}

TEST(read_past_the_end_of_a_mapped_file_fails_with_efault)
{
	guard_in_place();
	char *p = map_past_eof();
	CHECK(p != NULL);
	if (p)
		check_efault((uint64_t)(uintptr_t)p, 8);
}

TEST(zero_length_read_succeeds_anywhere)
{
	guard_in_place();
	errno = ERRNO_CANARY;
	CHECK_EQ(np_read_user(NULL, 0, 0), 0);
	CHECK_EQ(errno, ERRNO_CANARY);
}

/* ---- strings ------------------------------------------------------------ */

static void check_str(uint64_t addr, size_t len, long want_ret, const char *want)
{
	char dst[64];
	memset(dst, 0x5a, sizeof dst);
	errno = ERRNO_CANARY;
	long n = np_read_user_str(dst, addr, len);
	CHECK_EQ(n, want_ret);
	CHECK_EQ(errno, n < 0 ? EFAULT : ERRNO_CANARY);
	CHECK_STR(dst, want);
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

TEST(string_is_copied_with_its_length)
{
	guard_in_place();
	check_str(addr_of("hello"), 32, 5, "hello");
	check_str(addr_of(""), 32, 0, "");
}

TEST(string_of_exactly_len_minus_1_fits)
{
	guard_in_place();
	check_str(addr_of("hello"), 6, 5, "hello");
}

TEST(string_longer_than_len_minus_1_is_cut_and_terminated)
{
	guard_in_place();
	check_str(addr_of("hello"), 5, 4, "hell");
	check_str(addr_of("hello"), 1, 0, "");
}

/* What np_read_user_str must give: strnlen, memcpy, terminate. */
static long reference_str(char *dst, const char *src, size_t len)
{
	size_t n = strnlen(src, len - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
	return (long)n;
}

static void check_strings_against_reference(void)
{
	char src[128], dst[80], want[80];
	for (unsigned align = 0; align < 16; align++)
		for (unsigned slen = 0; slen <= 40; slen++) {
			memset(src, 'a', sizeof src);
			src[align + slen] = '\0';
			for (size_t len = 1; len <= 48; len++) {
				memset(dst, 0x5a, sizeof dst);
				memset(want, 0x5a, sizeof want);
				long want_n = reference_str(want, src + align, len);
				CHECK_EQ(np_read_user_str(dst, addr_of(src + align), len), want_n);
				CHECK(memcmp(dst, want, (size_t)want_n + 1) == 0);
			}
		}
}

TEST(strings_of_every_length_alignment_and_limit_equal_the_reference)
{
	guard_in_place();
	check_strings_against_reference();
}

TEST(strings_running_into_a_guard_page_at_every_alignment_keep_their_prefix)
{
	guard_in_place();
	char *p = map_with_guard(1), *end = p + page_size();
	memset(p, 'b', page_size());
	for (unsigned before = 1; before <= 24; before++) {
		char dst[64];
		errno = 0;
		CHECK_EQ(np_read_user_str(dst, addr_of(end - before), sizeof dst), -1);
		CHECK_EQ(errno, EFAULT);
		CHECK_EQ(strlen(dst), before);
	}
	unmap_with_guard(p, 1);
}

TEST(string_of_len_0_writes_nothing)
{
	guard_in_place();
	char c = 'q';
	CHECK_EQ(np_read_user_str(&c, 0, 0), 0);
	CHECK_EQ(c, 'q');
}

TEST(string_running_into_a_guard_page_fails_with_its_prefix)
{
	guard_in_place();
	char *p = map_with_guard(1);
	char *end = p + page_size();
	memcpy(end - 4, "abcd", 4); /* no NUL before the guard page */
	check_str(addr_of(end - 4), 32, -1, "abcd");
	check_str(addr_of(end - 4), 5, 4, "abcd"); /* cut before the fault */
	memcpy(end - 4, "abc", 4);
	check_str(addr_of(end - 4), 32, 3, "abc"); /* NUL on the last byte */
	unmap_with_guard(p, 1);
}

TEST(string_from_bad_addresses_fails_with_efault)
{
	guard_in_place();
	check_str(0, 32, -1, "");
	check_str(unmapped_page(), 32, -1, "");
	check_str(0xffffffff81000000, 32, -1, "");
	check_str(0x0000800000000000, 32, -1, "");
}

/* ---- from probe handlers ------------------------------------------------ */

struct seen {
	unsigned calls;
	int read_rc, read_errno;
	long str_rc;
	int str_errno;
	uint64_t word;
	char str[16];
};

static E2E_NOIPA int take_pointer(const char *p)
{
	return p != NULL;
}
static int (*volatile take_pointer_p)(const char *) = take_pointer;

/* What a tracer does with a string argument; it keeps the program's errno. */
static void read_arg(struct np_ctx *ctx, void *data)
{
	struct seen *s = data;
	int saved = errno;
	uint64_t p = np_ctx_arg(ctx, 0);
	s->read_rc = np_read_user(&s->word, p, sizeof s->word);
	s->read_errno = s->read_rc ? errno : 0;
	s->str_rc = np_read_user_str(s->str, p, sizeof s->str);
	s->str_errno = s->str_rc < 0 ? errno : 0;
	s->calls++;
	errno = saved;
}

static void call_and_check(struct seen *s, const char *arg, bool good)
{
	memset(s, 0, sizeof *s);
	errno = ERRNO_CANARY;
	take_pointer_p(arg);
	CHECK_EQ(errno, ERRNO_CANARY);
	CHECK_EQ(s->calls, 1);
	CHECK_EQ(s->read_rc, good ? 0 : -1);
	CHECK_EQ(s->read_errno, good ? 0 : EFAULT);
	CHECK_EQ(s->str_rc, good ? (long)strlen(arg) : -1);
	CHECK_EQ(s->str_errno, good ? 0 : EFAULT);
	CHECK_STR(s->str, good ? arg : "");
}

static void read_in_handler(enum np_strategy strategy)
{
	static struct seen s;
	guard_in_place();
	struct np_probe_opts o = e2e_opts(read_arg, &s, strategy);
	struct np_probe *p = np_probe_attach((void *)take_pointer, &o);
	CHECK(p != NULL);
	if (!p)
		return;
	char *guard = map_with_guard(0);
	call_and_check(&s, "a good string", true);
	call_and_check(&s, NULL, false);
	call_and_check(&s, guard, false);
	call_and_check(&s, (const char *)(uintptr_t)unmapped_page(), false);
	call_and_check(&s, (const char *)(uintptr_t)0xffffffff81000000, false);
	CHECK_EQ(np_probe_hits(p), 5);
	CHECK_EQ(e2e_detach_free(p), 0);
	unmap_with_guard(guard, 0);
}

TEST(probe_handler_reading_a_bad_pointer_gets_efault_and_the_program_runs_on)
{
	read_in_handler(NP_STRATEGY_AUTO);
}

TEST(trap_probe_handler_reading_a_bad_pointer_gets_efault)
{
	read_in_handler(NP_STRATEGY_TRAP); /* the read faults inside SIGTRAP */
}

/* ---- signal handlers, alternate stacks, threads ------------------------- */

static volatile int in_signal_rc, in_signal_errno;

static void read_bad_in_signal(int sig)
{
	char c;
	(void)sig;
	in_signal_rc = np_read_user(&c, 0, 1);
	in_signal_errno = errno;
}

static void raise_and_check(void)
{
	in_signal_rc = 0;
	in_signal_errno = 0;
	raise(SIGUSR1);
	CHECK_EQ(in_signal_rc, -1);
	CHECK_EQ(in_signal_errno, EFAULT);
}

TEST(read_in_a_signal_handler_fails_safely)
{
	guard_in_place();
	set_disposition(SIGUSR1, read_bad_in_signal);
	raise_and_check();
	set_disposition(SIGUSR1, SIG_DFL);
}

static void *on_altstack(void *arg)
{
	static char stack[64 * 1024];
	stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
	(void)arg;
	sigaltstack(&ss, NULL);
	char c;
	CHECK_EQ(np_read_user(&c, 0, 1), -1);
	/* a handler running on the alternate stack nests the fault there */
	struct sigaction sa = {.sa_handler = read_bad_in_signal, .sa_flags = SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	raise_and_check();
	set_disposition(SIGUSR1, SIG_DFL);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	return NULL;
}

TEST(reads_fail_safely_on_a_thread_with_a_sigaltstack)
{
	guard_in_place();
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, on_altstack, NULL), 0);
	pthread_join(t, NULL);
}

static void *read_storm(void *arg)
{
	char *guard = arg, dst[32];
	const char good[32] = "thirty-one bytes of good memory";
	for (int i = 0; i < 2000; i++) {
		CHECK_EQ(np_read_user(dst, addr_of(guard - 8), 16), -1);
		CHECK_EQ(np_read_user(dst, addr_of(good), sizeof good), 0);
		CHECK(memcmp(dst, good, sizeof good) == 0);
	}
	return NULL;
}

TEST(concurrent_faulting_reads_on_several_threads)
{
	guard_in_place();
	char *p = map_with_guard(1);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, read_storm, p + page_size());
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	unmap_with_guard(p, 1);
}

/* ---- a program handler installed after the guard (keep last) ------------ */

static volatile sig_atomic_t after_hits;
static void after_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	after_hits++;
	_exit(99); /* a faulthandler would dump and die */
}

TEST(program_handler_installed_after_the_guard_is_noticed_and_never_called)
{
	struct sigaction sa = {.sa_sigaction = after_segv, .sa_flags = SA_SIGINFO}, ours;
	sigemptyset(&sa.sa_mask);
	CHECK(np_fault_guard_refresh());
	sigaction(SIGSEGV, &sa, &ours);
	e2e_log_capture();
	CHECK(!np_fault_guard_refresh());
	CHECK(strstr(e2e_log_state.last, "replaced") != NULL);

	/* the syscall path: same answers, same prefixes, errno kept */
	check_efault(0, 8);
	check_efault(0xffffffff81000000, 8);
	char *p = map_with_guard(1), *end = p + page_size(), dst[16] = {0};
	memcpy(end - 4, "wxyz", 4);
	check_efault(addr_of(end - 4), 12);
	np_read_user(dst, addr_of(end - 4), 12);
	CHECK(memcmp(dst, "wxyz", 4) == 0 && dst[4] == 0);
	check_str(addr_of(end - 4), 32, -1, "wxyz");
	check_str(addr_of("slow but sure"), 32, 13, "slow but sure");
	check_strings_against_reference();
	char src[20] = "nineteen characters";
	errno = ERRNO_CANARY;
	CHECK_EQ(np_read_user(dst, addr_of(src), 16), 0);
	CHECK_EQ(errno, ERRNO_CANARY);
	CHECK(memcmp(dst, src, 16) == 0);
	CHECK_EQ(after_hits, 0);

	sigaction(SIGSEGV, &ours, NULL); /* the program puts ours back */
	CHECK(np_fault_guard_refresh());
	unmap_with_guard(p, 1);
	np_set_log_fn(NULL, NULL);
}

TEST_MAIN()

/* SPDX-License-Identifier: MIT */
/*
 * np_inject_agent against live processes (progs/inject_target.c): asleep in
 * nanosleep, blocked in read(), spinning, stuck behind the loader lock,
 * statically linked. The agent (inject_lib.c) records each start in a file.
 * Whatever happens, the target's output must equal an undisturbed run's:
 * that is how we see that the registers, and the restart of the system call
 * the target was in, survived.
 *
 * Paths from the environment: NP_INJECT_TARGET, NP_INJECT_LIB, and
 * NP_INJECT_TARGET_STATIC (empty when there is no libc.a to link it).
 */
#include "inject/inject.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NP_TEST_MAGIC 0x4e500000 /* as in inject_lib.c */
#define SLEEP_MS      "300"
#define READ_DATA     "data written after the injection\n"

static const char *target, *target_static, *lib;
static pid_t kids[64];
static int nkids;

struct child {
	pid_t pid;
	int in, out; /* its stdin (we write), its stdout (we read) */
};

/* One injection and what it gave. */
struct inj {
	const char *agent, *sym;
	char file[64]; /* the agent appends a line per start here */
	int r, ret;
	char err[512];
};

__attribute__((constructor)) static void read_env(void)
{
	target = getenv("NP_INJECT_TARGET");
	target_static = getenv("NP_INJECT_TARGET_STATIC");
	lib = getenv("NP_INJECT_LIB");
	if (!target || !lib) {
		fprintf(stderr, "NP_INJECT_TARGET and NP_INJECT_LIB must be set\n");
		exit(1);
	}
}

__attribute__((destructor)) static void kill_kids(void)
{
	for (int i = 0; i < nkids; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	}
}

static void forget_kid(pid_t pid)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i] == pid)
			kids[i] = 0;
}

/* Reads up to the end of the line "ready", byte by byte to leave the rest. */
static bool saw_ready(int fd)
{
	char line[16];
	size_t n = 0;

	while (n < sizeof(line) - 1 && read(fd, line + n, 1) == 1 && line[n] != '\n')
		n++;
	line[n] = 0;
	return !strcmp(line, "ready");
}

static struct child spawn(const char *prog, const char *mode, const char *arg)
{
	int in[2], out[2];
	struct child c = {-1, -1, -1};

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || nkids == 64)
		return c;
	c.pid = fork();
	if (c.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(prog, prog, mode, arg, (char *)NULL);
		_exit(127);
	}
	kids[nkids++] = c.pid;
	close(in[0]);
	close(out[1]);
	c.in = in[1];
	c.out = out[0];
	CHECK(saw_ready(c.out));
	return c;
}

/* Lets the child end (stdin closed, SIGUSR1 for spin) and collects its output. */
static void finish(struct child *c, const char *mode, char *out, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int status = -1;

	if (!strcmp(mode, "read"))
		CHECK(write(c->in, READ_DATA, strlen(READ_DATA)) == (ssize_t)strlen(READ_DATA));
	if (!strcmp(mode, "spin") || !strcmp(mode, "masked") || !strcmp(mode, "inlib"))
		kill(c->pid, SIGUSR1);
	close(c->in);
	while (got < len - 1 && (n = read(c->out, out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(c->out);
	CHECK(waitpid(c->pid, &status, 0) == c->pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	forget_kid(c->pid);
}

/*
 * Waits until the main thread of pid is where we want it: in syscall nr
 * ("230") or "running", as /proc/PID/syscall says. Polled: nothing tells.
 */
static bool wait_in(pid_t pid, const char *want)
{
	struct timespec tick = {0, 1000 * 1000};
	char p[64], buf[256];

	snprintf(p, sizeof(p), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 5000; i++) {
		FILE *f = fopen(p, "re");
		bool ok = f && fscanf(f, "%255s", buf) == 1 && !strcmp(buf, want);

		if (f)
			fclose(f);
		if (ok)
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}

static void inj_init(struct inj *j, const char *agent, const char *sym)
{
	int fd;

	memset(j, 0, sizeof(*j));
	j->agent = agent;
	j->sym = sym;
	snprintf(j->file, sizeof(j->file), "/tmp/np-inject-XXXXXX");
	fd = mkstemp(j->file);
	CHECK(fd >= 0);
	close(fd);
}

static void inject(pid_t pid, struct inj *j)
{
	j->r = np_inject_agent(pid, j->agent, j->sym, j->file, &j->ret, j->err, sizeof(j->err));
	if (j->r)
		fprintf(stderr, "# inject: %d: %s\n", j->r, j->err);
}

/* What the agent wrote, then the file is gone. */
static void agent_log(struct inj *j, char *buf, size_t len)
{
	FILE *f = fopen(j->file, "re");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
	unlink(j->file);
}

/* Output of a run left alone. */
static void plain_run(const char *prog, const char *mode, const char *arg, char *out, size_t len)
{
	struct child c = spawn(prog, mode, arg);

	finish(&c, mode, out, len);
}

/*
 * A run injected `times` times once the target waits in `state`; checks
 * that the output is a plain run's. Returns the target's pid.
 */
static pid_t injected_run(const char *prog, const char *mode, const char *arg, const char *state,
			 struct inj *j, int times)
{
	char want[512], got[512];
	struct child c;

	plain_run(prog, mode, arg, want, sizeof(want));
	c = spawn(prog, mode, arg);
	CHECK(wait_in(c.pid, state));
	for (int i = 0; i < times; i++)
		inject(c.pid, j);
	finish(&c, mode, got, sizeof(got));
	CHECK_STR(got, want);
	return c.pid;
}

/* A start in `mode` that returned MAGIC + 1 and ran once, in the target. */
static void check_start(const char *mode, const char *state)
{
	struct inj j;
	char log[256], want[64];
	pid_t pid;

	inj_init(&j, lib, "np_test_start");
	pid = injected_run(target, mode, SLEEP_MS, state, &j, 1);
	CHECK_EQ(j.r, 0);
	CHECK_EQ(j.ret, NP_TEST_MAGIC + 1);
	agent_log(&j, log, sizeof(log));
	snprintf(want, sizeof(want), "pid=%d call=1\n", (int)pid);
	CHECK_STR(log, want);
}

/* A syscall as /proc/PID/syscall names it: by number. */
static const char *nr(long n)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "%ld", n);
	return buf;
}

TEST(agent_starts_in_process_asleep_in_nanosleep)
{
	check_start("sleep", nr(SYS_clock_nanosleep));
}

TEST(agent_starts_in_process_blocked_in_read)
{
	check_start("read", nr(SYS_read));
}

TEST(agent_starts_in_busy_looping_process)
{
	check_start("spin", "running");
}

TEST(second_injection_reuses_the_loaded_agent)
{
	struct inj j;
	char log[256];

	inj_init(&j, lib, "np_test_start");
	injected_run(target, "sleep", SLEEP_MS, nr(SYS_clock_nanosleep), &j, 2);
	CHECK_EQ(j.r, 0);
	CHECK_EQ(j.ret, NP_TEST_MAGIC + 2); /* the library's counter survived */
	agent_log(&j, log, sizeof(log));
	CHECK(strstr(log, " call=1\n") && strstr(log, " call=2\n"));
}

TEST(missing_process_is_reported)
{
	char err[256];
	int ret = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(waitpid(pid, NULL, 0) == pid);
	CHECK_EQ(np_inject_agent(pid, lib, "np_test_start", "", &ret, err, sizeof(err)), -ESRCH);
	CHECK(strstr(err, "not found") != NULL);
}

TEST(zombie_process_is_reported)
{
	char err[256];
	siginfo_t si;
	int ret = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0);
	CHECK_EQ(np_inject_agent(pid, lib, "np_test_start", "", &ret, err, sizeof(err)), -ESRCH);
	CHECK(strstr(err, "zombie") != NULL);
	waitpid(pid, NULL, 0);
}

TEST(traced_process_names_its_tracer)
{
	struct child c = spawn(target, "sleep", SLEEP_MS);
	char err[256], want[64];
	int ret = 0;

	CHECK(ptrace(PTRACE_SEIZE, c.pid, NULL, NULL) == 0);
	CHECK_EQ(np_inject_agent(c.pid, lib, "np_test_start", "", &ret, err, sizeof(err)), -EPERM);
	snprintf(want, sizeof(want), "already traced by process %d", (int)getpid());
	CHECK(strstr(err, want) != NULL);
	kill(c.pid, SIGKILL);
	waitpid(c.pid, NULL, 0);
	forget_kid(c.pid);
	close(c.in);
	close(c.out);
}

TEST(bad_agent_path_reports_dlerror_text)
{
	struct inj j;

	inj_init(&j, "/nonexistent/agent.so", "np_test_start");
	injected_run(target, "sleep", SLEEP_MS, nr(SYS_clock_nanosleep), &j, 1);
	CHECK_EQ(j.r, -ELIBACC);
	CHECK(strstr(j.err, "dlopen failed"));
	CHECK(strstr(j.err, "/nonexistent/agent.so: cannot open shared object file"));
	unlink(j.file);
}

TEST(missing_start_function_is_reported)
{
	struct inj j;

	inj_init(&j, lib, "no_such_start");
	injected_run(target, "read", NULL, nr(SYS_read), &j, 1);
	CHECK_EQ(j.r, -ENOENT);
	CHECK(strstr(j.err, "exports no function no_such_start"));
	unlink(j.file);
}

TEST(statically_linked_process_has_no_dlopen)
{
	struct inj j;

	if (!target_static || !*target_static) {
		printf("# skipped: no static libc to link the target with\n");
		return;
	}
	inj_init(&j, lib, "np_test_start");
	injected_run(target_static, "sleep", SLEEP_MS, nr(SYS_clock_nanosleep), &j, 1);
	CHECK_EQ(j.r, -EOPNOTSUPP);
	CHECK(strstr(j.err, "statically linked"));
	unlink(j.file);
}

/* Sends SIGUSR2 to the main thread of *pid once it waits for a futex. */
static void *poke_when_blocked(void *pid)
{
	char futex[16];

	snprintf(futex, sizeof(futex), "%d", SYS_futex);
	if (wait_in(*(pid_t *)pid, futex))
		tgkill(*(pid_t *)pid, *(pid_t *)pid, SIGUSR2);
	return NULL;
}

/*
 * dlopen waits for the loader lock a thread of the target holds forever; a
 * SIGUSR2 sent meanwhile reaches the program's handler only once the call
 * is abandoned, and cuts its nanosleep short as it would have at once.
 */
TEST(call_blocked_on_loader_lock_times_out_and_holds_back_signals)
{
	char want[256], got[256];
	struct child c = spawn(target, "lock", "10000");
	struct inj j;
	pthread_t th;

	CHECK(wait_in(c.pid, nr(SYS_clock_nanosleep)));
	tgkill(c.pid, c.pid, SIGUSR2);
	finish(&c, "lock", want, sizeof(want));
	CHECK_STR(want, "sleep 10000 ms: rc=4 long_enough=0\nusr2=1\n");

	inj_init(&j, lib, "np_test_start");
	c = spawn(target, "lock", "10000");
	CHECK(wait_in(c.pid, nr(SYS_clock_nanosleep)));
	CHECK(pthread_create(&th, NULL, poke_when_blocked, &c.pid) == 0);
	inject(c.pid, &j);
	pthread_join(th, NULL);
	finish(&c, "lock", got, sizeof(got));
	CHECK_STR(got, want);
	CHECK_EQ(j.r, -ETIMEDOUT);
	CHECK(strstr(j.err, "dlopen did not return"));
	unlink(j.file);
}

/*
 * The thread we borrow blocks SIGTRAP (it may be in a signal handler, or a
 * server's thread that blocks every signal) and our call meets a
 * breakpoint, as it meets a TRAP probe of a session under way. The kernel
 * forces a blocked fault on, resetting the handler to SIG_DFL for the
 * whole process: the program lost its SIGTRAP handler (the engine's, in a
 * traced one) and died at the next breakpoint. The faults are unblocked
 * for our calls and the mask put back: the program's handler takes the
 * breakpoint, and keeps its handler and its mask.
 */
TEST(breakpoint_in_a_thread_that_blocks_sigtrap_keeps_handler_and_mask)
{
	struct inj j;

	inj_init(&j, lib, "np_test_trap");
	injected_run(target, "masked", NULL, "running", &j, 1);
	CHECK_EQ(j.r, 0);
	CHECK_EQ(j.ret, NP_TEST_MAGIC);
	unlink(j.file);
}

/*
 * The thread runs the agent's code: a probe's handler, or the engine's
 * signal handler where it waits while another session rewrites code.
 * Made to call dlopen there, it would run half-written code. It is let
 * go and tried again, and after a while the injection is refused,
 * leaving the process as it was. Here the target waits in pause() in the
 * library given as the agent.
 */
TEST(thread_inside_the_agent_is_not_borrowed)
{
	char want[256], got[256];
	struct inj j;
	struct child c;

	plain_run(target, "inlib", lib, want, sizeof(want));
	inj_init(&j, lib, "np_test_start");
	c = spawn(target, "inlib", lib);
	CHECK(wait_in(c.pid, nr(SYS_pause)));
	inject(c.pid, &j);
	finish(&c, "inlib", got, sizeof(got));
	CHECK_STR(got, want);
	CHECK_EQ(j.r, -EBUSY);
	CHECK(strstr(j.err, "stays inside nanoprobe's agent"));
	agent_log(&j, got, sizeof(got));
	CHECK_STR(got, ""); /* the start function never ran */
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NP_CLANG_ASAN 1
#endif
#endif

TEST(crash_in_start_function_leaves_process_running)
{
	struct inj j;

#if defined(__SANITIZE_ADDRESS__) || defined(NP_CLANG_ASAN)
	/* the target's SIGSEGV handler is ASan's, which the fault is passed
	 * to, as to any handler of the program's: it reports and exits */
	printf("# skipped: a sanitizer build's target handles SIGSEGV itself\n");
	return;
#endif
	inj_init(&j, lib, "np_test_crash");
	injected_run(target, "spin", NULL, "running", &j, 1);
	CHECK_EQ(j.r, -EFAULT);
	CHECK(strstr(j.err, "np_test_crash crashed in process"));
	unlink(j.file);
}

TEST_MAIN()

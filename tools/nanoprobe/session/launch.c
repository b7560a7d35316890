/* SPDX-License-Identifier: MIT */
/*
 * Starting the program with the agent preloaded, or injecting the agent
 * into a running process (inject.c does the ptrace work).
 */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/proto.h"
#include "cli.h"
#include "inject/inject.h"
#include "inject/masks.h"
#include "session.h" /* SESSION_MAX_PIDS */

#define AGENT_NAME "libnanoprobe-agent.so"

static pid_t child = -1;
static int child_status = -1;
/* -p: the threads whose masks we changed, per process */
static struct np_masks masks[SESSION_MAX_PIDS];
static size_t nmasks;

static bool usable(const char *path)
{
	return access(path, R_OK) == 0;
}

int launch_agent_path(char *out, size_t len, char *err, size_t errlen)
{
	const char *env = getenv("NANOPROBE_AGENT");
	char exe[PATH_MAX];
	static const char *const beside[] = {"/../lib/nanoprobe/" AGENT_NAME,
					     "/../../src/agent/" AGENT_NAME};
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return usable(out) ? 0 : (snprintf(err, errlen, "NANOPROBE_AGENT=%s: %s", env,
						   strerror(errno)), -ENOENT);
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	for (size_t i = 0; i < sizeof(beside) / sizeof(*beside); i++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s%s", exe, beside[i]);
		if (usable(path) && realpath(path, out))
			return 0;
	}
	snprintf(err, errlen, "cannot find %s next to %s (set NANOPROBE_AGENT)", AGENT_NAME, exe);
	return -ENOENT;
}

/* LD_PRELOAD is ignored by a program without an interpreter. */
bool launch_is_static(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool dynamic = false;
	elf_version(EV_CURRENT);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t n = 0;
	if (e && elf_getphdrnum(e, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				dynamic = true;
		}
	/* a script is not ELF: its interpreter, started by exec, gets the
	 * environment and so the agent */
	bool is_elf = e && elf_kind(e) == ELF_K_ELF;
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return is_elf && !dynamic;
}

/* A sanitizer build's agent brings the ASan runtime with it, after the
 * program's own libraries in load order, which ASan checks by default. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1 /* clang's spelling */
#endif
#endif

static int sanitizer_env(void)
{
#if defined(__SANITIZE_ADDRESS__)
	const char *old = getenv("ASAN_OPTIONS");
	char *v = NULL;
	int rc = asprintf(&v, "%s%sverify_asan_link_order=0", old ? old : "", old ? ":" : "") < 0
			 ? -1
			 : setenv("ASAN_OPTIONS", v, 1);
	free(v);
	return rc;
#else
	return 0;
#endif
}

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#endif

bool launch_agent_foreign(const char *agent)
{
	int fd = open(agent, O_RDONLY | O_CLOEXEC);
	elf_version(EV_CURRENT);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	GElf_Ehdr eh;
	bool foreign = e && gelf_getehdr(e, &eh) && eh.e_machine != HOST_MACHINE;
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return foreign;
}

/* An agent built for another ISA goes to a program that qemu-user runs
 * (CMD is qemu-ARCH, or binfmt_misc starts it): in LD_PRELOAD the host's
 * loader would try it on the emulator itself and complain on stderr, so
 * it goes into the guest's environment alone, through QEMU_SET_ENV (a
 * comma-separated list of VAR=VALUE, hence no comma in the paths). The
 * socket's variable reaches the guest as every other variable does. */
static int preload_var(const char *agent)
{
	const char *old = getenv("LD_PRELOAD");
	bool foreign = launch_agent_foreign(agent);
	const char *qemu = foreign ? getenv("QEMU_SET_ENV") : NULL;
	char *v = NULL;
	if (foreign && (strchr(agent, ',') || (old && strchr(old, ',')))) {
		errno = EINVAL;
		return -1;
	}
	if (asprintf(&v, "%s%s%s%s%s%s", qemu && *qemu ? qemu : "", qemu && *qemu ? "," : "",
		     foreign ? "LD_PRELOAD=" : "", agent, old && *old ? ":" : "",
		     old ? old : "") < 0)
		return -1;
	int rc = setenv(foreign ? "QEMU_SET_ENV" : "LD_PRELOAD", v, 1);
	free(v);
	return rc;
}

static int preload_env(const char *agent, const char *sock, bool follow)
{
	if (sanitizer_env() || preload_var(agent))
		return -1;
	char target[160];
	/* see agent.c; fixed width, as the name (session.c) */
	snprintf(target, sizeof(target), "%s@%010d", sock, (int)getpid());
	if (follow && setenv(NP_AGENT_ENV_FOLLOW, "1", 1))
		return -1;
	return setenv(NP_AGENT_ENV_SOCK, target, 1);
}

/* The child reports a failed exec through a close-on-exec pipe. It gets
 * the signals the session takes over as nanoprobe got them: the session
 * ignores SIGPIPE, and an ignored signal would stay ignored across exec (a
 * program whose pipe closes would no longer die of it); it catches SIGHUP,
 * and a caught one would be reset (nohup's SIGHUP lost). */
static void exec_child(char **cmd, const char *agent, const char *sock, bool stdout_to_stderr,
		       bool follow, int report)
{
	cli_restore_signals();
	int err = preload_env(agent, sock, follow) ? errno : 0;
	if (!err && stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		err = errno;
	if (!err) {
		execvp(cmd[0], cmd);
		err = errno;
	}
	if (write(report, &err, sizeof(err)) < 0) {
	}
	_exit(127);
}

int launch_command(char **cmd, const char *sock, bool stdout_to_stderr, bool follow, pid_t *pid,
		   char *err, size_t errlen)
{
	char agent[PATH_MAX];
	int pipefd[2], rc = launch_agent_path(agent, sizeof(agent), err, errlen);
	if (rc)
		return rc;
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child == 0)
		exec_child(cmd, agent, sock, stdout_to_stderr, follow, pipefd[1]);
	close(pipefd[1]);
	int child_err = 0;
	ssize_t n = child > 0 ? read(pipefd[0], &child_err, sizeof(child_err)) : -1;
	close(pipefd[0]);
	if (child < 0 || n > 0) {
		snprintf(err, errlen, "cannot run '%s': %s", cmd[0],
			 strerror(child < 0 ? errno : child_err));
		if (child > 0)
			waitpid(child, NULL, 0);
		child = -1;
		return -ENOEXEC;
	}
	*pid = child;
	return 0;
}

/*
 * The injection runs in a child of ours, in a process group of its own
 * and deaf to the signals that end a command: while the target's thread
 * runs dlopen for us, only its tracer can put its registers back. Were
 * this process the tracer, a SIGKILL in those milliseconds (the user's,
 * the OOM killer's, timeout's) would let the thread go on from inside the
 * call, to wait forever where the call waited or to return to address 0
 * and crash. The child finishes the injection whatever becomes of us, and
 * reports on a pipe.
 */
struct inject_report {
	int rc, ret;
	char err[512];
};

static void inject_child(pid_t pid, const char *agent, const char *sock, int fd)
{
	static const int deaf[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
				   SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
	struct inject_report r = {0, 0, ""};
	setpgid(0, 0);
	for (size_t i = 0; i < sizeof(deaf) / sizeof(*deaf); i++)
		signal(deaf[i], SIG_IGN);
	r.rc = np_inject_agent(pid, agent, NP_AGENT_START_SYM, sock, &r.ret, r.err, sizeof(r.err));
	if (write(fd, &r, sizeof(r)) < 0) {
	} /* we are gone: nobody to tell */
	_exit(0);
}

static int inject_detached(pid_t pid, const char *agent, const char *sock,
			   struct inject_report *r)
{
	int fds[2], e;
	if (pipe2(fds, O_CLOEXEC)) {
		e = errno;
		snprintf(r->err, sizeof(r->err), "cannot make a pipe: %s", strerror(e));
		return -e;
	}
	pid_t kid = fork();
	e = errno;
	if (kid == 0)
		inject_child(pid, agent, sock, fds[1]);
	close(fds[1]);
	ssize_t n = -1;
	while (kid > 0 && (n = read(fds[0], r, sizeof(*r))) < 0 && errno == EINTR)
		;
	close(fds[0]);
	while (kid > 0 && waitpid(kid, NULL, 0) < 0 && errno == EINTR)
		;
	if (kid < 0) {
		snprintf(r->err, sizeof(r->err), "cannot fork: %s", strerror(e));
		return -e;
	}
	if (n != (ssize_t)sizeof(*r)) {
		snprintf(r->err, sizeof(r->err), "the process injecting the agent died");
		return -EPIPE;
	}
	r->err[sizeof(r->err) - 1] = 0;
	return r->rc;
}

/* An agent whose last session is coming down (its command killed, or
 * gone without waiting) says so with EAGAIN: asked again a little later,
 * for as long as it takes to remove thousands of probes from a loaded
 * process; each time the target runs free between two attempts. */
#define ENDING_RETRY_MS 100
#define ENDING_PATIENCE_MS 30000

int launch_inject(pid_t pid, const char *sock, char *err, size_t errlen)
{
	char agent[PATH_MAX];
	struct inject_report r = {0, 0, ""};
	int rc = launch_agent_path(agent, sizeof(agent), err, errlen);
	if (rc)
		return rc;
	for (int waited = 0;; waited += ENDING_RETRY_MS) {
		rc = inject_detached(pid, agent, sock, &r);
		if (rc || r.ret != -EAGAIN || waited >= ENDING_PATIENCE_MS)
			break;
		nanosleep(&(struct timespec){0, ENDING_RETRY_MS * 1000000L}, NULL);
	}
	if (rc)
		snprintf(err, errlen, "%s", r.err);
	if (!rc && r.ret) {
		snprintf(err, errlen, "the agent in process %d could not start: %s%s", (int)pid,
			 strerror(-r.ret),
			 r.ret == -EBUSY    ? " (another nanoprobe is tracing it)"
			 : r.ret == -EAGAIN ? " (its last session is still removing its probes)"
					    : "");
		rc = r.ret;
	}
	return rc;
}

void launch_inject_connected(pid_t pid)
{
	if (nmasks < SESSION_MAX_PIDS) /* a thread not changed is only at risk */
		np_masks_unblock(pid, &masks[nmasks++]);
}

void launch_inject_done(bool released)
{
	for (size_t i = 0; released && i < nmasks; i++)
		np_masks_restore(&masks[i]);
	nmasks = 0;
}

bool launch_child_exited(pid_t pid)
{
	if (child <= 0 || pid != child)
		return false;
	if (child_status >= 0)
		return true;
	int st;
	if (waitpid(child, &st, WNOHANG) == child) {
		child_status = st;
		return true;
	}
	return false;
}

static bool killed_by_us;

void launch_kill_child(void)
{
	if (child > 0 && child_status < 0) {
		kill(child, SIGKILL);
		waitpid(child, &child_status, 0);
		killed_by_us = true;
	}
}

int launch_wait_child(void)
{
	if (child <= 0 || killed_by_us)
		return -1;
	while (child_status < 0) {
		int st;
		if (waitpid(child, &st, 0) == child)
			child_status = st;
		else if (errno != EINTR)
			break;
	}
	return child_status;
}

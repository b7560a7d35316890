/* SPDX-License-Identifier: MIT */
/*
 * A forked child of a traced process: fork, or any clone that copies the
 * memory and runs the fork handlers.
 *
 * The child is a copy of its parent: the probes are patched into its code,
 * the session's shared memory is mapped (MAP_SHARED: the same pages as the
 * parent's and the command's), and the agent's state says a session is
 * live. What it lacks is a thread of the agent's, since only the forking
 * thread survives a fork. When the session follows children (HELLO's
 * NP_HELLO_FOLLOW, the default) the child starts one here, which joins the
 * session with a connection of its own (NP_JOIN_FORK): it serves the
 * child's probes (state for the child's new threads, the modules dlopen
 * brings, the child's misses added to the shared counts) and removes them
 * when the command says DETACH or goes away, as the parent's thread does
 * for the parent. The child's threads record into the shared rings like
 * any thread, each claiming a ring of its own: the forking thread's ring
 * pointer is its parent thread's, which the new session generation voids,
 * and a ring records the pid of its thread's process.
 *
 * What the child must not touch of its parent's: the control socket (a
 * descriptor of the parent's connection: closed, or the command would see
 * the parent's connection live after the parent ended), the eventfd that
 * dlopen handlers wake the control thread with (the child gets its own),
 * the memfd's descriptor (the mapping stays).
 *
 * Without following, the child records nothing (its probes stay in its
 * code, unserved) and is counted in the shared memory, for the command to
 * say how many processes were not traced.
 *
 * Not seen here: a vfork child (posix_spawn) shares its parent's memory and
 * runs no fork handler; the few calls it makes before it execs count
 * under the thread that made it, whose stack and thread-local storage it
 * runs on, and the program it execs joins as a fresh image.
 *
 * The thread is made from the fork handler: glibc has by then made the
 * child's malloc, stdio and loader locks usable again and reclaimed the
 * stacks of the threads that are gone, so the child is as able to start a
 * thread as after fork returns. A child that must stay single-threaded
 * (unshare(CLONE_NEWUSER) refuses a multi-threaded caller) needs
 * --no-follow.
 */
#include "agent/agent.h"
#include "host/host.h" /* np_host_syscall */

#include <errno.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

/* --- execs ------------------------------------------------------------------- */

/*
 * Every exec of a process of the tree is told to the command before it
 * happens: the new image's agent joins in a moment, or the command says
 * why it did not (a static program, a -p session's process without the
 * agent in its environment). Internal probes on execve and execveat see
 * every way in (execvp, posix_spawn's child, system()); the handler runs
 * on the calling thread, maybe a vfork child on its parent's stack and
 * memory, so it calls no libc: the path is read fault-safe and the message
 * sent with one system call, on the session's socket (a vfork child's
 * descriptor is its parent's, and so is the connection: fine for one
 * message).
 *
 * A vfork child runs the handler on its parent thread's state in the
 * engine, and runs none where that thread has none yet (claiming one
 * there would write the parent's thread-local storage): dash's vfork and
 * posix_spawn's clone come from threads that may never have hit a probe.
 * So vfork, posix_spawn and posix_spawnp get probes too, whose hit (in
 * the parent, before the child exists) is all it takes to give the
 * thread its state.
 */
static struct np_probe *exec_hooks[5];

static void on_exec(struct np_ctx *ctx, void *data)
{
	int sock = __atomic_load_n(&np_agent.sock, __ATOMIC_ACQUIRE);
	if (np_agent_busy || !np_agent_session_name[0])
		return;
	struct np_msg_exec m = {.type = NP_MSG_EXEC};
	m.pid = (int32_t)np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	uint64_t path = np_ctx_arg(ctx, (unsigned)(uintptr_t)data);
	if (np_read_user_str(m.path, path, sizeof(m.path)) < 0)
		m.path[0] = 0;
	if (sock < 0) /* a forked child whose thread has not connected yet */
		np_agent_note(NP_JOIN_EXEC, m.path, true);
	else
		np_host_syscall(SYS_sendto, sock, (long)&m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT,
				0, 0);
}

static void on_spawn(struct np_ctx *ctx, void *data)
{
	(void)ctx, (void)data; /* the hit gave this thread its state: enough */
}

void np_agent_hook_exec(void)
{
	static const struct {
		const char *name;
		np_handler_fn fn;
		uintptr_t path_arg;
	} fns[] = {{"execve", on_exec, 0}, {"execveat", on_exec, 1}, {"vfork", on_spawn, 0},
		   {"posix_spawn", on_spawn, 0}, {"posix_spawnp", on_spawn, 0}};
	for (int i = 0; i < 5; i++)
		exec_hooks[i] = np_agent_hook(fns[i].name, fns[i].fn, NULL,
					      (void *)fns[i].path_arg);
}

void np_agent_unhook_exec(void)
{
	for (int i = 0; i < 5; i++) {
		if (exec_hooks[i])
			np_probe_free(exec_hooks[i]);
		exec_hooks[i] = NULL;
	}
}

/* --- forks ------------------------------------------------------------------- */

static void *forked_thread(void *arg)
{
	const char *name = arg;
	struct np_msg_join j = {NP_MSG_JOIN, NP_JOIN_FORK, (int32_t)getpid(), (int32_t)getppid(),
				""};
	np_agent_thread_setup();
	np_agent_exe(j.exe, sizeof(j.exe));
	int fd = np_agent_connect(name);
	if (fd >= 0 && send(fd, &j, sizeof(j), MSG_NOSIGNAL) != sizeof(j)) {
		close(fd);
		fd = -1;
	}
	/* no command to serve (it has gone): the probes come out at once */
	__atomic_store_n(&np_agent.sock, fd < 0 ? -1 : fd, __ATOMIC_RELEASE);
	np_agent_serve();
	return NULL;
}

/* Fork handler, in the child: the session's processes go on with it. */
void np_agent_forked(void)
{
	struct np_shm_header *shm = np_agent.shm;
	np_agent_new_gen(); /* no parent's ring (and not empty: not a copy.c copy) */
	np_agent.copy = false; /* a hit before the handlers ran may have taken it for one */
	if (!np_agent_session_live() || !shm)
		return; /* a clean copy: a later session may start here */
	if (np_agent.sock >= 0)
		close(np_agent.sock);
	if (np_agent.shm_fd >= 0)
		close(np_agent.shm_fd);
	np_agent.sock = np_agent.shm_fd = -1;
	if (!np_agent.follow) {
		np_agent_live = 0;
		__atomic_fetch_add(&shm->untraced_forks, 1, __ATOMIC_RELAXED);
		return;
	}
	np_agent.pid = (int)np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (np_agent.wake_fd >= 0)
		close(np_agent.wake_fd);
	np_agent.wake_fd = np_agent_fd_high(eventfd(0, EFD_CLOEXEC));
	np_agent_missed_baseline(); /* the parent's misses are the parent's */
	if (np_agent_start_thread(forked_thread)) {
		np_agent_live = 0; /* no thread: as without following */
		__atomic_fetch_add(&shm->untraced_forks, 1, __ATOMIC_RELAXED);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * A child that copies a traced process without fork's handlers: a raw
 * clone or clone3 system call without CLONE_VM, or glibc's _Fork.
 *
 * Such a child is a copy like a forked one: the probes are patched into
 * its code, the session's memory is mapped, its first thread's ring
 * pointer is the parent thread's. But no handler of pthread_atfork runs
 * there (follow.c's np_agent_forked does not), so nothing tells the agent
 * that the process changed, and its hits went into the parent thread's
 * ring, under the parent's pid.
 *
 * The hit path notices it with no system call: the session's generation,
 * which every ring pointer is checked against, is kept in a word the
 * kernel empties in every copy (core/fork.h, MADV_WIPEONFORK), so the
 * copy's first hit finds generation 0, never a thread's, and comes here
 * with the other first-hit work. Here the copy takes a generation of its
 * own (its threads claim rings of their own, under its pid) and tells
 * the command that it joined (NP_JOIN_COPY), as follow.c's exec note does:
 * a connection made and closed with raw system calls.
 *
 * What the copy cannot have is a thread of the agent's. It may be inside
 * malloc or the loader, or in a signal handler, or after _Fork of a
 * multi-threaded program where only async-signal-safe calls are allowed:
 * starting a thread here (which allocates, and takes the loader's lock for
 * its TLS) could wait forever. So nothing serves it: the modules it loads
 * later get no probes, its misses are not added to the session's, and if
 * it outlives the session its probes stay in its code (writing into memory
 * nobody reads). The command says so of a copy that outlived the session.
 * Its copy of its parent's connection keeps that connection open while it
 * lives, so the session goes on as long as the copy runs.
 *
 * Built with the hit path (general-regs-only, no libc).
 */
#include "agent/agent.h"
#include "host/host.h" /* np_host_syscall */

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

/* The generation after the last one given: 0 is the copy's mark, never
 * a generation. */
static uint32_t next_gen(void)
{
	uint32_t g = __atomic_load_n(&np_agent.gen, __ATOMIC_RELAXED) + 1;
	return g ? g : 1;
}

uint32_t np_agent_new_gen(void)
{
	uint32_t g = next_gen();
	__atomic_store_n(&np_agent.gen, g, __ATOMIC_RELAXED);
	__atomic_store_n(np_agent.gen_word, g, __ATOMIC_RELEASE);
	return g;
}

int np_agent_note(uint32_t kind, const char *exe, bool wait)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct np_msg_join j = {.type = NP_MSG_JOIN, .kind = kind};
	size_t n = 0;
	while (n < sizeof(a.sun_path) - 1 && np_agent_session_name[n])
		a.sun_path[1 + n] = np_agent_session_name[n], n++; /* abstract */
	for (size_t i = 0; exe && i < sizeof(j.exe) - 1 && exe[i]; i++)
		j.exe[i] = exe[i];
	j.pid = (int32_t)np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	j.ppid = (int32_t)np_host_syscall(SYS_getppid, 0, 0, 0, 0, 0, 0);
	long type = SOCK_SEQPACKET | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK);
	long fd = np_host_syscall(SYS_socket, AF_UNIX, type, 0, 0, 0, 0);
	if (fd < 0)
		return (int)fd;
	long rc = np_host_syscall(SYS_connect, fd, (long)&a, (long)(sizeof(sa_family_t) + 1 + n), 0,
			     0, 0);
	if (rc == 0)
		rc = np_host_syscall(SYS_sendto, fd, (long)&j, sizeof(j),
				     MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT), 0, 0);
	np_host_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	return rc < 0 ? (int)rc : 0;
}

/* The first hit of a copy (its generation word empty): its own from now
 * on. Every thread of the copy that gets here first does the same, but
 * one takes the generation and speaks for the copy. The generation the
 * hit is to use. */
uint32_t np_agent_adopt_copy(void)
{
	uint32_t g = next_gen(), seen = 0;
	struct np_shm_header *shm = np_agent.shm;
	/* ours before any thread of the copy claims a ring (ring_first) */
	__atomic_store_n(&np_agent.pid, (int)np_host_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0),
			 __ATOMIC_RELAXED);
	if (shm) /* served by no thread of the agent's (np_agent_served) */
		__atomic_store_n(&np_agent.copy, true, __ATOMIC_RELAXED);
	if (shm && !np_agent.follow)
		np_agent_live = 0;
	if (!__atomic_compare_exchange_n(np_agent.gen_word, &seen, g, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return seen; /* another thread of the copy took it */
	__atomic_store_n(&np_agent.gen, g, __ATOMIC_RELAXED);
	if (!shm)
		return g; /* no session: nothing to join */
	if (!np_agent.follow)
		__atomic_fetch_add(&shm->untraced_forks, 1, __ATOMIC_RELAXED);
	else /* without waiting: a note lost to a full backlog costs a message */
		np_agent_note(NP_JOIN_COPY, "", false);
	return g;
}

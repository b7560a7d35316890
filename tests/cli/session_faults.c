/* SPDX-License-Identifier: MIT */
/*
 * A nanoprobe command that gives up at a chosen step of a -p session:
 * test_cli.py's a_session_given_up_at_any_step_leaves_the_target_as_it_was
 * runs it against a server, then checks that the server goes on unharmed,
 * with its code as the file's, and that a real session attaches after it.
 *
 *   session_faults STEP PID AGENT MODULE VADDR
 *
 * injects AGENT into PID as `nanoprobe -p` does, with one probe that
 * counts MODULE's VADDR, and exits (closing its sockets, as a command that
 * dies or refuses does) at STEP:
 *   inject  the agent started, its connection never accepted
 *   accept  accepted, then nothing (the command refusing the peer)
 *   hello   after HELLO
 *   probes  after HELLO and the probes, before GO
 *   go      after GO: the agent is placing the probe
 *   ready   after READY: the probe is placed, the session runs
 * Prints "STEP: done" and exits 0, or a reason and exits 1.
 */
#include "agent/proto.h"
#include "inject/inject.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *const steps[] = {"inject", "accept", "hello", "probes", "go", "ready"};
enum { INJECT, ACCEPT, HELLO, PROBES, GO, READY, NSTEPS };

static int die(const char *what)
{
	fprintf(stderr, "session_faults: %s: %s\n", what, strerror(errno));
	return 1;
}

static int listen_on(char *name, size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(name, len, "nanoprobe-test.%d", (int)getpid());
	memcpy(a.sun_path + 1, name, strlen(name));
	if (fd < 0 ||
	    bind(fd, (struct sockaddr *)&a, (socklen_t)(sizeof(sa_family_t) + 1 + strlen(name))) ||
	    listen(fd, 1))
		return -1;
	return fd;
}

static int accept_in(int lfd, int ms)
{
	struct pollfd p = {lfd, POLLIN, 0};

	return poll(&p, 1, ms) == 1 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
}

static int send_probe(int fd, const char *module, uint64_t vaddr)
{
	struct np_msg_probe m;
	struct stat st;

	if (stat(module, &st))
		return -1;
	memset(&m, 0, sizeof(m));
	m.type = NP_MSG_PROBE;
	m.action = NP_ACT_COUNT;
	snprintf(m.path, sizeof(m.path), "%s", module);
	m.dev = (uint64_t)st.st_dev;
	m.ino = (uint64_t)st.st_ino;
	m.vaddr = m.func_vaddr = vaddr;
	return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == sizeof(m) ? 0 : -1;
}

/* Messages until READY (the probe's ATTACHED comes first). */
static int await_ready(int fd)
{
	union {
		uint32_t type;
		struct np_msg_attached a;
	} m;
	struct pollfd p = {fd, POLLIN, 0};

	while (poll(&p, 1, 60000) == 1) {
		if (recv(fd, &m, sizeof(m), 0) <= 0)
			return -1;
		if (m.type == NP_MSG_READY)
			return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct np_msg_hello h = {NP_MSG_HELLO, NP_PROTO_MAGIC, NP_PROTO_VERSION, 1, 16, 4096, 1, 0,
				 0, 0, 0};
	struct np_msg_join j;
	struct np_msg_simple go = {.type = NP_MSG_GO};
	char name[64], err[512];
	int step = NSTEPS, ret = 0, lfd, fd;

	for (int i = 0; argc == 6 && i < NSTEPS; i++)
		if (!strcmp(argv[1], steps[i]))
			step = i;
	if (step == NSTEPS) {
		fprintf(stderr, "usage: session_faults STEP PID AGENT MODULE VADDR\n");
		return 2;
	}
	if ((lfd = listen_on(name, sizeof(name))) < 0)
		return die("listen");
	if (np_inject_agent((pid_t)atoi(argv[2]), argv[3], NP_AGENT_START_SYM, name, &ret, err,
			    sizeof(err)) ||
	    ret) {
		fprintf(stderr, "session_faults: %s (start: %d)\n", err, ret);
		return 1;
	}
	if (step > INJECT && ((fd = accept_in(lfd, 15000)) < 0 ||
			      recv(fd, &j, sizeof(j), 0) != sizeof(j) || j.type != NP_MSG_JOIN))
		return die("accept");
	if (step > ACCEPT && send(fd, &h, sizeof(h), MSG_NOSIGNAL) != sizeof(h))
		return die("HELLO");
	if (step > HELLO && send_probe(fd, argv[4], strtoull(argv[5], NULL, 0)))
		return die("PROBE");
	if (step > PROBES && send(fd, &go, sizeof(go), MSG_NOSIGNAL) != sizeof(go))
		return die("GO");
	if (step > GO && await_ready(fd))
		return die("READY");
	printf("%s: done\n", steps[step]);
	return 0; /* the sockets close with us */
}

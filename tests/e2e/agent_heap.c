/* SPDX-License-Identifier: MIT */
/*
 * The agent leaves the program's heap alone: no block that a thread of the
 * program allocated is ever freed by the agent's own thread.
 *
 * Such a free hands the block to the agent's thread (glibc puts it in that
 * thread's tcache), which reuses it for its own work and, depending on how
 * much of that there is, frees it back into the program's arena later. Under
 * qemu-aarch64 that made grep, with every entry of itself and libc counted
 * twice, consolidate libc's fast bins once more under AUTO than under TRAP
 * (docs/reliability.md): the agent's strdup of the socket name on the
 * program's thread, freed by the control thread.
 *
 * This program replaces malloc (as programs with their own allocator do;
 * glibc and the agent then call this one), tags every block with the thread
 * that allocated it, and counts frees from another thread. It plays the
 * nanoprobe command itself over the agent's socket (HELLO with no probes,
 * GO) with the agent injected: dlopen, then nanoprobe_agent_start on this
 * program's thread, in a child process, which looks once the agent has
 * said READY (the control thread has connected and set the session up by
 * then). The preloaded start (the agent's constructor, which cannot run
 * under dlopen: it waits for GO while the loader's lock is held) is
 * checked by cli-e2e, which runs this program under `nanoprobe count` with
 * --at-main. (The control thread's exit at a session's end frees its TLS
 * vector, which pthread_create allocated on the creating thread: glibc's
 * doing, after the session.)
 *
 * The agent's path comes from NP_E2E_AGENT (meson sets it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/proto.h"

/* --- an allocator that knows who allocated what --------------------------- */

#define HEAP_BYTES (64u << 20)
#define HDR 64 /* keeps every block 64-byte aligned */

struct hdr {
	size_t size;
	long tid;
};

static _Alignas(64) unsigned char heap[HEAP_BYTES];
static _Atomic size_t heap_used;
static _Atomic unsigned foreign_frees;
static _Atomic size_t foreign_size;

static long tid(void)
{
	return syscall(SYS_gettid);
}

static void *block_new(size_t size, size_t align)
{
	if (align < HDR)
		align = HDR;
	if (size > HEAP_BYTES || align > HEAP_BYTES)
		return NULL;
	size_t need = (size + HDR + align - 1) & ~(size_t)(HDR - 1);
	size_t at = atomic_fetch_add(&heap_used, need + align);
	if (at + need + align > HEAP_BYTES) {
		errno = ENOMEM;
		return NULL;
	}
	uintptr_t p = ((uintptr_t)heap + at + HDR + align - 1) & ~(uintptr_t)(align - 1);
	struct hdr *h = (struct hdr *)(p - HDR);
	h->size = size;
	h->tid = tid();
	return (void *)p;
}

static struct hdr *hdr_of(void *p)
{
	return (struct hdr *)((uintptr_t)p - HDR);
}

void *malloc(size_t size)
{
	return block_new(size, 0);
}

void free(void *p)
{
	if (!p)
		return;
	if (hdr_of(p)->tid != tid()) {
		atomic_fetch_add(&foreign_frees, 1);
		atomic_store(&foreign_size, hdr_of(p)->size);
	}
}

void *calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return block_new(n * size, 0); /* the heap is static, so zeroed */
}

void *realloc(void *p, size_t size)
{
	void *q = block_new(size, 0);
	if (q && p) {
		size_t old = hdr_of(p)->size;
		memcpy(q, p, old < size ? old : size);
		free(p);
	}
	return q;
}

void *memalign(size_t align, size_t size)
{
	return block_new(size, align);
}

void *aligned_alloc(size_t align, size_t size)
{
	return block_new(size, align);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = block_new(size, align);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t size)
{
	return block_new(size, 4096);
}

void *pvalloc(size_t size)
{
	return block_new((size + 4095) & ~(size_t)4095, 4096);
}

size_t malloc_usable_size(void *p)
{
	return p ? hdr_of(p)->size : 0;
}

/* --- the command's side of the socket ------------------------------------- */

static int listen_on(char *name, size_t len)
{
	snprintf(name, len, "np-e2e-agent-heap-%d", (int)getpid());
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, name, strlen(name)); /* abstract, as the agent expects */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a,
			   (socklen_t)(sizeof(sa_family_t) + 1 + strlen(name))) ||
	    listen(fd, 1))
		return -1;
	return fd;
}

/* JOIN read; HELLO with no probes and GO; READY (its shared memory closed)
 * says the control thread has connected and set the session up. */
static int serve_session(int lfd)
{
	int fd = accept(lfd, NULL, NULL);
	struct np_msg_join j;
	if (fd < 0)
		return -1;
	if (recv(fd, &j, sizeof(j), 0) != sizeof(j) || j.type != NP_MSG_JOIN) {
		close(fd);
		return -1;
	}
	struct np_msg_hello h = {NP_MSG_HELLO, NP_PROTO_MAGIC, NP_PROTO_VERSION, 0, 1, 4096, 1,
				 0, 0, 0, 0};
	struct np_msg_simple go = {NP_MSG_GO, 0}, ready = {0, 0};
	union {
		struct cmsghdr c;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = {&ready, sizeof(ready)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	if (send(fd, &h, sizeof(h), 0) != sizeof(h) || send(fd, &go, sizeof(go), 0) != sizeof(go) ||
	    recvmsg(fd, &msg, 0) != sizeof(ready) || ready.type != NP_MSG_READY) {
		close(fd);
		return -1;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_type == SCM_RIGHTS) {
		int shm;
		memcpy(&shm, CMSG_DATA(c), sizeof(shm));
		close(shm);
	}
	return fd;
}

static const char *agent_path(void)
{
	const char *p = getenv("NP_E2E_AGENT");
	if (!p)
		fprintf(stderr, "NP_E2E_AGENT is not set\n");
	return p;
}

/* Exit status: 0 clean, 1 a foreign free, 2 the session did not start. */
static int verdict(int session_fd)
{
	if (session_fd < 0)
		return 2;
	unsigned n = atomic_load(&foreign_frees);
	if (n)
		fprintf(stderr, "the agent's thread freed %u block(s) of this program's thread "
				"(last: %zu bytes)\n", n, atomic_load(&foreign_size));
	return n ? 1 : 0;
}

static int run_injected(void)
{
	char name[64];
	const char *agent = agent_path();
	int lfd = listen_on(name, sizeof(name));
	void *h = agent ? dlopen(agent, RTLD_NOW) : NULL;
	int (*start)(const char *) = h ? (int (*)(const char *))dlsym(h, "nanoprobe_agent_start")
				       : NULL;
	/* why, when the agent cannot be loaded: on riscv64 it once needed more
	 * static TLS than glibc keeps for libraries loaded by dlopen */
	if (agent && !start)
		fprintf(stderr, "cannot load the agent: %s\n", dlerror());
	if (lfd < 0 || !start || start(name))
		return 2;
	return verdict(serve_session(lfd));
}

static int in_child(int (*fn)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* With --at-main, the count so far (the command's test runs this program
 * under `nanoprobe count`, preloaded: the constructor's session is set up
 * before main). Otherwise the injected case, as TAP. */
int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--at-main") == 0) {
		printf("foreign frees: %u\n", atomic_load(&foreign_frees));
		return 0;
	}
	int st = in_child(run_injected);
	printf("1..1\n%s 1 - injected_agent_frees_no_block_of_the_program\n",
	       st ? "not ok" : "ok");
	if (st)
		printf("# child status %d (1: a foreign free, 2: no session)\n", st);
	printf("%d passed, %d failed\n", !st, !!st);
	return st ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define MAX_STREAMS 8

struct stream {
	FILE *f;
	int fd;
	bool own_fd;
	int err;           /* the first error, -errno */
	char name[300];
	char *held;        /* the end of the last chunk: a line not yet ended */
	size_t nheld, cap;
};

static struct stream *streams[MAX_STREAMS];
static int first_err;
/* each stream that failed, with its first error, for output_report */
static struct {
	char name[300];
	int err;
} failed[MAX_STREAMS];
static int nfailed;
static bool reported;

static void note_error(struct stream *s, int err)
{
	if (s->err)
		return;
	s->err = err;
	if (!first_err)
		first_err = err;
	if (nfailed < MAX_STREAMS) {
		snprintf(failed[nfailed].name, sizeof(failed[0].name), "%s", s->name);
		failed[nfailed++].err = err;
	}
}

/* All of buf, as write(2) allows; 0 or -errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EAGAIN) { /* a non-blocking descriptor we inherited */
			struct pollfd p = {fd, POLLOUT, 0};
			poll(&p, 1, 1000);
		} else if (n < 0 && errno != EINTR) {
			return -errno;
		} else if (n == 0) {
			return -EIO;
		}
	}
	return 0;
}

/* Whole lines of buf[0..len), in writes of at most PIPE_BUF bytes each
 * but for a line longer than that. */
static int write_lines(int fd, const char *buf, size_t len)
{
	while (len) {
		size_t take = 0;
		while (take < len) {
			const char *nl = memchr(buf + take, '\n', len - take);
			size_t line = nl ? (size_t)(nl - (buf + take)) + 1 : len - take;
			if (take && take + line > PIPE_BUF)
				break;
			take += line;
		}
		int err = write_all(fd, buf, take);
		if (err)
			return err;
		buf += take;
		len -= take;
	}
	return 0;
}

static bool hold(struct stream *s, const char *buf, size_t len)
{
	if (s->nheld + len > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap < s->nheld + len)
			cap *= 2;
		char *h = realloc(s->held, cap);
		if (!h)
			return false;
		s->held = h;
		s->cap = cap;
	}
	memcpy(s->held + s->nheld, buf, len);
	s->nheld += len;
	return true;
}

/* What stdio flushes: written up to its last newline, the rest held. */
static ssize_t stream_write(void *cookie, const char *buf, size_t len)
{
	struct stream *s = cookie;
	if (s->err || !hold(s, buf, len)) {
		errno = s->err ? -s->err : ENOMEM;
		return 0;
	}
	char *nl = memrchr(s->held, '\n', s->nheld);
	if (!nl)
		return (ssize_t)len;
	size_t whole = (size_t)(nl - s->held) + 1;
	int err = write_lines(s->fd, s->held, whole);
	memmove(s->held, s->held + whole, s->nheld - whole);
	s->nheld -= whole;
	if (err) {
		note_error(s, err);
		errno = -err;
		return 0;
	}
	return (ssize_t)len;
}

static int stream_close(void *cookie)
{
	struct stream *s = cookie;
	int err = s->err;
	if (!err && s->nheld) /* a last line without its newline */
		err = write_lines(s->fd, s->held, s->nheld);
	if (s->own_fd && close(s->fd) && !err && errno != EINTR)
		err = -errno;
	if (err)
		note_error(s, err);
	for (int i = 0; i < MAX_STREAMS; i++)
		if (streams[i] == s)
			streams[i] = NULL;
	free(s->held);
	free(s);
	return err ? -1 : 0;
}

FILE *output_open(const char *path, const char *name)
{
	int slot = 0;
	while (slot < MAX_STREAMS && streams[slot])
		slot++;
	struct stream *s = slot < MAX_STREAMS ? calloc(1, sizeof(*s)) : NULL;
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : STDOUT_FILENO;
	s->own_fd = path != NULL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	cookie_io_functions_t io = {.write = stream_write, .close = stream_close};
	if (s->fd < 0 || !(s->f = fopencookie(s, "w", io))) {
		int err = errno;
		if (s->own_fd && s->fd >= 0)
			close(s->fd);
		free(s);
		errno = err;
		return NULL;
	}
	/* stdio hands us 64 KiB at a time, or what a flush finds */
	setvbuf(s->f, NULL, _IOFBF, 1 << 16);
	streams[slot] = s;
	return s->f;
}

static struct stream *stream_of(FILE *f)
{
	for (int i = 0; i < MAX_STREAMS; i++)
		if (streams[i] && streams[i]->f == f)
			return streams[i];
	return NULL;
}

int output_close(FILE *f)
{
	struct stream *s = stream_of(f);
	int err = 0;
	if (!s)
		return fclose(f) ? -errno : 0;
	if (fflush(f))
		err = s->err ? s->err : -EIO;
	int closed = fclose(f); /* frees s */
	return err ? err : closed ? (first_err ? first_err : -EIO) : 0;
}

int output_flush(void)
{
	for (int i = 0; i < MAX_STREAMS; i++)
		if (streams[i] && fflush(streams[i]->f))
			note_error(streams[i], streams[i]->err ? streams[i]->err : -EIO);
	return first_err;
}

int output_error(void)
{
	return first_err;
}

int output_check_stdout(void)
{
	errno = 0;
	if (fflush(stdout) || ferror(stdout)) {
		struct stream s = {.err = 0};
		snprintf(s.name, sizeof(s.name), "stdout");
		note_error(&s, errno ? -errno : -EIO);
	}
	return first_err;
}

void output_report(void)
{
	if (reported)
		return;
	reported = true;
	for (int i = 0; i < nfailed; i++)
		if (failed[i].err != -EPIPE || cli_sigpipe_ignored())
			cli_error("%s: %s", failed[i].name, strerror(-failed[i].err));
	/* a broken pipe: the signal says it, as for any other program */
}

int output_exit(void)
{
	bool broken_pipe = false;
	if (!first_err)
		return 0;
	output_report();
	for (int i = 0; i < nfailed; i++)
		broken_pipe |= failed[i].err == -EPIPE;
	if (broken_pipe && !cli_sigpipe_ignored()) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGPIPE);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(SIGPIPE);
	}
	return 1;
}

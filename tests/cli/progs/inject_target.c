/* SPDX-License-Identifier: MIT */
/*
 * The process the injection tests load an agent into. It prints "ready",
 * waits in one of the ways below, and prints a result that must be the same
 * whether or not an agent was injected meanwhile:
 *
 *   inject_target sleep MS  one clock_nanosleep of MS ms: did it return 0,
 *                           after at least MS ms (its restart worked)?
 *   inject_target read      one read() of stdin, then stdin to EOF: what it
 *                           got, and whether a read failed (EINTR)
 *   inject_target spin      recomputes a floating-point sum until SIGUSR1:
 *                           how many rounds differed from the first (a
 *                           register the injection clobbered)
 *   inject_target lock MS   as sleep, while a thread holds the loader's
 *                           write lock (parked in a dl_iterate_phdr
 *                           callback), so that a dlopen cannot finish;
 *                           also counts SIGUSR2s (which cut the sleep short)
 *   inject_target masked    as spin, with a SIGTRAP handler of its own
 *                           and SIGTRAP blocked: are both still so after?
 *   inject_target inlib LIB loads LIB (the injection tests' agent) and
 *                           waits in its np_test_pause until SIGUSR1
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop, usr2;
static int park[2];    /* the parked thread reads it forever */
static int parked[2];  /* it tells main it holds the lock */

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2++;
}

static void ready(void)
{
	fputs("ready\n", stdout);
	fflush(stdout);
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1e3 + (b->tv_nsec - a->tv_nsec) / 1e6;
}

static void do_sleep(long ms)
{
	struct timespec req = {ms / 1000, ms % 1000 * 1000000}, t0, t1;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ready();
	rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("sleep %ld ms: rc=%d long_enough=%d\n", ms, rc, elapsed_ms(&t0, &t1) >= ms);
}

static void do_read(void)
{
	char buf[256];
	size_t got = 0;
	int errors = 0;

	ready();
	for (;;) {
		ssize_t n = read(0, buf + got, sizeof(buf) - 1 - got);

		if (n < 0)
			errors++;
		if (n < 0 && errno == EINTR && errors < 5)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf) - 1)
			break;
	}
	buf[got] = 0;
	printf("read %zu bytes: %s errors=%d\n", got, buf, errors);
}

/* x stays in a vector register for the whole loop. */
__attribute__((noinline)) static double spin_round(void)
{
	double x = 1.0;

	for (int i = 1; i < 100000; i++)
		x = x * 1.0000001 + 1.0 / i;
	return x;
}

/* "ready" comes after a first round, so that an injection finds values live in registers. */
static void do_spin(void)
{
	struct sigaction sa = {.sa_handler = on_usr1};
	double first;
	long bad = 0;

	sigaction(SIGUSR1, &sa, NULL);
	first = spin_round();
	ready();
	while (!stop)
		bad += spin_round() != first;
	printf("spin: %.17g bad=%ld\n", first, bad);
}

static int hold(struct dl_phdr_info *info, size_t size, void *data)
{
	char c;

	(void)info, (void)size, (void)data;
	if (write(parked[1], "p", 1) != 1 || read(park[0], &c, 1) < 0)
		abort();
	return 1;
}

static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold, NULL);
	return NULL;
}

static void do_lock(long ms)
{
	struct sigaction sa = {.sa_handler = on_usr2};
	pthread_t th;
	char c;

	sigaction(SIGUSR2, &sa, NULL);
	if (pipe(park) || pipe(parked) || pthread_create(&th, NULL, holder, NULL) ||
	    read(parked[0], &c, 1) != 1)
		abort();
	do_sleep(ms);
	printf("usr2=%d\n", (int)usr2);
	/* exit() would run the loader's finalizers: leave the parked thread be */
	fflush(stdout);
	_exit(0);
}

static void on_trap(int sig)
{
	(void)sig;
}

static void do_masked(void)
{
	struct sigaction sa = {.sa_handler = on_trap}, now;
	sigset_t trap, mask;

	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	sigaction(SIGTRAP, &sa, NULL);
	sigprocmask(SIG_BLOCK, &trap, NULL);
	do_spin();
	sigaction(SIGTRAP, NULL, &now);
	sigprocmask(SIG_BLOCK, NULL, &mask);
	printf("masked: own handler=%d blocked=%d\n", now.sa_handler == on_trap,
	       sigismember(&mask, SIGTRAP));
}

#ifndef NP_TARGET_STATIC /* dlopen in a static program: a link warning */
static volatile int *lib_stop;

static void stop_lib(int sig)
{
	(void)sig;
	*lib_stop = 1;
}

static void do_inlib(const char *path)
{
	struct sigaction sa = {.sa_handler = stop_lib};
	void *h = dlopen(path, RTLD_NOW);
	void (*pause_in_lib)(void) = h ? (void (*)(void))dlsym(h, "np_test_pause") : NULL;

	lib_stop = h ? dlsym(h, "np_test_stop") : NULL;
	if (!pause_in_lib || !lib_stop)
		abort();
	sigaction(SIGUSR1, &sa, NULL);
	ready();
	pause_in_lib();
	printf("inlib: waited until SIGUSR1\n");
}
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long ms = argc > 2 ? atol(argv[2]) : 100;

	if (!strcmp(mode, "sleep"))
		do_sleep(ms);
	else if (!strcmp(mode, "read"))
		do_read();
	else if (!strcmp(mode, "spin"))
		do_spin();
	else if (!strcmp(mode, "lock"))
		do_lock(ms);
	else if (!strcmp(mode, "masked"))
		do_masked();
#ifndef NP_TARGET_STATIC
	else if (!strcmp(mode, "inlib") && argc > 2)
		do_inlib(argv[2]);
#endif
	else {
		fprintf(stderr, "usage: inject_target sleep MS | read | spin | lock MS | masked | inlib LIB\n");
		return 2;
	}
	return 0;
}

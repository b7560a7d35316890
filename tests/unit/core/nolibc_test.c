/* SPDX-License-Identifier: MIT */
/*
 * core/nolibc.c: what the hit paths use instead of libc must give what
 * libc gives, on every thread.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "core/nolibc.h"
#include "test.h"

static uint64_t libc_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST(errno_is_libcs_before_and_after_init)
{
	CHECK(np_errno() == &errno); /* before: libc's own, by its function */
	CHECK_EQ(np_nolibc_init(), 0);
	CHECK(np_errno() == &errno);
	errno = 0;
	*np_errno() = ERANGE;
	CHECK_EQ(errno, ERANGE);
}

static void *errno_in_thread(void *arg)
{
	(void)arg;
	return np_errno() == &errno ? (void *)1 : NULL;
}

TEST(errno_is_the_calling_threads)
{
	CHECK_EQ(np_nolibc_init(), 0);
	pthread_t t[4];
	void *ok[4];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, errno_in_thread, NULL), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &ok[i]);
		CHECK(ok[i] == (void *)1);
	}
}

TEST(clock_is_clock_monotonic)
{
	CHECK_EQ(np_nolibc_init(), 0);
	uint64_t a = libc_clock_ns(), b = np_clock_ns(), c = libc_clock_ns();
	CHECK(a <= b && b <= c);
	uint64_t prev = np_clock_ns();
	for (int i = 0; i < 1000; i++) {
		uint64_t now = np_clock_ns();
		CHECK(now >= prev);
		prev = now;
	}
}

TEST(cpu_is_one_the_thread_may_run_on)
{
	CHECK_EQ(np_nolibc_init(), 0);
	cpu_set_t set;
	CHECK_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	int cpu = np_cpu();
	CHECK(cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set));
	/* pinned, the answer is that cpu */
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) == 0) {
		sched_yield();
		CHECK_EQ(np_cpu(), cpu);
		sched_setaffinity(0, sizeof(set), &set);
	}
}

TEST(byte_helpers_copy_compare_and_find)
{
	char src[] = "abcdefgh", dst[9] = {0};
	np_copy(dst, src, 9);
	CHECK(memcmp(dst, src, 9) == 0);
	CHECK(np_same(dst, src, 9));
	dst[7] = 'X';
	CHECK(!np_same(dst, src, 9));
	CHECK(np_same(dst, src, 7));
	CHECK(np_find_byte(src, 'd', 8) == src + 3);
	CHECK(np_find_byte(src, 'd', 3) == NULL);
	CHECK(np_find_byte(src, '\0', 9) == src + 8);
	np_zero(dst, 4);
	CHECK(dst[0] == 0 && dst[3] == 0 && dst[4] == 'e');
}

static int futex_state;
static uint32_t word;

static void *waker(void *arg)
{
	(void)arg;
	struct timespec ms = {0, 20 * 1000 * 1000};
	nanosleep(&ms, NULL);
	__atomic_store_n(&futex_state, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&word, 1, __ATOMIC_RELEASE);
	np_futex_wake(&word);
	return NULL;
}

TEST(futex_sleeps_until_woken_and_not_when_the_word_moved)
{
	word = 0;
	np_futex_wait(&word, 1); /* the word is 0, not 1: returns at once */
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, waker, NULL), 0);
	while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == 0)
		np_futex_wait(&word, 0);
	CHECK_EQ(__atomic_load_n(&futex_state, __ATOMIC_ACQUIRE), 1);
	pthread_join(t, NULL);
}

TEST_MAIN()

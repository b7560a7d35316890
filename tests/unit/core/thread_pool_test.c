/* SPDX-License-Identifier: MIT */
/*
 * The thread-block pool (core/thread.c): np_thread_pool_stock takes back
 * the blocks of threads that exited, but never a block that a thread has
 * claimed and not yet stamped with its tid. It did, when the block had
 * been a dead thread's: the claimer's block still showed that tid, stock
 * found it dead and freed the block, and the next thread to claim one got
 * the same block as the claimer (two threads sharing counters, recursion
 * guard and shadow stack).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/thread.h"
#include "host/layout.h"
#include "test.h"

static void *first_hit(void *arg)
{
	*(struct np_thread **)arg = np_thread_self();
	return NULL;
}

/* The block a new thread claims; once the thread is gone for good (the
 * kernel may still know its tid for a moment after pthread_join, longer
 * under qemu-user). */
static struct np_thread *block_of_a_new_thread(void)
{
	struct np_thread *t = NULL;
	pthread_t th;
	pthread_create(&th, NULL, first_hit, &t);
	pthread_join(th, NULL);
	while (t && syscall(SYS_tgkill, getpid(), atomic_load(&t->tid), 0) == 0)
		usleep(1000);
	return t;
}

/* A thread that claims a block and stays until told to go. */
static struct np_thread *claimer_block;
static pthread_mutex_t go = PTHREAD_MUTEX_INITIALIZER;

static void *claimer(void *arg)
{
	(void)arg;
	claimer_block = np_thread_self();
	pthread_mutex_lock(&go); /* held by the test until the end */
	pthread_mutex_unlock(&go);
	return NULL;
}

TEST(a_block_being_claimed_is_not_freed_as_a_dead_threads)
{
	CHECK_EQ(np_thread_pool_init(), 0);
	struct np_thread *dead = block_of_a_new_thread();
	CHECK(dead != NULL);
	np_thread_pool_stock(); /* its thread exited: the block is free again */
	int left = atomic_load(&dead->tid);

	pthread_t th;
	pthread_mutex_lock(&go);
	pthread_create(&th, NULL, claimer, NULL);
	while (!__atomic_load_n(&claimer_block, __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK(claimer_block == dead); /* the lowest free block */
	/* the claimer at the moment between taking the block and stamping
	 * its tid: the block holds what stock left there */
	int tid = atomic_load(&claimer_block->tid);
	atomic_store(&claimer_block->tid, left);
	np_thread_pool_stock();
	atomic_store(&claimer_block->tid, tid);

	struct np_thread *other = block_of_a_new_thread();
	CHECK(other != NULL);
	CHECK(other != claimer_block);
	pthread_mutex_unlock(&go);
	pthread_join(th, NULL);
}

TEST_MAIN()

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

#include "core/internal.h"
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

TEST(a_block_being_claimed_is_not_freed_as_a_dead_threads)
{
	CHECK_EQ(np_thread_pool_init(), 0);
	struct np_thread *dead = block_of_a_new_thread();
	CHECK(dead != NULL);
	np_thread_pool_stock(); /* its thread exited: the block is free again */
	int left = atomic_load(&dead->tid);

	struct np_thread *mine = np_thread_self(); /* the lowest free block */
	CHECK(mine == dead);
	/* this thread's claim, at the moment between taking the block and
	 * stamping its tid: the block holds what stock left there */
	atomic_store(&mine->tid, left);
	np_thread_pool_stock();
	atomic_store(&mine->tid, (int)syscall(SYS_gettid));

	struct np_thread *other = block_of_a_new_thread();
	CHECK(other != NULL);
	CHECK(other != mine);
}

TEST_MAIN()

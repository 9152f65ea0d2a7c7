/* SPDX-License-Identifier: MIT */
/*
 * Waits that end when another thread acts: a join, a condition variable, a barrier, and
 * (through the hooks at the end) a contended mutex or rwlock of libsyscope-pthread.so, a
 * semaphore wait, and a read or write that blocks on a pipe or socket (wrap_block.c). Under causal profiling a thread woken this way is credited with the
 * delays inserted while it waited (Coz's rule: the thread that woke it paid them, so paying
 * again would count them twice). Outside causal mode each wrapper is one load and a call.
 */
#include "causal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/stat.h>

#include "../real.h"

RT_EXPORT int pthread_join(pthread_t thread, void **ret)
{
	int rc;

	if (!rt_causal_blocking())
		return RT_REAL(pthread_join)(thread, ret);
	rt_causal_pre_block();
	rc = RT_REAL(pthread_join)(thread, ret);
	rt_causal_post_block(rc == 0);
	return rc;
}

RT_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	int rc;

	if (!rt_causal_blocking())
		return RT_REAL(pthread_cond_wait)(cond, mutex);
	rt_causal_pre_block();
	rc = RT_REAL(pthread_cond_wait)(cond, mutex);
	rt_causal_post_block(rc == 0);
	return rc;
}

RT_EXPORT int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
				     const struct timespec *abstime)
{
	int rc;

	if (!rt_causal_blocking())
		return RT_REAL(pthread_cond_timedwait)(cond, mutex, abstime);
	rt_causal_pre_block();
	rc = RT_REAL(pthread_cond_timedwait)(cond, mutex, abstime);
	rt_causal_post_block(rc == 0); /* a timeout: nobody woke it */
	return rc;
}

RT_EXPORT int pthread_barrier_wait(pthread_barrier_t *barrier)
{
	int rc;

	if (!rt_causal_blocking())
		return RT_REAL(pthread_barrier_wait)(barrier);
	rt_causal_catch_up(); /* the last to arrive wakes the others */
	rt_causal_pre_block();
	rc = RT_REAL(pthread_barrier_wait)(barrier);
	/* The last thread to arrive was not woken: it owes what it owes. */
	rt_causal_post_block(rc == 0);
	return rc;
}

/* Wake-ups: the thread that wakes another pays what it owes first (rt_causal_catch_up). */
RT_EXPORT int pthread_cond_signal(pthread_cond_t *cond)
{
	if (rt_causal_blocking())
		rt_causal_catch_up();
	return RT_REAL(pthread_cond_signal)(cond);
}

RT_EXPORT int pthread_cond_broadcast(pthread_cond_t *cond)
{
	if (rt_causal_blocking())
		rt_causal_catch_up();
	return RT_REAL(pthread_cond_broadcast)(cond);
}

RT_EXPORT int sem_post(sem_t *sem)
{
	if (rt_causal_blocking())
		rt_causal_catch_up();
	return RT_REAL(sem_post)(sem);
}

/*
 * For the lock wrappers of libsyscope-pthread.so, which the causal verb preloads: around a
 * lock that was busy (its try failed), so only a wait that really blocked is credited. The
 * holder that released it was delayed while it held it. Returns whether causal mode is on.
 */
RT_EXPORT int __syscope_causal_on;

RT_EXPORT int __syscope_causal_pre_block(void)
{
	if (!rt_causal_blocking())
		return 0;
	rt_causal_pre_block();
	return 1;
}

RT_EXPORT void __syscope_causal_post_block(int woken)
{
	rt_causal_post_block(woken);
}

/* For their unlock wrappers: the holder pays what it owes before a waiter gets the lock. */
RT_EXPORT void __syscope_causal_catch_up(void)
{
	if (rt_causal_blocking())
		rt_causal_catch_up();
}

/*
 * Before a read (out: a write) on `fd`: whether it is about to block on a pipe or a socket,
 * waiting for the other end, which is the program's other thread (or process) that the
 * delays slowed. A call that would not block (data there, a regular file) is not a wait:
 * false, and nothing is credited. One poll, and an fstat when the poll says it would block.
 */
bool rt_causal_io_begin(int fd, bool out)
{
	struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };
	struct stat st;
	int saved_errno = errno;
	bool waits = RT_REAL(poll)(&p, 1, 0) == 0 && !fstat(fd, &st) &&
		     (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));

	errno = saved_errno;
	if (waits)
		rt_causal_pre_block();
	return waits;
}

/* After it: data (or the end of the stream) came, so the other end woke it. */
void rt_causal_io_end(bool done)
{
	rt_causal_post_block(done);
}

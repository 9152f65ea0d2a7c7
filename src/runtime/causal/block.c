/* SPDX-License-Identifier: MIT */
/*
 * Waits that end when another thread acts: a join, a condition variable, a barrier, and
 * (through the hooks at the end) a contended mutex or rwlock of libsyscope-pthread.so and a
 * semaphore wait. Under causal profiling a thread woken this way is credited with the
 * delays inserted while it waited (Coz's rule: the thread that woke it paid them, so paying
 * again would count them twice). Outside causal mode each wrapper is one load and a call.
 */
#include "causal.h"

#include <errno.h>
#include <pthread.h>

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
	rt_causal_pre_block();
	rc = RT_REAL(pthread_barrier_wait)(barrier);
	/* The last thread to arrive was not woken: it owes what it owes. */
	rt_causal_post_block(rc == 0);
	return rc;
}

/*
 * For the lock wrappers of libsyscope-pthread.so, which the causal verb preloads: around a
 * lock that was busy (its try failed), so only a wait that really blocked is credited. The
 * holder that released it was delayed while it held it. Returns whether causal mode is on.
 */
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

/* SPDX-License-Identifier: MIT */
/*
 * Waits that end when another thread acts: a join, a condition variable, a barrier. Under
 * causal profiling a thread woken this way is credited with the delays inserted while it
 * waited (Coz's rule: the thread that woke it paid them, so paying again would count them
 * twice). Outside causal mode each wrapper is one load and a call.
 */
#include "causal.h"

#include <errno.h>
#include <pthread.h>

#include "../real.h"

static inline bool causal_on(void)
{
	return __builtin_expect(atomic_load_explicit(&rt_causal.on, memory_order_relaxed), 0);
}

RT_EXPORT int pthread_join(pthread_t thread, void **ret)
{
	int rc;

	if (!causal_on())
		return RT_REAL(pthread_join)(thread, ret);
	rt_causal_pre_block();
	rc = RT_REAL(pthread_join)(thread, ret);
	rt_causal_post_block(rc == 0);
	return rc;
}

RT_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	int rc;

	if (!causal_on())
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

	if (!causal_on())
		return RT_REAL(pthread_cond_timedwait)(cond, mutex, abstime);
	rt_causal_pre_block();
	rc = RT_REAL(pthread_cond_timedwait)(cond, mutex, abstime);
	rt_causal_post_block(rc == 0); /* a timeout: nobody woke it */
	return rc;
}

RT_EXPORT int pthread_barrier_wait(pthread_barrier_t *barrier)
{
	int rc;

	if (!causal_on())
		return RT_REAL(pthread_barrier_wait)(barrier);
	rt_causal_pre_block();
	rc = RT_REAL(pthread_barrier_wait)(barrier);
	/* The last thread to arrive was not woken: it owes what it owes. */
	rt_causal_post_block(rc == 0);
	return rc;
}

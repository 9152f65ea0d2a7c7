/* SPDX-License-Identifier: MIT */
/*
 * For test_attach_wrap.py: a library attach_locks loads with dlopen while attached. Its own
 * threads contend for its own mutex, through its own PLT entries (which syscope attach must
 * patch when it sees the library loaded).
 */
#include <pthread.h>
#include <time.h>

static pthread_mutex_t locklib_lock = PTHREAD_MUTEX_INITIALIZER;
static int rounds;

static void *contender(void *arg)
{
	struct timespec ts = { 0, 3000000 };

	(void)arg;
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&locklib_lock);
		nanosleep(&ts, NULL);
		pthread_mutex_unlock(&locklib_lock);
	}
	return NULL;
}

void *locklib_contend(int n)
{
	pthread_t th[2];

	rounds = n;
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, contender, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return &locklib_lock;
}

/* SPDX-License-Identifier: MIT */
/*
 * Known pthread waits, one phase each, for --parallel=pthread: in every phase the main
 * thread creates one worker that blocks for HOLD_MS in one kind of wait (mutex, rwlock,
 * condition variable, barrier, semaphore) on an object whose address is printed, then joins
 * it. Around them, locks that never block: an uncontended mutex, a recursive one taken
 * twice, an error-checking one taken twice (EDEADLK, printed), an rwlock and a semaphore
 * that are free. Last, a robust mutex whose owner thread ended holding it (EOWNERDEAD, printed)
 * and a timed lock of a mutex the main thread holds itself (ETIMEDOUT after TIMEOUT_MS).
 * Prints "name=ADDRESS" for every object and "worker tid=T" for each phase's worker.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MS 50
#define FREE_LOCKS 1000
#define TIMEOUT_MS 20

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t uncontended = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t robust, timed = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t free_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static sem_t sem, free_sem;
static int cond_ready;
static atomic_int about_to_wait;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The worker says it is about to block; the main thread waits for that, then HOLD_MS. */
static void announce(void)
{
	printf("worker tid=%d\n", gettid());
	fflush(stdout);
	atomic_store(&about_to_wait, 1);
}

static void hold_after_announce(void)
{
	while (!atomic_load(&about_to_wait))
		sleep_ms(1);
	sleep_ms(HOLD_MS);
	atomic_store(&about_to_wait, 0);
}

static void *mutex_worker(void *arg)
{
	(void)arg;
	announce();
	pthread_mutex_lock(&contended);
	pthread_mutex_unlock(&contended);
	return NULL;
}

static void *rwlock_worker(void *arg)
{
	(void)arg;
	announce();
	pthread_rwlock_rdlock(&rwlock);
	pthread_rwlock_unlock(&rwlock);
	return NULL;
}

static void *cond_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cond_mutex);
	announce();
	while (!cond_ready)
		pthread_cond_wait(&cond, &cond_mutex);
	pthread_mutex_unlock(&cond_mutex);
	return NULL;
}

static void *barrier_worker(void *arg)
{
	(void)arg;
	announce();
	pthread_barrier_wait(&barrier);
	return NULL;
}

static void *sem_worker(void *arg)
{
	(void)arg;
	announce();
	sem_wait(&sem);
	return NULL;
}

static void run(void *(*worker)(void *), void (*release)(void))
{
	pthread_t t;

	pthread_create(&t, NULL, worker, NULL);
	hold_after_announce();
	release();
	pthread_join(t, NULL);
}

static void release_mutex(void)
{
	pthread_mutex_unlock(&contended);
}

static void release_rwlock(void)
{
	pthread_rwlock_unlock(&rwlock);
}

static void release_cond(void)
{
	pthread_mutex_lock(&cond_mutex);
	cond_ready = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&cond_mutex);
}

static void release_barrier(void)
{
	pthread_barrier_wait(&barrier);
}

static void release_sem(void)
{
	sem_post(&sem);
}

static void locks_that_never_block(void)
{
	pthread_mutexattr_t attr;
	pthread_mutex_t recursive, errorcheck;
	int first, again;

	for (int i = 0; i < FREE_LOCKS; i++) {
		pthread_mutex_lock(&uncontended);
		pthread_mutex_unlock(&uncontended);
		pthread_rwlock_rdlock(&free_rwlock);
		pthread_rwlock_unlock(&free_rwlock);
		sem_wait(&free_sem);
	}
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&recursive, &attr);
	printf("recursive=%p\n", (void *)&recursive);
	first = pthread_mutex_lock(&recursive);
	again = pthread_mutex_lock(&recursive);
	printf("recursive relock: %d %d\n", first, again);
	pthread_mutex_unlock(&recursive);
	pthread_mutex_unlock(&recursive);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&errorcheck, &attr);
	first = pthread_mutex_lock(&errorcheck);
	again = pthread_mutex_lock(&errorcheck);
	printf("errorcheck relock: %d %s\n", first, again == EDEADLK ? "EDEADLK" : "?");
	pthread_mutex_unlock(&errorcheck);
}

static void *robust_owner(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&robust);
	return NULL; /* ends holding it */
}

static void locks_that_fail(void)
{
	pthread_mutexattr_t attr;
	struct timespec deadline;
	pthread_t t;
	int rc;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&robust, &attr);
	printf("robust=%p\ntimed=%p\n", (void *)&robust, (void *)&timed);
	pthread_create(&t, NULL, robust_owner, NULL);
	pthread_join(t, NULL);
	rc = pthread_mutex_lock(&robust);
	printf("robust after its owner ended: %s\n", rc == EOWNERDEAD ? "EOWNERDEAD" : "?");
	pthread_mutex_consistent(&robust);
	pthread_mutex_unlock(&robust);
	pthread_mutex_lock(&timed);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += TIMEOUT_MS * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	rc = pthread_mutex_timedlock(&timed, &deadline);
	printf("timedlock of a held mutex: %s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : "?");
	pthread_mutex_unlock(&timed);
}

int main(void)
{
	pthread_barrier_init(&barrier, NULL, 2);
	sem_init(&sem, 0, 0);
	sem_init(&free_sem, 0, FREE_LOCKS);
	printf("contended=%p\nuncontended=%p\nrwlock=%p\nfree_rwlock=%p\ncond=%p\n"
	       "barrier=%p\nsem=%p\nfree_sem=%p\n",
	       (void *)&contended, (void *)&uncontended, (void *)&rwlock, (void *)&free_rwlock,
	       (void *)&cond, (void *)&barrier, (void *)&sem, (void *)&free_sem);
	locks_that_never_block();
	pthread_mutex_lock(&contended);
	run(mutex_worker, release_mutex);
	pthread_rwlock_wrlock(&rwlock);
	run(rwlock_worker, release_rwlock);
	run(cond_worker, release_cond);
	run(barrier_worker, release_barrier);
	run(sem_worker, release_sem);
	locks_that_fail();
	return 0;
}

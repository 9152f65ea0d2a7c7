/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer, through locks that block:
 *
 *   causal_locks SECONDS sem [produce|consume PERCENT]
 *     a producer makes items (produce: two units of work each) and posts a semaphore; a
 *     consumer waits on it and uses each item (consume: one unit), one progress point an
 *     item. Speeding produce up by s speeds the program up by min(s, 50%); consume: nothing.
 *
 *   causal_locks SECONDS mutex [locked|unlocked PERCENT]
 *     two threads each loop: take a mutex, two units of work holding it (locked), release
 *     it, one unit without it (unlocked), one progress point. The mutex is the bottleneck:
 *     speeding locked up by s speeds the program up by s (up to 50%); unlocked: nothing.
 *
 * In both, the waiting thread is woken by the one that was delayed while it worked, so it
 * must be credited with the delays inserted while it waited (Coz's rule), else it pays them
 * again and the speedup seen is lost.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#include "causal_fixture.h"

#define UNIT 1500000L

static long produce_units = 2 * UNIT, consume_units = UNIT;
static long locked_units = 2 * UNIT, unlocked_units = UNIT;
static double seconds, start;
static sem_t items;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long iterations;
static volatile int done;

static NOINLINE void produce(void)
{
	unsigned long x = 1;

	SPIN(x, produce_units, 1) /* PRODUCE */
	fixture_sink = (double)x;
}

static NOINLINE void consume(void)
{
	unsigned long x = 2;

	SPIN(x, consume_units, 3) /* CONSUME */
	fixture_sink = (double)x;
}

static NOINLINE void locked(void)
{
	unsigned long x = 3;

	SPIN(x, locked_units, 5) /* LOCKED */
	fixture_sink = (double)x;
}

static NOINLINE void unlocked(void)
{
	unsigned long x = 4;

	SPIN(x, unlocked_units, 7) /* UNLOCKED */
	fixture_sink = (double)x;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		sem_wait(&items);
		if (done)
			return NULL;
		consume();
		__atomic_fetch_add(&iterations, 1, __ATOMIC_RELAXED);
		PROGRESS("item");
	}
}

static void run_sem(void)
{
	pthread_t t;

	sem_init(&items, 0, 0);
	pthread_create(&t, NULL, consumer, NULL);
	while (fixture_now() - start < seconds) {
		produce();
		sem_post(&items);
	}
	done = 1;
	sem_post(&items);
	pthread_join(t, NULL);
}

static void *worker(void *arg)
{
	(void)arg;
	while (!done) {
		pthread_mutex_lock(&lock);
		locked();
		pthread_mutex_unlock(&lock);
		unlocked();
		__atomic_fetch_add(&iterations, 1, __ATOMIC_RELAXED);
		PROGRESS("iteration");
	}
	return NULL;
}

static void run_mutex(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	while (fixture_now() - start < seconds) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
	done = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	int mutex = argc > 2 && !strcmp(argv[2], "mutex");

	seconds = fixture_seconds(argc, argv, 1, 10);
	start = fixture_now();
	/* argv[3], argv[4]: the code made really faster, and by how much. */
	if (argc > 4) {
		char *shifted[] = { argv[0], argv[1], argv[3], argv[4] };

		causal_real_speedup(4, shifted, "produce", &produce_units);
		causal_real_speedup(4, shifted, "consume", &consume_units);
		causal_real_speedup(4, shifted, "locked", &locked_units);
		causal_real_speedup(4, shifted, "unlocked", &unlocked_units);
	}
	if (mutex)
		run_mutex();
	else
		run_sem();
	printf("iterations=%ld seconds=%.3f\n", iterations, fixture_now() - start);
	return 0;
}

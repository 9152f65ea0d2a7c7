/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer, through blocking: a producer makes items
 * (produce: two units of work each) and a consumer waits for them on a condition variable
 * and uses them (consume: one unit), one progress point per item consumed. The producer is
 * the bottleneck: speeding produce up by s speeds the program up by min(s, 50%); speeding
 * consume up does nothing. The consumer is woken by the producer every item, so it must be
 * credited with the delays inserted while it waited (Coz's rule), else it falls behind.
 *
 *   causal_pc SECONDS [produce|consume PERCENT]
 */
#include <pthread.h>
#include <stdio.h>

#include "causal_fixture.h"

#define UNIT 1500000L

static long produce_units = 2 * UNIT, consume_units = UNIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static long queued, consumed;
static int done;

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

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!queued && !done)
			pthread_cond_wait(&ready, &lock);
		if (!queued && done) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		queued--;
		pthread_mutex_unlock(&lock);
		consume();
		consumed++;
		PROGRESS("item");
	}
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start = fixture_now(), took;
	pthread_t t;

	causal_real_speedup(argc, argv, "produce", &produce_units);
	causal_real_speedup(argc, argv, "consume", &consume_units);
	pthread_create(&t, NULL, consumer, NULL);
	while ((took = fixture_now() - start) < seconds) {
		produce();
		pthread_mutex_lock(&lock);
		queued++;
		pthread_cond_signal(&ready);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_signal(&ready);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	printf("iterations=%ld seconds=%.3f\n", consumed, fixture_now() - start);
	return 0;
}

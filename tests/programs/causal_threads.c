/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer: each iteration starts two threads and joins
 * both; slow_work does twice the work of fast_work. Speeding slow_work up by s speeds the
 * program up by min(s, 50%) (then fast_work is as long); speeding fast_work up does nothing.
 * One progress point per iteration.
 *
 *   causal_threads SECONDS [slow|fast PERCENT]
 * The optional pair makes that function really PERCENT faster (less work), for comparing
 * predictions with real speedups (bench/causal-bench). Prints the iterations and the time.
 */
#include <pthread.h>
#include <stdio.h>

#include "causal_fixture.h"

#define UNIT 2500000L /* steps of fast_work: a few milliseconds */

static long slow_units = 2 * UNIT, fast_units = UNIT;

static NOINLINE void *slow_work(void *arg)
{
	unsigned long x = (unsigned long)arg;

	SPIN(x, slow_units, 1) /* SLOW */
	fixture_sink = (double)x;
	return NULL;
}

static NOINLINE void *fast_work(void *arg)
{
	unsigned long x = (unsigned long)arg;

	SPIN(x, fast_units, 3) /* FAST */
	fixture_sink = (double)x;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start = fixture_now(), took;
	long iterations = 0;

	causal_real_speedup(argc, argv, "slow", &slow_units);
	causal_real_speedup(argc, argv, "fast", &fast_units);
	do {
		pthread_t a, b;

		pthread_create(&a, NULL, slow_work, (void *)1);
		pthread_create(&b, NULL, fast_work, (void *)2);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		PROGRESS("iteration");
		iterations++;
	} while ((took = fixture_now() - start) < seconds);
	printf("iterations=%ld seconds=%.3f\n", iterations, took);
	return 0;
}

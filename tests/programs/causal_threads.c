/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer: each iteration starts two threads and joins
 * both; slow_work does twice the work of fast_work. Speeding slow_work up by s speeds the
 * program up by min(s, 50%) (then fast_work is as long); speeding fast_work up does nothing.
 * One progress point per iteration (syscope_progress).
 *
 *   causal_threads SECONDS [slow|fast PERCENT]
 * The optional pair makes that function really PERCENT faster (less work), for comparing
 * predictions with real speedups (bench/causal-bench). Prints the iterations and the time.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define SYSCOPE_WEAK
#include "syscope/syscope.h"

#include "fixture.h"

#define UNIT 2500000L /* iterations of the loop in fast_work: a few milliseconds */

static long slow_units = 2 * UNIT, fast_units = UNIT;

static NOINLINE unsigned long spin(long n, unsigned long x)
{
	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static NOINLINE void *slow_work(void *arg)
{
	fixture_sink = (double)spin(slow_units, (unsigned long)arg);
	return NULL;
}

static NOINLINE void *fast_work(void *arg)
{
	fixture_sink = (double)spin(fast_units, (unsigned long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start = fixture_now(), took;
	long iterations = 0;

	if (argc > 3) {
		long *units = !strcmp(argv[2], "slow") ? &slow_units : &fast_units;

		*units = (long)((double)*units * (1 - atof(argv[3]) / 100));
	}
	do {
		pthread_t a, b;

		pthread_create(&a, NULL, slow_work, (void *)1);
		pthread_create(&b, NULL, fast_work, (void *)2);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		if (syscope_progress)
			syscope_progress("iteration");
		iterations++;
	} while ((took = fixture_now() - start) < seconds);
	printf("iterations=%ld seconds=%.3f\n", iterations, took);
	return 0;
}

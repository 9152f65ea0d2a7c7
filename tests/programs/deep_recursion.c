/* SPDX-License-Identifier: MIT */
/*
 * Call trees deeper than any output shows (tests/integration/test_bounded_outputs.py).
 *
 *   deep_recursion calls DEPTH REPS       descend() recursing DEPTH levels, REPS times, with a
 *                                         little work in leaf_work at the bottom; built with
 *                                         -finstrument-functions, each call is a region:
 *                                         REPS x (DEPTH + 1) calls of descend, REPS of leaf_work
 *   deep_threads spin THREADS SECONDS DEPTH  THREADS threads each recursing DEPTH levels and
 *                                         spinning in leaf_work for SECONDS of CPU time (the
 *                                         hot function of a sampled run)
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static double spin_seconds; /* 0: a short, fixed amount of work */

NOINLINE static double leaf_work(double x)
{
	if (!spin_seconds) {
		for (int i = 0; i < 200; i++)
			x = x * 1.0000001 + 0.5;
		return x;
	}
	for (double end = fixture_cpu_now() + spin_seconds; fixture_cpu_now() < end;)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 0.5;
	return x;
}

NOINLINE static double descend(int depth, double x)
{
	if (depth == 0)
		return leaf_work(x);
	return descend(depth - 1, x) + 1e-9; /* not a tail call */
}

static int thread_depth;

static void *worker(void *arg)
{
	fixture_sink = descend(thread_depth, (double)(long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "calls")) {
		int depth = atoi(argv[2]), reps = atoi(argv[3]);
		double x = 1;

		for (int r = 0; r < reps; r++)
			x = descend(depth, x);
		fixture_sink = x;
		printf("deep_recursion: %d x %d\n", reps, depth);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "spin")) {
		int n = atoi(argv[2]);
		pthread_t t[64];

		spin_seconds = atof(argv[3]);
		thread_depth = atoi(argv[4]);
		if (n < 1 || n > 64)
			return 2;
		for (long i = 0; i < n; i++)
			pthread_create(&t[i], NULL, worker, (void *)i);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		printf("deep_threads: %d threads\n", n);
		return 0;
	}
	fprintf(stderr, "usage: deep_recursion calls DEPTH REPS | spin THREADS SECONDS DEPTH\n");
	return 2;
}

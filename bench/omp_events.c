/* SPDX-License-Identifier: MIT */
/*
 * The cost of an OpenMP event: N parallel regions of one thread (serialized, so scheduler
 * noise stays out and each region makes the same few events), timed by the program itself.
 * Run without syscope and under `syscope sample --parallel=openmp`; bench/run-all --only
 * openmp divides the difference by the events recorded.
 *
 * Usage: omp_events [N]; prints "regions=N ns_per_region=X cpu_ns_per_region=Y" (wall time,
 * and the thread's CPU time, which a loaded machine disturbs less).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;

static double elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct timespec t0, t1, c0, c1;

#pragma omp parallel num_threads(1)
	sink++; /* the runtime's start-up, outside the timing */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
#pragma omp parallel num_threads(1)
		sink++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	printf("regions=%ld ns_per_region=%.2f cpu_ns_per_region=%.2f\n", n,
	       elapsed(&t0, &t1) / (double)n, elapsed(&c0, &c1) / (double)n);
	return 0;
}

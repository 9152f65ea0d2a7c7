/* SPDX-License-Identifier: MIT */
/*
 * The cost of an OpenMP event: N parallel regions of one thread (serialized, so scheduler
 * noise stays out and each region makes the same few events), timed by the program itself.
 * Run without syscope and under `syscope sample --parallel=openmp`; bench/run-all --only
 * openmp divides the difference by the events recorded.
 *
 * Usage: omp_events [N]; prints "regions=N ns_per_region=X".
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct timespec t0, t1;

#pragma omp parallel num_threads(1)
	sink++; /* the runtime's start-up, outside the timing */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
#pragma omp parallel num_threads(1)
		sink++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("regions=%ld ns_per_region=%.2f\n", n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       (double)n);
	return 0;
}

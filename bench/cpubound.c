/* SPDX-License-Identifier: MIT */
/*
 * A CPU-bound workload of fixed size for overhead measurements: `cpubound THREADS UNITS`
 * splits UNITS units of work over THREADS threads. Work is fixed, not time, so a profiler's
 * cost shows up as longer wall and CPU time. Several call levels give the unwinder a
 * realistic stack.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static long units_per_thread;

NOINLINE static double kernel_inner(double x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 1.0 / (x + 3.0);
	return x;
}

NOINLINE static double kernel_middle(double x, int depth)
{
	return depth ? kernel_middle(x, depth - 1) + 1e-12 : kernel_inner(x);
}

NOINLINE static double unit_of_work(long u)
{
	return kernel_middle((double)u, (int)(u % 8));
}

static void *worker(void *arg)
{
	double acc = 0;

	for (long u = 0; u < units_per_thread; u++)
		acc += unit_of_work(u + (long)arg);
	*(double *)arg = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 1;
	long units = argc > 2 ? atol(argv[2]) : 20000;
	pthread_t threads[64];
	double results[64];
	double total = 0;
	struct timespec t0, t1;
	struct rusage ru;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (nthreads < 1 || nthreads > 64 || units < 1)
		return 2;
	units_per_thread = units / nthreads;
	for (int i = 0; i < nthreads; i++) {
		results[i] = i;
		pthread_create(&threads[i], NULL, worker, &results[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(threads[i], NULL);
		total += results[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	/* The program's own measure of itself, from main to here: what a profiler adds to it. */
	printf("cpubound: %d threads, %ld units, %g\n", nthreads, units, total);
	printf("cpubound-times: wall=%.6f cpu=%.6f\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
	return 0;
}

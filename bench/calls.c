/* SPDX-License-Identifier: MIT */
/*
 * The cost of an instrumented call: built with -finstrument-functions, it calls a function
 * that does nothing N times and prints the loop's time per call, so that a tracer's cost
 * per call (entry + exit) is the difference from an uninstrumented run. The same binary
 * runs under syscope (compiler hooks) and under `uftrace record` (which also uses the
 * -finstrument-functions hooks, or -pg's mcount).
 *
 * The loop is timed in the thread's CPU time: on a loaded machine wall time includes the
 * time other programs ran.
 *
 * Usage: calls [N]; prints "calls=N ns_per_call=X" (CPU nanoseconds of the loop per call).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) static void callee(long i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	struct timespec t0, t1;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (long i = 0; i < n; i++)
		callee(i);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	printf("calls=%ld ns_per_call=%.2f\n", n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       (double)n);
	return 0;
}

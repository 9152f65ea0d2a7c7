/* SPDX-License-Identifier: MIT */
/*
 * The cost of an instrumented call: built with -finstrument-functions, it calls a function
 * that does nothing N times and prints the loop's time per call, so that a tracer's cost
 * per call (entry + exit) is the difference from an uninstrumented run. The same binary
 * runs under syscope (compiler hooks) and under `uftrace record` (which also uses the
 * -finstrument-functions hooks, or -pg's mcount).
 *
 * The loop is timed in the thread's CPU time: on a loaded machine wall time includes the
 * time other programs ran. With THREADS, that many threads share the N calls at once (the
 * counted calls of a throttled function, which threads count apart): the time is the sum
 * of their loops' CPU time.
 *
 * Usage: calls [N [THREADS]]; prints "calls=N ns_per_call=X" (CPU nanoseconds of the loop per
 * call).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) static void callee(long i)
{
	sink += i;
}

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

struct loop {
	long n;
	double ns;
};

static void *run_loop(void *arg)
{
	struct loop *l = arg;
	double t0 = cpu_ns();

	for (long i = 0; i < l->n; i++)
		callee(i);
	l->ns = cpu_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	struct loop loops[64];
	pthread_t th[64];
	double ns = 0;

	if (threads < 0 || threads > 64)
		return 2;
	for (int i = 0; i < (threads ? threads : 1); i++)
		loops[i] = (struct loop){ .n = n / (threads ? threads : 1) };
	if (!threads) {
		run_loop(&loops[0]);
	} else {
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, run_loop, &loops[i]))
				return 1;
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	}
	for (int i = 0; i < (threads ? threads : 1); i++)
		ns += loops[i].ns;
	printf("calls=%ld ns_per_call=%.2f\n", n, ns / (double)n);
	return 0;
}

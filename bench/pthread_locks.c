/* SPDX-License-Identifier: MIT */
/*
 * The cost of an uncontended lock: N pthread_mutex_lock/unlock pairs on a mutex no other
 * thread touches, timed by the program itself. Run plainly, under syscope without
 * --parallel=pthread (the wrapper passes through) and with it (the wrapper tries the lock
 * first and takes no time when it is free).
 *
 * Usage: pthread_locks [N]; prints "pairs=N ns_per_pair=X".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("pairs=%ld ns_per_pair=%.2f\n", n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       (double)n);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The runtime's clock against CLOCK_MONOTONIC: for about 400 ms (the TSC clock's first
 * calibration and several of its steering periods), each thread puts a mark "m" between two
 * readings of CLOCK_MONOTONIC of its own and prints "tid before after" for it, in order.
 * Two threads, so that marks are also taken while the other thread steers the clock.
 *
 * Usage: clock_marks [MILLISECONDS]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SYSCOPE_WEAK
#include "syscope/syscope.h"

#define MAX_MARKS 20000

struct run {
	uint64_t before[MAX_MARKS], after[MAX_MARKS];
	int n;
	long tid;
};

static long duration_ms = 400;

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *marks(void *arg)
{
	struct run *r = arg;
	uint64_t end = now() + (uint64_t)duration_ms * 1000000ull;

	r->tid = syscall(SYS_gettid);
	while (r->n < MAX_MARKS && now() < end) {
		r->before[r->n] = now();
		syscope_mark("m");
		r->after[r->n] = now();
		r->n++;
		for (volatile int spin = 0; spin < 20000; spin++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct run runs[2];
	pthread_t t;

	if (!syscope_mark) {
		printf("clock_marks: running without syscope\n");
		return 0;
	}
	if (argc > 1)
		duration_ms = atol(argv[1]);
	pthread_create(&t, NULL, marks, &runs[1]);
	marks(&runs[0]);
	pthread_join(t, NULL);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < runs[k].n; i++)
			printf("%ld %llu %llu\n", runs[k].tid,
			       (unsigned long long)runs[k].before[i],
			       (unsigned long long)runs[k].after[i]);
	return 0;
}

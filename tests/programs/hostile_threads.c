/* SPDX-License-Identifier: MIT */
/* Creates argv[1] short-lived threads (default 10000), 32 at a time, each working briefly
 * (argv[2] iterations, default 2000). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static long iterations = 2000;

NOINLINE static void *short_life(void *arg)
{
	double x = (double)(long)arg;

	for (long i = 0; i < iterations; i++)
		x = x * 1.0000001 + 0.5;
	fixture_sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, done = 0;

	if (argc > 2)
		iterations = atol(argv[2]);
	pthread_t batch[32];

	while (done < n) {
		int k = n - done < 32 ? n - done : 32;

		for (int i = 0; i < k; i++)
			if (pthread_create(&batch[i], NULL, short_life, (void *)(long)(done + i)))
				return 1;
		for (int i = 0; i < k; i++)
			pthread_join(batch[i], NULL);
		done += k;
	}
	printf("hostile_threads: %d threads\n", done);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Two threads that do little but take and give back one mutex, for a given CPU time each
 * (argv[1], default 0.4 s): most of their samples are inside pthread_mutex_lock and
 * pthread_mutex_unlock, which --parallel=pthread wraps.
 */
#include <pthread.h>
#include <stdio.h>

#include "fixture.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long taken;
static double seconds;

NOINLINE static void *churn(void *arg)
{
	double end = fixture_cpu_now() + seconds;

	(void)arg;
	while (fixture_cpu_now() < end)
		for (int i = 0; i < 1000; i++) {
			pthread_mutex_lock(&lock);
			taken++;
			pthread_mutex_unlock(&lock);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	seconds = fixture_seconds(argc, argv, 1, 0.4);
	pthread_create(&t, NULL, churn, NULL);
	churn(NULL);
	pthread_join(t, NULL);
	printf("lock_churn: %s\n", taken > 0 ? "done" : "nothing taken");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Two worker threads, each with its own hot function; main only waits. */
#include <pthread.h>
#include <stdio.h>

#include "fixture.h"

static double seconds = 1.0;

NOINLINE static double work_alpha(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.25;
	return x;
}

NOINLINE static double work_beta(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 0.9999999 + 0.75;
	return x;
}

static void *thread_alpha(void *arg)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	(void)arg;
	while (fixture_cpu_left(end))
		x = work_alpha(x);
	fixture_sink = x;
	return NULL;
}

static void *thread_beta(void *arg)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	(void)arg;
	while (fixture_cpu_left(end))
		x = work_beta(x);
	fixture_sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	seconds = fixture_seconds(argc, argv, 1, 1.0);
	pthread_create(&a, NULL, thread_alpha, NULL);
	pthread_create(&b, NULL, thread_beta, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("two_threads: done\n");
	return 0;
}

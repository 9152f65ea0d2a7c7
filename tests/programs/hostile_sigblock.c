/* SPDX-License-Identifier: MIT */
/* Blocks every signal in all threads and works: must neither hang nor die under syscope, and
 * its mask must read back as set. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "fixture.h"

static double seconds = 0.8;

NOINLINE static double blocked_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

static void *worker(void *arg)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	(void)arg;
	while (fixture_cpu_left(end))
		x = blocked_work(x);
	fixture_sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	sigset_t all, cur;
	pthread_t t;

	seconds = fixture_seconds(argc, argv, 1, 0.8);
	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, NULL))
		return 3;
	pthread_create(&t, NULL, worker, NULL); /* inherits the mask */
	worker(NULL);
	pthread_join(t, NULL);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	if (!sigismember(&cur, SIGINT) || !sigismember(&cur, SIGTERM)) {
		fprintf(stderr, "hostile_sigblock: mask not kept\n");
		return 1;
	}
	printf("hostile_sigblock: done\n");
	return 0;
}

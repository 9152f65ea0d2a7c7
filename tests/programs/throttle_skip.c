/* SPDX-License-Identifier: MIT */
/*
 * A function throttled and one recorded call by call (tests/integration/test_throttle_skip.py):
 * `throttle_skip N` calls tiny() N times and slow() 50 times from main;
 * `throttle_skip N threads T`: T threads share the N calls of tiny() (N/T each, T divides N)
 *   while main calls slow() 50 times;
 * `throttle_skip N fork`: the same as the first, then a fork child calls tiny() N times and
 *   slow() 50 times again (its own counts), and the parent waits for it;
 * `throttle_skip N late`: a thread whose start function is not instrumented calls
 *   late_long() N times quickly and then 20 times for 10 ms each (time that only
 *   late_long() holds: it has no instrumented caller).
 * Built twice: for `syscope instrument` and with -finstrument-functions.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

static volatile long sink;

NOINLINE void tiny(long i)
{
	sink += i;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void slow(void)
{
	for (long i = 0; i < 100000; i++)
		sink += i;
}

/* For the default selection (never called): straight-line code of a few dozen instructions
 * that calls nothing (left out below --min-leaf-instructions), and a small function that
 * calls. */
NOINLINE void leaf_mix(long a, long b)
{
	sink = sink * 3 + a;
	sink ^= b;
	sink = sink * 5 - a;
	sink += b << 3;
	sink = sink * 7 + (a ^ b);
	sink -= a >> 2;
	sink = sink * 11 + b;
	sink ^= a + b;
}

NOINLINE void small_caller(long i)
{
	tiny(i);
	tiny(i + 1);
	tiny(i + 2);
	tiny(i + 3);
	tiny(i + 4);
}

NOINLINE void late_long(int sleep_ms)
{
	if (sleep_ms)
		usleep((useconds_t)sleep_ms * 1000);
	else
		sink++;
}

/* Not instrumented in either build: late_long's calls have no instrumented caller. */
__attribute__((no_instrument_function)) static void *late_main(void *arg)
{
	long n = (long)(intptr_t)arg;

	for (long i = 0; i < n; i++)
		late_long(0);
	for (int i = 0; i < 20; i++)
		late_long(10);
	return NULL;
}

static int late(long n)
{
	pthread_t th;

	if (pthread_create(&th, NULL, late_main, (void *)(intptr_t)n))
		return 1;
	return pthread_join(th, NULL) ? 1 : 0;
}

static void calls(long n)
{
	for (long i = 0; i < n; i++)
		tiny(i);
}

static void *thread_main(void *arg)
{
	calls((long)(intptr_t)arg);
	return NULL;
}

static void slow_calls(void)
{
	for (int i = 0; i < 50; i++)
		slow();
}

static int threads(long n, int t)
{
	pthread_t th[64];

	if (t < 1 || t > 64 || n % t)
		return 2;
	for (int i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)(n / t)))
			return 1;
	slow_calls();
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	return 0;
}

static int forked(long n)
{
	int status;
	pid_t pid;

	calls(n);
	slow_calls();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		calls(n);
		slow_calls();
		_exit(0);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	int rc = 0;

	if (argc > 3 && !strcmp(argv[2], "threads"))
		rc = threads(n, atoi(argv[3]));
	else if (argc > 2 && !strcmp(argv[2], "fork"))
		rc = forked(n);
	else if (argc > 2 && !strcmp(argv[2], "late"))
		rc = late(n);
	else {
		calls(n);
		slow_calls();
	}
	if (!rc)
		printf("throttle_skip ok %ld\n", n);
	return rc;
}

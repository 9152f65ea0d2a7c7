/* SPDX-License-Identifier: MIT */
/*
 * Counted calls of a throttled function, exact however threads and the process end
 * (tests/integration/test_counted_calls.py). tiny() is called N times in each place:
 * `counted_calls threads N T`: T threads one after another (each ends before the next
 *   starts, so each later one takes over the table of counts the last one left), then T at
 *   once, then main: (2T + 1) N calls;
 * `counted_calls fork N`: main, then a fork child (main and one thread of its own: 2N
 *   there), then main again after the child has ended: 2N in the parent;
 * `counted_calls _exit N T` and `counted_calls abort N T`: T threads that stay alive,
 *   blocked, after their calls, then main, which ends the process with _exit(0) or
 *   abort(): (T + 1) N calls.
 * Each prints "counted_calls ok MODE CALLS" (the process's own total) before it ends.
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
static long n;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done;

NOINLINE void tiny(long i)
{
	sink += i;
	__asm__ volatile("" ::: "memory");
}

static void calls(void)
{
	for (long i = 0; i < n; i++)
		tiny(i);
}

static void *caller(void *arg)
{
	(void)arg;
	calls();
	return NULL;
}

/* Calls, says so, then waits for the process's end without ending itself. */
static void *caller_stays(void *arg)
{
	(void)arg;
	calls();
	pthread_mutex_lock(&lock);
	done++;
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&lock);
	for (;;)
		pause();
	return NULL;
}

static int run_threads(int t, void *(*fn)(void *), int together)
{
	pthread_t th[64];

	for (int i = 0; i < t; i++) {
		if (pthread_create(&th[i], NULL, fn, NULL))
			return 1;
		if (!together && pthread_join(th[i], NULL))
			return 1;
	}
	for (int i = 0; together && fn == caller && i < t; i++)
		if (pthread_join(th[i], NULL))
			return 1;
	return 0;
}

static void say(const char *mode, long total)
{
	printf("counted_calls ok %s %ld\n", mode, total);
	fflush(stdout);
}

static int forked(void)
{
	int status;
	pid_t pid;

	calls();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		calls();
		if (run_threads(1, caller, 0))
			_exit(1);
		say("fork-child", 2 * n);
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	calls();
	say("fork", 2 * n);
	return 0;
}

static int ended_early(const char *how, int t)
{
	if (run_threads(t, caller_stays, 1))
		return 1;
	pthread_mutex_lock(&lock);
	while (done < t)
		pthread_cond_wait(&done_cond, &lock);
	pthread_mutex_unlock(&lock);
	calls();
	say(how, (t + 1) * n);
	if (!strcmp(how, "abort"))
		abort();
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int t = argc > 3 ? atoi(argv[3]) : 0;

	n = argc > 2 ? atol(argv[2]) : 0;
	if (n < 1 || t < 0 || t > 64)
		return 2;
	if (!strcmp(mode, "threads")) {
		if (run_threads(t, caller, 0) || run_threads(t, caller, 1))
			return 1;
		calls();
		say(mode, (2 * t + 1) * n);
		return 0;
	}
	if (!strcmp(mode, "fork"))
		return forked();
	if (!strcmp(mode, "_exit") || !strcmp(mode, "abort"))
		return ended_early(mode, t);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * A program whose timer signal handler calls its own functions while its threads start and
 * end: a 100 us timer's SIGALRM (delivered to whichever thread runs) calls leaf(), which the
 * threads call too, so under syscope instrument (or built with -finstrument-functions) a
 * recorded call can come in a handler on a thread that is ending. Prints how many calls of
 * leaf() it made in all; exits 0.
 *
 * usage: timer_calls [CALLS-PER-THREAD]   (200000 by default; 4 threads)
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"

#define THREADS 4

static atomic_long handler_calls;
static long per_thread = 200000;

NOINLINE long leaf(long x)
{
	long s = 0;

	for (int i = 0; i < 40; i++)
		s += (x ^ i) * 3;
	return s;
}

NOINLINE static void on_alarm(int sig)
{
	(void)sig;
	fixture_sink += (double)(leaf(atomic_fetch_add(&handler_calls, 1)) & 1);
}

NOINLINE static double work(long n)
{
	double x = 0;

	for (long i = 0; i < n; i++)
		x += (double)leaf(i) * 1e-9;
	return x;
}

static void *thread_main(void *arg)
{
	(void)arg;
	fixture_sink += work(per_thread);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct itimerspec every = { .it_interval = { 0, 100000 }, .it_value = { 0, 100000 } };
	struct itimerspec off = { 0 };
	pthread_t t[THREADS - 1];
	sigset_t alrm;
	timer_t timer;

	if (argc > 1)
		per_thread = atol(argv[1]);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) || timer_create(CLOCK_MONOTONIC, &ev, &timer) ||
	    timer_settime(timer, 0, &every, NULL)) {
		perror("timer_calls: timer");
		return 1;
	}
	for (int i = 0; i < THREADS - 1; i++)
		pthread_create(&t[i], NULL, thread_main, NULL);
	fixture_sink += work(per_thread);
	for (int i = 0; i < THREADS - 1; i++)
		pthread_join(t[i], NULL);
	timer_settime(timer, 0, &off, NULL);
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, NULL); /* a tick still queued is not taken after the count */
	printf("timer_calls: %ld calls of leaf\n",
	       THREADS * per_thread + atomic_load(&handler_calls));
	return 0;
}

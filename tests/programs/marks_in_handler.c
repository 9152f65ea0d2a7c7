/* SPDX-License-Identifier: MIT */
/*
 * Records from a signal handler of the program while syscope's sampler may be in the middle
 * of a sample: a timer signals the thread every 50 us, and its handler makes a
 * syscope_mark ("tick"), which can land between the sample's reservation and its commit (the
 * sampler blocks only its own signals). The main thread recurses deep, so that each sample's
 * unwinding takes a while. Prints how many marks it made; syscope must have all of them.
 * Declared weak: the program also runs without syscope.
 *
 * usage: marks_in_handler [SECONDS]   (CPU seconds, 1 by default)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SYSCOPE_WEAK
#include "syscope/syscope.h"

#include "fixture.h"

static volatile sig_atomic_t marks;

static void on_tick(int sig)
{
	(void)sig;
	if (syscope_mark) {
		syscope_mark("tick");
		marks++;
	}
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE static double descend(int depth, double x)
{
	if (depth == 0) {
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
		return x;
	}
	return descend(depth - 1, x) + 1.0; /* not a tail call: every level stays on the stack */
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0, until;
	struct sigaction sa = { .sa_handler = on_tick };
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	struct itimerspec every = { .it_interval = { 0, 50000 }, .it_value = { 0, 50000 } };
	timer_t timer;
	sigset_t usr1, old;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) || timer_create(CLOCK_MONOTONIC, &ev, &timer) ||
	    timer_settime(timer, 0, &every, NULL)) {
		perror("marks_in_handler: timer");
		return 1;
	}
	until = cpu_seconds() + seconds;
	while (cpu_seconds() < until)
		fixture_sink = descend(60, fixture_sink);
	timer_delete(timer);
	/* A tick already queued is taken here, before the count is printed. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	printf("marks_in_handler: %d marks\n", (int)marks);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * For test_guarantees_signals.py: how many times a signal reaches a program. It counts the
 * SIGINTs it gets (its handler takes 50 ms, so a second one sent meanwhile is another, not
 * merged with the first), prints "ready" once its handlers are in, "int N" after each, and on
 * SIGQUIT prints "ints=N" and exits 0. SIGQUIT is a higher number than SIGINT: when both are
 * pending, the kernel delivers SIGINT first, so every SIGINT sent before the SIGQUIT is
 * counted.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t ints, quit;

static void on_int(int sig)
{
	const struct timespec ms50 = { 0, 50000000 };

	(void)sig;
	ints++;
	nanosleep(&ms50, NULL);
}

static void on_quit(int sig)
{
	(void)sig;
	quit = 1;
}

int main(void)
{
	struct sigaction sa;
	sigset_t mask, old;
	int shown = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_int;
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_quit;
	sigaction(SIGQUIT, &sa, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &old);
	printf("ready\n");
	fflush(stdout);
	while (!quit) {
		sigsuspend(&old); /* no signal slips between the test and the wait */
		for (; shown < ints; shown++)
			printf("int %d\n", shown + 1);
		fflush(stdout);
	}
	printf("ints=%d\n", (int)ints);
	return 0;
}

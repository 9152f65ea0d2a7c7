/* SPDX-License-Identifier: MIT */
/*
 * For test_attach_more.py: a program that cleans up on SIGTERM as xz and gzip do. Its handler,
 * installed with sigaction() at start (before any attach), writes "cleanup" and spins in
 * cleanup_spin() for 0.2 s of its thread's CPU time, then gives SIGTERM its default back with
 * signal() and raises it again: the program dies of SIGTERM. Until then the main thread
 * spins in main_spin(); "pid=N" is its first line.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) static void work(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i * 0.5;
}

__attribute__((noinline)) void main_spin(void)
{
	for (;;)
		work(); /* main spin */
}

/* Async-signal-safe: clock_gettime and arithmetic. */
__attribute__((noinline)) void cleanup_spin(void)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		work(); /* cleanup spin */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 200000000L);
}

static void on_term(int sig)
{
	static const char line[] = "cleanup\n";

	if (write(1, line, sizeof(line) - 1) < 0)
		_exit(3);
	cleanup_spin();
	signal(sig, SIG_DFL);
	raise(sig); /* pending until this handler returns: then the default action */
}

int main(void)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_handler = on_term;
	sigemptyset(&act.sa_mask);
	sigaction(SIGTERM, &act, NULL);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	main_spin();
	return 0;
}

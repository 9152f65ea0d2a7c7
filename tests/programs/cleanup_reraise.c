/* SPDX-License-Identifier: MIT */
/*
 * Dies of a signal the way xz, gzip and sort do on Ctrl-C: its own handler notes the
 * signal, the program cleans up, puts the default action back with sigaction() and raises
 * the signal again. Before that it burns SECONDS of CPU time in work_before_signal. It
 * prints what sigaction() showed it at each step, so that a test can compare its output
 * with a plain run's.
 *
 * usage: cleanup_reraise [SECONDS]
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static volatile sig_atomic_t caught;

static void on_term(int sig)
{
	caught = sig;
}

static NOINLINE void work_before_signal(double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	while (fixture_cpu_now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
	fixture_sink = x;
}

static const char *handler_name(int sig)
{
	struct sigaction cur;

	if (sigaction(sig, NULL, &cur))
		return "error";
	return cur.sa_handler == SIG_DFL ? "default" : cur.sa_handler == on_term ? "ours" : "other";
}

int main(int argc, char **argv)
{
	struct sigaction dfl;

	signal(SIGTERM, on_term);
	printf("installed: %s\n", handler_name(SIGTERM));
	work_before_signal(fixture_seconds(argc, argv, 1, 0.5));
	raise(SIGTERM);
	printf("caught: %d\n", (int)caught);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGTERM, &dfl, NULL);
	printf("restored: %s\n", handler_name(SIGTERM));
	fflush(stdout);
	raise(SIGTERM);
	printf("still alive\n");
	return 1;
}

/* SPDX-License-Identifier: MIT */
/* Installs its own SIGPROF handler on an ITIMER_PROF timer, as gprof-style tools do; it must
 * keep receiving its signals under syscope. Exits 0 only if its handler ran. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "fixture.h"

static volatile sig_atomic_t ticks;

static void on_prof(int sig)
{
	(void)sig;
	ticks++;
}

NOINLINE static double prof_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 1.0), x = 1;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	while (fixture_cpu_left(end))
		x = prof_work(x);
	fixture_sink = x;
	printf("own_sigprof: %d ticks\n", (int)ticks);
	return ticks > 0 ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/* Works, then dies of SIGKILL: nothing runs at exit, the profile must still be built. */
#include <signal.h>
#include <unistd.h>

#include "fixture.h"

NOINLINE static double doomed_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.8), x = 1;

	while (fixture_cpu_left(end))
		x = doomed_work(x);
	fixture_sink = x;
	kill(getpid(), SIGKILL);
	return 0;
}

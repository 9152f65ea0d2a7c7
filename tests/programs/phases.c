/* SPDX-License-Identifier: MIT */
/* phase_early runs argv[1] seconds of wall-clock time, then phase_late argv[2] seconds of CPU
 * time: for delay and duration. */
#include <stdio.h>

#include "fixture.h"

NOINLINE static double phase_early(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

NOINLINE static double phase_late(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 0.9999999 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double end = fixture_now() + fixture_seconds(argc, argv, 1, 0.5), x = 1;

	while (fixture_now() < end)
		x = phase_early(x);
	/* The first phase lasts a wall-clock time (the delay and duration are wall-clock),
	 * the second a CPU time: its samples do not depend on the machine's load. */
	end = fixture_cpu_now() + fixture_seconds(argc, argv, 2, 0.5);
	while (fixture_cpu_left(end))
		x = phase_late(x);
	fixture_sink = x;
	printf("phases: done\n");
	return 0;
}

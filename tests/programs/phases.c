/* SPDX-License-Identifier: MIT */
/* phase_early runs argv[1] seconds, then phase_late argv[2] seconds: for delay and duration. */
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
	end = fixture_now() + fixture_seconds(argc, argv, 2, 0.5);
	while (fixture_now() < end)
		x = phase_late(x);
	fixture_sink = x;
	printf("phases: done\n");
	return 0;
}

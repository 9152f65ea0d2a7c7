/* SPDX-License-Identifier: MIT */
/* One hot function: hot_loop gets nearly all CPU time, on the line marked HOT_LINE. It runs
 * for the given seconds of its own CPU time, so a loaded machine gives it the same samples
 * (only later). */
#include <stdio.h>

#include "fixture.h"

NOINLINE double hot_loop(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0); /* HOT_LINE */
	return x;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 1.0), x = 1.0;
	double end = fixture_cpu_now() + seconds;

	while (fixture_cpu_left(end))
		x = hot_loop(x, 200000);
	fixture_sink = x;
	printf("hot: done\n");
	return argc > 2 ? atoi(argv[2]) : 0;
}

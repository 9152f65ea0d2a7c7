/* SPDX-License-Identifier: MIT */
/* Many distinct call paths: each unit of work walks PATH_DEPTH calls, going left or right
 * by the bits of its number, so samples land in up to 2^PATH_DEPTH paths (a call tree far
 * larger than a report keeps). */
#include <stdio.h>

#include "fixture.h"

#define PATH_DEPTH 18

NOINLINE static double path_leaf(double x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

NOINLINE static double go_right(int depth, unsigned n, double x);

NOINLINE static double go_left(int depth, unsigned n, double x)
{
	if (!depth)
		return path_leaf(x);
	return (n & 1 ? go_right : go_left)(depth - 1, n >> 1, x) + 1e-9;
}

NOINLINE static double go_right(int depth, unsigned n, double x)
{
	if (!depth)
		return path_leaf(x);
	return (n & 1 ? go_right : go_left)(depth - 1, n >> 1, x) + 2e-9;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 1.0), x = 1.0;
	double end = fixture_cpu_now() + seconds;

	/* A multiplier that spreads consecutive units over distant paths. */
	for (unsigned n = 0; fixture_cpu_left(end); n++)
		x = go_left(PATH_DEPTH, n * 2654435761u, x);
	fixture_sink = x;
	printf("many_paths: done\n");
	return 0;
}

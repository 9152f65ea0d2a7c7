/* SPDX-License-Identifier: MIT */
/* Recursion argv[2] levels deep (default 10000), with the hot work at the bottom. */
#include <stdio.h>

#include "fixture.h"

NOINLINE static double leaf_work(double x)
{
	for (int i = 0; i < 1000000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

NOINLINE static double descend(int depth, double x)
{
	if (depth == 0)
		return leaf_work(x);
	return descend(depth - 1, x) + 1e-9; /* not a tail call */
}

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 1.0), x = 1;
	int depth = argc > 2 ? atoi(argv[2]) : 10000;

	while (fixture_cpu_left(end))
		x = descend(depth, x);
	fixture_sink = x;
	printf("recurse: done\n");
	return 0;
}

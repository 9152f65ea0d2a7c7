/* SPDX-License-Identifier: MIT */
/*
 * Time spent below a function: alpha does nothing itself but calls burn, which does 3 of
 * every 4 units of work; beta does the fourth itself. Ranked by self time only, alpha does
 * not appear; by total time it has about 75%.
 */
#include <stdio.h>

#include "fixture.h"

NOINLINE double burn(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	return x;
}

NOINLINE double alpha(double x)
{
	x = burn(x, 300000);
	fixture_sink = x; /* work after the call: no tail call, alpha stays on the stack */
	return x * 0.5 + 0.5;
}

NOINLINE double beta(double x)
{
	for (long i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	return x;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 1.0), x = 1.0;
	double end = fixture_cpu_now() + seconds;

	while (fixture_cpu_left(end))
		x = beta(alpha(x));
	fixture_sink = x;
	printf("inclusive: done\n");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Works in busy_before_crash, then dereferences NULL in crash_here (line marked CRASH_LINE). */
#include "fixture.h"

NOINLINE static double busy_before_crash(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

NOINLINE static void crash_here(volatile int *p)
{
	*p = 42; /* CRASH_LINE */
}

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.5), x = 1;

	while (fixture_cpu_left(end))
		x = busy_before_crash(x);
	fixture_sink = x;
	crash_here((volatile int *)(long)(x < 0));
	return 0;
}

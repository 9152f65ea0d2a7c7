/* SPDX-License-Identifier: MIT */
/* A shared library loaded with dlopen by dlopen_main: lib_hot_work is its hot function. */
#include "fixture.h"

NOINLINE double lib_hot_work(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.125; /* LIB_HOT_LINE */
	return x;
}

double lib_run(double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	while (fixture_cpu_left(end))
		x = lib_hot_work(x, 100000);
	return x;
}

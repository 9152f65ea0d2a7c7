/* SPDX-License-Identifier: MIT */
/*
 * A shared library the program patch_lib_main links against (DT_NEEDED), for
 * `syscope instrument -MI patch_lib`: lib_outer calls lib_inner 4 times.
 */
#include "fixture.h"

static volatile long lib_sink;

NOINLINE long lib_inner(long x)
{
	lib_sink += x;
	return lib_sink * 2;
}

NOINLINE long lib_outer(long n)
{
	long s = 0;

	lib_sink++;
	for (long i = 0; i < 4; i++)
		s += lib_inner(i + n);
	return s;
}

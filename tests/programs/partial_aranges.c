/* SPDX-License-Identifier: MIT */
/*
 * A program whose .debug_aranges leaves out a unit, as Go's linker does for every Go unit
 * of a cgo program: this file's object is linked with its aranges removed, after
 * partial_aranges_listed.c, whose unit keeps them. Its hot function must be named with its
 * own file and line, not the listed unit's last line.
 *
 * usage: partial_aranges SECONDS
 */
#include <stdio.h>

#include "fixture.h"

double listed_helper(double x);

NOINLINE static double unlisted_work(double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	while (fixture_cpu_left(end))
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9; /* the hot line */
	return x;
}

int main(int argc, char **argv)
{
	fixture_sink = listed_helper(unlisted_work(fixture_seconds(argc, argv, 1, 0.5)));
	printf("partial_aranges: done\n");
	return 0;
}

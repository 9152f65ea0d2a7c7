/* SPDX-License-Identifier: MIT */
/* Started by fork_exec through execl: runs child_work. */
#include <stdio.h>

#include "fixture.h"

NOINLINE static double child_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 0.9999999 + 0.25;
	return x;
}

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.8), x = 1;

	while (fixture_cpu_left(end))
		x = child_work(x);
	fixture_sink = x;
	printf("exec_child: done\n");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Killed by SIGTERM while it exits: main works for SECONDS of CPU time in work_then_exit
 * and returns 0; the destructor of its library (late_signal_lib.c) then raises SIGTERM,
 * which ends the process.
 *
 * usage: late_signal [SECONDS]
 */
#include <stdio.h>

#include "fixture.h"

void late_signal_arm(void);

static NOINLINE void work_then_exit(double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	while (fixture_cpu_now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
	fixture_sink = x;
}

int main(int argc, char **argv)
{
	late_signal_arm();
	work_then_exit(fixture_seconds(argc, argv, 1, 0.3));
	printf("main returns\n");
	fflush(stdout); /* the signal comes before exit() would flush it */
	return 0;
}

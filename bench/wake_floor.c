/* SPDX-License-Identifier: MIT */
/* The CPU time a thread spends only to wake up HZ times a second for SECONDS (the floor
 * under any periodic sampler on this machine). Prints "wake_floor_percent=X".
 * Usage: wake_floor HZ SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	double hz = argc > 1 ? atof(argv[1]) : 50, seconds = argc > 2 ? atof(argv[2]) : 3;
	long n = (long)(hz * seconds), period = (long)(1e9 / hz);
	struct timespec ts = { period / 1000000000, period % 1000000000 }, cpu;

	for (long i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	printf("wake_floor_percent=%.3f\n",
	       100.0 * ((double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9) / seconds);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The cost of a user region: N pairs of syscope_region_begin/syscope_region_end (declared
 * weak, as the header recommends for programs that also run without syscope), timed by the
 * program itself. Without syscope the functions do not resolve and each call is a test of
 * a null pointer; under syscope each pair is two records.
 *
 * Usage: user_regions [N]; prints "pairs=N ns_per_pair=X".
 */
#define SYSCOPE_WEAK
#include <stdio.h>
#include <stdlib.h>
#include <syscope/syscope.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		if (syscope_region_begin)
			syscope_region_begin("step");
		if (syscope_region_end)
			syscope_region_end();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("pairs=%ld ns_per_pair=%.2f\n", n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       (double)n);
	return 0;
}

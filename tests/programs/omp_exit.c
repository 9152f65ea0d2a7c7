/* SPDX-License-Identifier: MIT */
/*
 * OpenMP regions still open when the process ends (test_omp_cost.py): three parallel regions of
 * two threads, each with a barrier, then a region of one thread that ends the process from
 * inside, with exit(3) or, given "abort", abort().
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int abort_inside = argc > 1 && !strcmp(argv[1], "abort");
	int members = 0;

	for (int i = 0; i < 3; i++) {
#pragma omp parallel num_threads(2) reduction(+ : members)
		{
			members++;
#pragma omp barrier
		}
	}
	printf("members %d\n", members);
	fflush(stdout);
#pragma omp parallel num_threads(1)
	{
		if (abort_inside)
			abort();
		exit(3);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * OpenMP regions whose ends are not ordinary (test_omp_cost.py). By default, or given "abort":
 * three parallel regions of two threads, each with a barrier, then a region of one thread
 * that ends the process from inside, with exit(3) or abort(). Given "long": one region of
 * two threads with 3000 barriers in it, which outlasts several of each thread's recording
 * chunks.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_BARRIERS 3000

static int long_region(void)
{
	int members = 0;

#pragma omp parallel num_threads(2) reduction(+ : members)
	{
		members++;
		for (int i = 0; i < LONG_BARRIERS; i++) {
#pragma omp barrier
		}
	}
	printf("members %d barriers %d\n", members, LONG_BARRIERS);
	return 0;
}

int main(int argc, char **argv)
{
	int abort_inside = argc > 1 && !strcmp(argv[1], "abort");
	int members = 0;

	if (argc > 1 && !strcmp(argv[1], "long"))
		return long_region();
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

/* SPDX-License-Identifier: MIT */
/*
 * OpenMP regions whose ends are not ordinary (test_omp_cost.py). By default, or given "abort":
 * three parallel regions of two threads, each with a barrier, then a region of one thread
 * that ends the process from inside, with exit(3) or abort(). Given "long": one region of
 * two threads with 3000 barriers in it, which outlasts several of each thread's recording
 * chunks. Given "flush": one region of two threads; the second enters and leaves a critical
 * section over and over while the first ends the process with exit(0) once the second has
 * done FLUSH_WARMUP of them, so that regions end while syscope writes out every thread's
 * records at the exit (FLUSH_MAX bounds the loop should the exit wait for the second).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_BARRIERS 3000
#define FLUSH_WARMUP 20000
#define FLUSH_MAX 5000000

static long criticals;

static int flush_at_exit(void)
{
#pragma omp parallel num_threads(2)
	{
		if (omp_get_thread_num() == 1) {
			for (long i = 0; i < FLUSH_MAX; i++) {
#pragma omp critical
				__atomic_fetch_add(&criticals, 1, __ATOMIC_RELAXED);
			}
		} else {
			while (__atomic_load_n(&criticals, __ATOMIC_RELAXED) < FLUSH_WARMUP)
				;
			printf("flush after %d\n", FLUSH_WARMUP);
			fflush(stdout);
			exit(0);
		}
	}
	return 1;
}

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
	if (argc > 1 && !strcmp(argv[1], "flush"))
		return flush_at_exit();
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

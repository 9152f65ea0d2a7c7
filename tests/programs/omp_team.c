/* SPDX-License-Identifier: MIT */
/*
 * OpenMP with known counts, built with gcc -fopenmp (libgomp) and clang -fopenmp (libomp):
 * ROUNDS parallel regions of TEAM threads, each with one explicit barrier; one dynamic loop
 * of ITERATIONS (nowait); one region where a single thread creates TASKS explicit tasks and
 * waits for them; one region where every member enters a critical section once and takes a
 * lock once. The answers
 * are printed, so a test sees that tracing changed nothing.
 */
#include <omp.h>
#include <stdio.h>

#include "fixture.h"

#define TEAM 4
#define ROUNDS 3
#define ITERATIONS 1000
#define TASKS 8

static NOINLINE double work(int n)
{
	double x = 0;

	for (int i = 0; i < n; i++)
		x += (double)(i % 7) * 0.5;
	return x;
}

/* One thread makes the tasks, the team runs them, the maker waits for them all. */
static void make_tasks(int *tasks)
{
	for (int t = 0; t < TASKS; t++) {
#pragma omp task shared(tasks)
		{
			fixture_sink = work(2000);
#pragma omp atomic
			(*tasks)++;
		}
	}
#pragma omp taskwait
}

int main(void)
{
	int members = 0, iterations = 0, tasks = 0, critical = 0, locked = 0;
	omp_lock_t lock;

	omp_set_dynamic(0);
	for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel num_threads(TEAM) reduction(+ : members)
		{
			fixture_sink = work(1000 * (omp_get_thread_num() + 1));
#pragma omp barrier
			members++;
		}
	}
#pragma omp parallel num_threads(TEAM)
	{
#pragma omp for schedule(dynamic, 10) nowait reduction(+ : iterations)
		for (int i = 0; i < ITERATIONS; i++)
			iterations++;
	}
#pragma omp parallel num_threads(TEAM)
	{
#pragma omp single nowait
		make_tasks(&tasks);
	}
	omp_init_lock(&lock);
#pragma omp parallel num_threads(TEAM)
	{
#pragma omp critical
		critical++;
		omp_set_lock(&lock);
		locked++;
		omp_unset_lock(&lock);
	}
	omp_destroy_lock(&lock);
	printf("members %d iterations %d tasks %d critical %d locked %d\n", members, iterations,
	       tasks, critical, locked);
	return 0;
}

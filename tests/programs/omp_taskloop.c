/* SPDX-License-Identifier: MIT */
/* A taskloop of 100 iterations in 4 tasks, made by one member of a team of 2. */
#include <omp.h>
#include <stdio.h>

int main(void)
{
	long sum = 0;

	omp_set_dynamic(0);
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp taskloop reduction(+ : sum) num_tasks(4)
	for (int i = 0; i < 100; i++)
		sum += i;
	printf("taskloop %ld\n", sum);
	return 0;
}

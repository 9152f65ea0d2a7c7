/* SPDX-License-Identifier: MIT */
/*
 * Nested OpenMP teams: an outer team of 2 whose members each start an inner team of 2, with a
 * barrier in each inner team: 3 parallel regions, 6 implicit tasks, 4 explicit barriers.
 */
#include <omp.h>
#include <stdio.h>

int main(void)
{
	int n = 0;

	omp_set_dynamic(0);
	omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
	{
#pragma omp parallel num_threads(2)
		{
#pragma omp atomic
			n++;
#pragma omp barrier
		}
	}
	printf("inner members %d\n", n);
	return 0;
}
